"""Allocation-free loops on the compiled backend (Note [Scratch vectors] in
labrys.backends.numba_scratch; the ``neg`` case of Note [Nested accumulation]
in labrys.backends.numba_tangents): values against NumPy closed forms, the
removed allocations in the generated source, and the escape test on IR."""
from __future__ import annotations

import re

import numpy as np
import pytest

import labrys
from labrys.backends.numba_scratch import stays_inside
from labrys.ir import nodes as ir
from test_loop_code import _loops_allocate

# f(x, μ) = Σ_i Σ_k Σ_c c (x_ic − μ_kc)²: z = x_i − μ_k is read twice per element, so no fusion removes it
SRC = """
(def f Float ((x : Vec (Vec Float)) (mu : Vec (Vec Float)))
  (sumbuild (size x) (lam (i : Integer) (sumbuild (size mu) (lam (k : Integer)
    (let (z (sub (index i x) (index k mu)))
      (sumbuild (size z) (lam (c : Integer) (mul (to_float c) (mul (index c z) (index c z)))))))))))
"""
X = np.arange(12.0).reshape(4, 3) / 5
MU = np.linspace(-1, 1, 6).reshape(2, 3)
C = np.arange(3.0)
Z = X[:, None, :] - MU[None, :, :]                      # (i, k, c)


def _allocates_per_iteration(source: str) -> bool:
    """An array made inside a loop, other than a scratch buffer's growth (made when a size changes)."""
    return _loops_allocate("\n".join(line for line in source.splitlines()
                                     if not re.fullmatch(r"\s*_scr\d+ = _np\.empty\([^()]*\)", line)))


def test_a_vector_made_in_a_loop_reuses_one_buffer():
    m = labrys.load(SRC, backend="compiled")
    assert m.f(X, MU) == pytest.approx(float(np.sum(C * Z ** 2)), rel=1e-14)
    source = m.backend.sources["f"]
    assert "_scr" in source and not _allocates_per_iteration(source)


def test_the_reverse_of_sub_subtracts_in_place():
    m = labrys.load(SRC, backend="compiled")
    d_mu = m.derive("rev", "f", wrt=("mu",))
    np.testing.assert_allclose(d_mu((X, MU), 1.0), np.sum(-2 * C * Z, axis=0), rtol=1e-13)
    source = m.backend.sources[str(d_mu.d.name)]
    assert " -= " in source and not _allocates_per_iteration(source)
    g_x, g_mu = m.derive("rev", "f")((X, MU), 2.0)   # both active: rz is used twice, no in-place rewrite
    np.testing.assert_allclose(g_x, 2 * np.sum(2 * C * Z, axis=1), rtol=1e-13)
    np.testing.assert_allclose(g_mu, 2 * np.sum(-2 * C * Z, axis=0), rtol=1e-13)


def test_a_vector_that_leaves_its_iteration_is_allocated():
    src = """
(def rows (Vec (Vec Float)) ((m : Vec (Vec Float)) (v : Vec Float))
  (build (size m) (lam (k : Integer) (let (z (sub (index k m) v)) z))))
(def pairs (Vec Float) ((m : Vec (Vec Float)) (v : Vec Float))
  (fold (lam (acc_x : Tuple (Vec Float) (Vec Float))
          (let (z (mul (get$2$2 acc_x) 2.0)) (add (get$1$2 acc_x) z)))
        v m))
"""
    mc, mi = labrys.load(src, backend="compiled"), labrys.load(src, backend="interp")
    m, v = np.arange(6.0).reshape(3, 2), np.array([0.5, -1.0])
    np.testing.assert_array_equal(mc.rows(m, v), m - v)
    np.testing.assert_array_equal(mc.pairs(m, v), v + 2 * m.sum(axis=0))
    np.testing.assert_array_equal(mc.pairs(m, v), np.asarray(mi.pairs(m, v), dtype=float))
    assert "_scr" not in mc.backend.sources["rows"]


def _body(src: str, name: str = "g") -> ir.Expr:
    m = labrys.load(src, backend="interp")
    d = m.checked.typed(next(x for x in m.program.decls if isinstance(x, ir.Def) and x.name == name))
    return d.body.body  # (let (z …) BODY)


HEAD = "(def g ({ret}) ((a : Vec Float) (b : Vec Float)) (let (z (sub a b)) {body}))"


@pytest.mark.parametrize("ret, body, inside", [
    ("Float", "(add (index 0 z) (to_float (size z)))", True),
    ("Float", "(sumbuild (size z) (lam (i : Integer) (mul (index i z) (index i a))))", True),
    ("Vec Float", "(ts_delta z 0 1.0)", True),
    ("Vec Float", "z", False),                                       # the result
    ("Tuple (Vec Float) Float", "(tuple z 1.0)", False),             # in a result tuple
    ("Vec Float", "(build 2 (lam (i : Integer) (index i z)))", True),
    ("Vec (Vec Float)", "(build 2 (lam (i : Integer) z))", False),   # a row of a build
    ("Vec Float", "(add z a)", False),                               # an operand of another vector operation
    ("Float", "(let (w z) (index 0 w))", False),                     # an alias
    ("Lam Integer Float", "(lam (i : Integer) (index i z))", False),  # captured by a function value
])
def test_the_escape_test(ret, body, inside):
    assert stays_inside("z", _body(HEAD.format(ret=ret, body=body))) is inside
