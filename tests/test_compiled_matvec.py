"""Matrix-vector primitives compile (the Knossos corpus's matvec_tensor2.ks and matvec_vecvec.ks
ran on python): ``mul`` of a matrix (Tensor 2 Float or a Vec (Vec Float)) and a vector,
``mul$Mat$Vec``, ``matvec_T`` and ``outer`` are loops of the compiled backend's run time
(``_matvec``, ``_matvec_t``, ``_outer``).  Each test asserts no fallback note and compares with
NumPy's closed form (m @ v, mᵀ r, u vᵀ)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import labrys

SRC = """
(def mv (Vec Float) ((m : Tensor 2 Float) (v : Vec Float)) (mul m v))
(def mvv (Vec Float) ((m : Vec (Vec Float)) (v : Vec Float)) (mul m v))
(def mvk (Vec Float) ((m : Vec (Vec Float)) (v : Vec Float)) (mul$Mat$Vec m v))
(def mvt (Vec Float) ((m : Vec (Vec Float)) (r : Vec Float)) (matvec_T m r))
(def out (Tensor 2 Float) ((u : Vec Float) (v : Vec Float)) (outer u v))
(def f Float ((m : Tensor 2 Float) (v : Vec Float)) (let (y (mul m v)) (sum (mul y y))))
(def g Float ((m : Vec (Vec Float)) (v : Vec Float)) (let (y (mul m v)) (sum (mul y y))))
"""
M = np.array([[1.0, 0.5, -0.25], [0.0, 2.0, 1.0]])
V = np.array([0.3, -1.2, 0.8])
R = np.array([2.0, -1.0])


@pytest.fixture(scope="module")
def compiled():
    return labrys.load(SRC, backend="compiled")


def no_note(caplog) -> None:
    assert not [r for r in caplog.records if "python backend" in r.getMessage()]


def test_matrix_vector_primitives_compile(compiled, caplog):
    rows = [list(r) for r in M]
    with caplog.at_level(logging.INFO, logger="labrys"):
        got = [compiled.mv(M, V), compiled.mvv(rows, V), compiled.mvk(rows, V), compiled.mvt(rows, R),
               compiled.out(V, R)]
    no_note(caplog)
    assert compiled.backend.fallbacks == {}
    for g, want in zip(got, [M @ V, M @ V, M @ V, M.T @ R, np.outer(V, R)]):
        assert np.allclose(g, want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("fn", ["f", "g"])
def test_rev_and_fwd_of_a_matrix_vector_product_compile(compiled, fn, caplog):
    """f(m, v) = |m v|²: ∂/∂m = 2 (m v) vᵀ, ∂/∂v = 2 mᵀ (m v) (hand-derived)."""
    m = M if fn == "f" else [list(r) for r in M]
    with caplog.at_level(logging.INFO, logger="labrys"):
        dm, dv = compiled.derive("rev", fn)((m, V), 1.0)
        tangent = compiled.derive("fwd", fn)((m, V), (np.ones_like(M) if fn == "f" else [np.ones(3)] * 2,
                                                      np.ones(3)))
    no_note(caplog)
    y = M @ V
    assert np.allclose(np.array(dm, dtype=float), 2 * np.outer(y, V), rtol=1e-13)
    assert np.allclose(dv, 2 * M.T @ y, rtol=1e-13)
    assert np.isclose(tangent, np.sum(2 * np.outer(y, V)) + np.sum(2 * M.T @ y), rtol=1e-13)


def test_a_size_mismatch_is_the_interpreters_error(compiled):
    with pytest.raises(labrys.LabrysError):
        compiled.mv(M, np.ones(2))
