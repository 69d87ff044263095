"""Deep programs of every shape (scripts/depth_curve.py) at 10^4: nested
lets, calls, ifs in tail and argument position, lambdas, tuples, tuple types
and additions load and run with the right answer — on the interpreter for
every shape, and on python and compiled for the shapes that used to be
quadratic there (docs/reliability.md has the curve up to 10^5).  The
quadratic steps themselves are checked by counting work, not by timing."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import labrys
from labrys.ir import traverse, types

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import depth_curve  # noqa: E402

N = 10_000


@pytest.mark.parametrize("shape", list(depth_curve.SHAPES))
def test_every_shape_on_interp(shape):
    text, arg, want = depth_curve.SHAPES[shape](N)
    assert labrys.load(text, backend="interp").f(arg) == want


@pytest.mark.parametrize("backend", ["python", "compiled"])
@pytest.mark.parametrize("shape", ["arg_ifs", "lambdas", "tuple_types"])
def test_formerly_quadratic_shapes(shape, backend):
    text, arg, want = depth_curve.SHAPES[shape](N)
    assert labrys.load(text, backend=backend).f(arg) == want


def _children_calls(monkeypatch, shape: str, n: int, backend: str) -> int:
    calls = [0]
    real = traverse.children

    def counting(e):
        calls[0] += 1
        return real(e)
    monkeypatch.setattr(traverse, "children", counting)
    text, arg, want = depth_curve.SHAPES[shape](n)
    assert labrys.load(text, backend=backend).f(arg) == want
    monkeypatch.setattr(traverse, "children", real)
    return calls[0]


@pytest.mark.parametrize("shape, backend", [("lambdas", "interp"), ("arg_ifs", "python"),
                                            ("lambdas", "python")])
def test_free_variable_work_is_linear(monkeypatch, shape, backend):
    """Free variables of nested lambdas and of outlined code were recomputed per
    node (O(n^2) node visits); one table per def makes it O(n)."""
    small = _children_calls(monkeypatch, shape, 500, backend)
    large = _children_calls(monkeypatch, shape, 2000, backend)
    assert large < 5 * small  # 4x the size: linear is 4x, quadratic 16x


def _type_parts_visited(monkeypatch, n: int) -> int:
    calls = [0]
    real = types._parts

    def counting(t):
        calls[0] += 1
        return real(t)
    monkeypatch.setattr(types, "_parts", counting)
    text, arg, want = depth_curve.SHAPES["tuple_types"](n)
    assert labrys.load(text, backend="compiled").f(arg) == want
    monkeypatch.setattr(types, "_parts", real)
    return calls[0]


def test_type_facts_on_compiled_are_linear(monkeypatch):
    """The compiled backend asks of every node's type whether it holds a function or
    a BOG; walking each type afresh was O(n^2) on an n-deep tuple type (10^4 deep:
    160 s).  With the answers memoised per def (Note [Type facts by identity]) the
    type parts visited grow with the depth."""
    small = _type_parts_visited(monkeypatch, 500)
    large = _type_parts_visited(monkeypatch, 2000)
    assert small > 500 and large < 4.5 * small  # 4x the depth: linear is 4x, quadratic 16x


def test_a_deep_type_prints_on_any_thread():
    """show_type joins its pieces once (a string per level copied O(n^2) characters, and
    recursed once per level: a RecursionError off the deep-stack worker)."""
    n = 100_000
    t = types.FLOAT
    for _ in range(n):
        t = types.TTuple((types.FLOAT, t))
    assert str(t) == "(Tuple Float " * n + "Float" + ")" * n
