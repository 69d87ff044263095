"""Krawiec et al.'s dual-numbers forward mode on the compiled backend with vector inputs: dualZip
lays a vector's reals and tangents out as a struct of arrays (Note [Struct of arrays]), so nothing
falls back.  Expectations are Jacobian-vector products written by hand in NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import labrys

pytest.importorskip("numba")

SRC = """
(def norm2 Float (v : Vec Float) (sumbuild (size v) (lam (i : Integer) (mul (index i v) (index i v)))))
(def scaled (Vec Float) ((v : Vec Float) (a : Float)) (build (size v) (lam (i : Integer) (mul a (sin (index i v))))))
(def rowsums (Vec Float) (m : Vec (Vec Float))
  (build (size m) (lam (i : Integer) (let (r (index i m))
    (sumbuild (size r) (lam (j : Integer) (mul (index j r) (index j r))))))))
(def powsum Float ((v : Vec Float) (k : Integer) (ks : Vec Integer))
  (sumbuild (size v) (lam (i : Integer) (mul (to_float (index i ks)) (pow (index i v) k)))))
(def outer (Vec (Vec Float)) ((u : Vec Float) (w : Vec Float))
  (build (size u) (lam (i : Integer) (build (size w) (lam (j : Integer) (mul (index i u) (index j w)))))))
"""
RNG = np.random.default_rng(3)
V, DV = RNG.normal(size=5), RNG.normal(size=5)
M, DM = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))


@pytest.fixture(scope="module")
def m():
    return labrys.load(SRC, backend="compiled")


@pytest.mark.parametrize("name, args, expected", [
    ("norm2", (V, DV), 2 * V @ DV),
    ("scaled", ((V, 1.5), (DV, 0.25)), 1.5 * np.cos(V) * DV + 0.25 * np.sin(V)),
    ("rowsums", (M, DM), 2 * (M * DM).sum(axis=1)),
    ("powsum", ((V, 3, np.arange(5)), (DV, (), [(), (), (), (), ()])), (np.arange(5) * 3 * V**2) @ DV),
    ("outer", ((V, V[:3]), (DV, DV[:3])), np.outer(DV, V[:3]) + np.outer(V, DV[:3])),
])
def test_dualfwd_of_vectors_compiles_and_matches_numpy(m, name, args, expected) -> None:
    f = m.function(f"[dualfwd {name}]")
    got = f(*args)
    np.testing.assert_allclose(np.asarray(got, dtype=float), expected, rtol=1e-12, atol=1e-12)
    assert not m.backend.fallbacks, m.backend.fallbacks


def test_a_tangent_of_the_wrong_size_is_a_labrys_error(m) -> None:
    with pytest.raises(labrys.LabrysError, match="size|shape|differ|numbers"):
        m.function("[dualfwd norm2]")(V, DV[:3])
