"""Vectors of tuples at the compiled backend's derivation boundaries (ADBench hand's skinning
weights, ``Vec (Vec (Tuple Integer Float))``, and bone parents, ``Vec Integer``): dualfwd's
dualZip of them (Note [Zipping vectors of tuples] in labrys.ad.dual_io), deltarev1's Vec
Integer input and dualrev's nested input (Note [Nested struct of arrays]) compile, with no note
logged.  Expectations are written by hand; hand's dualfwd Jacobian is checked against the
Knossos forward-mode one and central finite differences."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys.adbench import program, read_hand
from labrys.adbench.hand import fd_check, hand_jacobian

pytest.importorskip("numba")

SRC = """
(def skin Float ((w : Vec (Vec (Tuple Integer Float))) (x : Vec Float))
  (sumbuild (size w) (lam (i : Integer) (let (row (index i w))
    (sumbuild (size row) (lam (j : Integer) (let (p (index j row))
       (mul (get$2$2 p) (index (get$1$2 p) x)))))))))
(def pairs Float ((w : Vec (Tuple Integer Float)) (x : Vec Float))
  (sumbuild (size w) (lam (i : Integer) (let (p (index i w))
       (mul (mul (get$2$2 p) (get$2$2 p)) (index (get$1$2 p) x))))))
(def weighted Float ((x : Vec Float) (ks : Vec Integer))
  (sumbuild (size x) (lam (i : Integer) (mul (to_float (index i ks)) (mul (index i x) (index i x))))))
"""
W = [[(0, 1.5), (2, 0.5)], [(1, 2.0)], []]          # ragged: rows of 2, 1 and 0 pairs
DW = [[((), 0.1), ((), 0.2)], [((), 0.3)], []]
X, DX = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
HAND = Path(__file__).resolve().parents[1] / "data" / "adbench" / "hand" / "test.txt"


@pytest.fixture(scope="module")
def m():
    return labrys.load(SRC, backend="compiled")


def notes(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "python backend" in r.getMessage()]


def test_dualfwd_of_a_ragged_vector_of_vectors_of_tuples(m, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="labrys"):
        got = m.function("[dualfwd skin]")((W, X), (DW, DX))
    assert not notes(caplog)
    # d/dt Σ w_ij x_k(ij) = Σ dw_ij x_k + w_ij dx_k
    expected = 0.1 * 1.0 + 0.2 * 3.0 + 0.3 * 2.0 + 1.5 * 0.5 + 0.5 * 2.0 + 2.0 * -1.0
    assert got == pytest.approx(expected, rel=1e-14)


def test_dualfwd_of_a_vector_of_tuples(m, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="labrys"):
        got = m.function("[dualfwd pairs]")((W[0], X), (DW[0], DX))
    assert not notes(caplog)
    expected = 2 * 1.5 * 0.1 * 1.0 + 2 * 0.5 * 0.2 * 3.0 + 1.5 ** 2 * 0.5 + 0.5 ** 2 * 2.0
    assert got == pytest.approx(expected, rel=1e-14)


def test_dualfwd_tangent_of_another_shape_is_a_labrys_error(m) -> None:
    with pytest.raises(labrys.LabrysError, match="size|shape|differ|numbers"):
        m.function("[dualfwd skin]")((W, X), ([[((), 0.1)], [((), 0.3)], []], DX))


def test_deltarev1_with_a_vector_of_integers(m, caplog) -> None:
    ks = np.array([1, 2, 3])
    with caplog.at_level(logging.INFO, logger="labrys"):
        dx, dks = m.derive("deltarev1", "weighted")((X, ks), 1.0)
    assert not notes(caplog)
    np.testing.assert_allclose(dx, 2 * ks * X, rtol=1e-14)
    assert list(dks) == [(), (), ()]


@pytest.mark.parametrize("method", ["dualrev", "dualrevtape"])
def test_dualrev_with_a_ragged_vector_of_vectors_of_tuples(m, caplog, method) -> None:
    with caplog.at_level(logging.INFO, logger="labrys"):
        dw, dx = m.derive(method, "skin")((W, X), 2.0)
    assert not notes(caplog)
    assert [[float(g[1]) for g in row] for row in dw] == [[2.0, 6.0], [4.0], []]  # 2·x_k(ij)
    np.testing.assert_allclose(dx, [3.0, 4.0, 1.0], rtol=1e-14)                    # 2·Σ w_ij at k


def test_hand_dualfwd_jacobian_compiles_whole(caplog) -> None:
    hand = read_hand(HAND)
    compiled = program("hand", backend="compiled")
    with caplog.at_level(logging.INFO, logger="labrys"):
        jac = hand_jacobian(compiled, hand, "dualfwd")
    assert not notes(caplog)
    fwd = hand_jacobian(program("hand", backend="python"), hand, "fwd")
    np.testing.assert_allclose(jac, fwd, rtol=1e-12, atol=1e-13)
    assert fd_check(compiled, hand, jac) < 1e-6


CUBE = """
(def cube Float (t : Vec (Vec (Vec Float)))
  (sumbuild (size t) (lam (i : Integer) (let (m (index i t))
    (sumbuild (size m) (lam (j : Integer) (let (r (index j m))
       (sumbuild (size r) (lam (k : Integer) (mul (to_float (add i 1)) (mul (index k r) (index k r))))))))))))
"""


@pytest.mark.parametrize("method", ["dualrev1", "dualrev3"])
def test_staged_dualrev_with_nested_inputs(m, caplog, method) -> None:
    """Note [Staged duals of nested vectors of tuples]: a ragged ``Vec (Vec (Tuple Integer Float))``
    and a ``Vec (Vec (Vec Float))`` (ADBench hand's weights and base relatives) as inputs."""
    c = labrys.load(CUBE, backend="compiled")
    t = np.arange(12.0).reshape(2, 3, 2)
    with caplog.at_level(logging.INFO, logger="labrys"):
        dw, dx = m.derive(method, "skin")((W, X), 2.0)
        dt = c.derive(method, "cube")(t, 1.0)
    assert not notes(caplog)
    assert [[float(g[1]) for g in row] for row in dw] == [[2.0, 6.0], [4.0], []]
    np.testing.assert_allclose(dx, [3.0, 4.0, 1.0], rtol=1e-14)
    np.testing.assert_allclose(np.asarray(dt, dtype=float), 2 * t * np.array([1.0, 2.0])[:, None, None], rtol=1e-14)
