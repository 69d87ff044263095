"""Elementwise chains on vectors fused into loops (labrys.opt.elementwise, Note [Fusing
elementwise chains]) and let-bound zeros absorbed by ts_add (labrys.opt.simplify, Note
[Let-bound zeros]).  IR before and after; values against NumPy's closed forms and
finite differences; the fused code against the unfused (bit for bit); the allocations
removed against the generated source; a size mismatch against the interpreter."""
from __future__ import annotations

import re

import numpy as np
import pytest

import labrys
import labrys.backends.numba_source as numba_source
from labrys.ir import nodes as ir
from labrys.ir.traverse import nodes
from labrys.opt.elementwise import VEC_FLOAT, fuse_elementwise
from labrys.opt.simplify import simplify
from labrys.types.checker import check_def

SRC = """
(def gate (Vec Float) ((w : Vec Float) (b : Vec Float) (h : Vec Float) (c : Vec Float))
  (let ((s (div 1.0 (add 1.0 (exp (neg (add (mul h w) b))))))
        (t (tanh c)))
    (add (mul s t) (mul c t))))
(def loss Float ((w : Vec Float) (b : Vec Float) (h : Vec Float) (c : Vec Float))
  (sum (gate w b h c)))
(def one (Vec Float) ((x : Vec Float) (y : Vec Float)) (mul x y))
(def square (Vec Float) (x : Vec Float) (let (t (tanh x)) (mul t t)))
"""
RNG = np.random.default_rng(15)
W, B, H, C = (RNG.normal(size=7) for _ in range(4))


def gate(w, b, h, c):
    s = 1.0 / (1.0 + np.exp(-(h * w + b)))
    t = np.tanh(c)
    return s * t + c * t


def _def(m, name):
    return next(d for d in m.checked.defs.values() if str(d.name) == name)


def _vector_calls(d):
    return [x for x in nodes(d.body) if isinstance(x, ir.Call) and isinstance(x.func, str)
            and x.func in ("add", "mul", "div", "neg", "exp", "tanh") and x.type == VEC_FLOAT]


def _fused(m, name):
    return fuse_elementwise(_def(m, name), lambda d: check_def(d, m.checked.functions))


def test_a_chain_becomes_loops_and_an_isolated_operation_stays():
    m = labrys.load(SRC)
    before, after = _def(m, "gate"), _fused(m, "gate")
    assert len(_vector_calls(before)) == 10
    # s's chain (six operations) is one loop, which (mul s t) reads; t is read twice per element,
    # so it stays a vector, and (mul c t) counts over c, not over the loop's h: it stays too
    builds = [x for x in nodes(after.body) if isinstance(x, ir.Call) and x.func == "build"]
    assert len(builds) == 1 and sorted(x.func for x in _vector_calls(after)) == ["add", "mul", "tanh"]
    assert [x.func for x in _vector_calls(_fused(m, "one"))] == ["mul"]  # nothing to fuse: as it was
    assert sorted(x.func for x in _vector_calls(_fused(m, "square"))) == ["mul", "tanh"]  # t read twice


def test_values_agree_with_numpy_and_the_unfused_code_bit_for_bit(monkeypatch):
    fused = labrys.load(SRC, backend="compiled")
    got = fused.gate(W, B, H, C)
    np.testing.assert_allclose(got, gate(W, B, H, C), rtol=1e-14)
    grad = fused.derive("rev", "loss")((W, B, H, C), 1.0)
    monkeypatch.setattr(numba_source, "fuse_elementwise", lambda d, check: d)
    plain = labrys.load(SRC, backend="compiled")
    assert np.array_equal(plain.gate(W, B, H, C), got)
    for a, b in zip(plain.derive("rev", "loss")((W, B, H, C), 1.0), grad):
        assert np.array_equal(a, b)


def test_the_gradient_agrees_with_finite_differences():
    m = labrys.load(SRC, backend="compiled")
    grad = m.derive("rev", "loss")((W, B, H, C), 1.0)
    args = [W, B, H, C]
    for k in range(4):
        for j in range(7):
            up, down = [a.copy() for a in args], [a.copy() for a in args]
            up[k][j] += 1e-6
            down[k][j] -= 1e-6
            fd = (gate(*up).sum() - gate(*down).sum()) / 2e-6
            assert grad[k][j] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def _allocating_lines(source: str) -> int:
    """Statements of generated code that make a vector: NumPy array expressions and empty/zero arrays."""
    return sum(1 for line in source.splitlines() if re.search(r"_np\.(zeros|empty|full)\(|_shaped\(", line))


def test_fusion_removes_allocations_from_the_reverse_pass(monkeypatch):
    fused = labrys.load(SRC, backend="compiled")
    fused.derive("rev", "loss")((W, B, H, C), 1.0)
    monkeypatch.setattr(numba_source, "fuse_elementwise", lambda d, check: d)
    plain = labrys.load(SRC, backend="compiled")
    plain.derive("rev", "loss")((W, B, H, C), 1.0)
    a, b = (_allocating_lines(x.backend.sources["[rev loss]"]) for x in (fused, plain))
    assert b >= 20 and a <= b - 5, (a, b)  # 20 -> 15 vector-making statements here


def test_a_size_mismatch_is_still_an_error_with_a_position():
    m = labrys.load(SRC, backend="compiled")
    with pytest.raises(labrys.LabrysError) as e:
        m.gate(W, B, H[:5], C)
    assert ":" in str(e.value) and "error" in str(e.value)


def test_a_let_bound_zero_is_absorbed_by_ts_add():
    x = ir.Var("x", type=VEC_FLOAT)
    y = ir.Var("y", type=x.type)
    z = ir.Call("ts_zero", x, type=x.type)
    body = ir.Let("z", z, ir.Call("ts_add", ir.Tuple((ir.Var("z", type=x.type), y), type=None), type=x.type),
                  type=x.type)
    assert simplify(body) == y
    body = ir.Let("z", z, ir.Call("ts_add", ir.Tuple((y, ir.Var("z", type=x.type)), type=None), type=x.type),
                  type=x.type)
    assert simplify(body) == y
