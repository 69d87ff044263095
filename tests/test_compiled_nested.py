"""Nested vectors of tuples cross the compiled boundary, ragged or rectangular (Note [Nested
struct of arrays] in labrys.backends.numba_nested): each program gives hand-computed values
on all three backends, results come back as the same Python values, and compiled code runs
it with no fallback note.  ADBench hand's skinning weights are such a vector."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys import LabrysError
from labrys.adbench import program, read_hand
from labrys.adbench.hand import hand_jacobian, hand_residuals
from labrys.values import Inj

BACKENDS = ["interp", "python", "compiled"]
backends = pytest.mark.parametrize("backend", BACKENDS)
HAND = Path(__file__).resolve().parents[1] / "data" / "adbench" / "hand" / "test.txt"

SRC = """
(def wsum (Vec Float) ((w : Vec (Vec (Tuple Integer Float))) (x : Vec Float))
  (build (size w) (lam (i : Integer)
    (let ((row (index i w)))
      (sumbuild (size row) (lam (k : Integer) (let ((b c) (index k row)) (mul c (index b x)))))))))
(def rescale (Vec (Vec (Tuple Integer Float))) ((w : Vec (Vec (Tuple Integer Float))) (s : Float))
  (build (size w) (lam (i : Integer) (let ((row (index i w)))
    (build (size row) (lam (k : Integer) (let ((b c) (index k row)) (tuple (add b i) (mul s c)))))))))
(def row_of (Vec (Tuple Integer Float)) ((w : Vec (Vec (Tuple Integer Float))) (i : Integer)) (index i w))
(def tri (Vec (Vec (Tuple Float Integer))) (n : Integer)
  (build n (lam (i : Integer) (build i (lam (k : Integer) (tuple (to_float (mul i k)) (sub i k)))))))
(def cube (Vec (Vec (Vec (Tuple Integer Float Bool)))) (n : Integer)
  (build n (lam (i : Integer) (build i (lam (j : Integer) (build (add j 1) (lam (k : Integer)
    (tuple (add i k) (to_float (mul j k)) (lt k j)))))))))
(def pick (Vec (Vec (Tuple Integer Float Bool)))
     ((c : Vec (Vec (Vec (Tuple Integer Float Bool)))) (j : Integer)) (index j c))
(def total Float (c : Vec (Vec (Vec (Tuple Integer Float Bool))))
  (sumbuild (size c) (lam (i : Integer) (let ((m (index i c)))
    (sumbuild (size m) (lam (j : Integer) (let ((r (index j m)))
      (sumbuild (size r) (lam (k : Integer)
        (let ((a b f) (index k r)) (if f (add (to_float a) b) 0.0)))))))))))
"""

W = [[(0, 0.5), (2, 0.25)], [], [(1, 2.0)], [(0, 1.0), (1, 1.0), (2, 1.0)]]  # ragged, an empty row
X = np.array([1.0, 10.0, 100.0])


@pytest.fixture(scope="module", params=BACKENDS)
def nested(request):
    return labrys.load(SRC, backend=request.param)


def no_fallback(m: labrys.Module) -> None:
    if m.backend.name == "compiled":
        assert m.backend.fallbacks == {}


def test_a_ragged_argument_with_an_empty_row(nested):
    got = nested.wsum(W, X)
    assert isinstance(got, np.ndarray) and got.shape == (4,)
    assert list(got) == [0.5 * 1 + 0.25 * 100, 0.0, 2.0 * 10, 111.0]
    no_fallback(nested)


def test_a_rectangular_argument_and_a_nested_result(nested):
    rect = [[(k, float(i + k)) for k in range(3)] for i in range(5)]
    assert list(nested.wsum(rect, X)) == [sum((i + k) * X[k] for k in range(3)) for i in range(5)]
    assert nested.rescale(W, 2.0) == [[(0, 1.0), (2, 0.5)], [], [(3, 4.0)], [(3, 2.0), (4, 2.0), (5, 2.0)]]
    assert nested.rescale([], 2.0) == []
    assert nested.row_of(W, 3) == [(0, 1.0), (1, 1.0), (2, 1.0)] and nested.row_of(W, 1) == []
    no_fallback(nested)


def test_a_ragged_build_grows_its_columns(nested):
    """Rows of lengths 0 … n − 1: the compiled build reallocates its columns as it goes."""
    n = 40
    assert nested.tri(n) == [[(float(i * k), i - k) for k in range(i)] for i in range(n)]
    no_fallback(nested)


def test_three_deep_with_a_bool_column(nested):
    """cube n: element i has i rows, row j has j + 1 tuples (i + k, j·k, k < j)."""
    want = [[[(i + k, float(j * k), k < j) for k in range(j + 1)] for j in range(i)] for i in range(4)]
    c = nested.cube(4)
    assert c == want
    assert nested.pick(c, 3) == want[3] and nested.pick(c, 0) == []
    # Σ (i + k) + j·k over k < j: (2,1,0) 2; (3,1,0) 3; (3,2,0) 3; (3,2,1) 4 + 2
    assert nested.total(c) == 14.0
    assert nested.total(want) == 14.0
    no_fallback(nested)


@backends
def test_a_float_in_an_integer_column_is_a_user_error(backend):
    m = labrys.load(SRC, backend=backend)
    with pytest.raises(LabrysError):
        m.wsum([[(0.5, 1.0)]], X)
    with pytest.raises(LabrysError):
        m.wsum([[(0, 1.0, 2.0)]], X)


@pytest.fixture(scope="module")
def hand():
    return read_hand(HAND)


@pytest.mark.parametrize("derivation", ["fwd"])
def test_hand_runs_compiled_and_agrees_with_python(hand, derivation, caplog):
    """hand_objective and its forward derivative compile (the skinning weights are ragged:
    1 to 4 pairs per vertex) and give python's residuals and Jacobian."""
    compiled, python = program("hand", backend="compiled"), program("hand", backend="python")
    with caplog.at_level("INFO", logger="labrys"):
        r, j = hand_residuals(compiled, hand), hand_jacobian(compiled, hand, derivation)
    assert not [x for x in caplog.records if "python backend" in x.getMessage()]
    assert compiled.backend.fallbacks == {}
    assert np.allclose(r, hand_residuals(python, hand), rtol=1e-13, atol=1e-14)
    assert np.allclose(j, hand_jacobian(python, hand, derivation), rtol=1e-12, atol=1e-13)
    # a central difference in θ_0 (the global rotation's first angle)
    h, theta = 1e-6, hand.theta.copy()
    up, down = theta.copy(), theta.copy()
    up[0] += h
    down[0] -= h
    fd = (hand_residuals(compiled, hand, up) - hand_residuals(compiled, hand, down)) / (2 * h)
    assert np.allclose(j[:, 0], fd, rtol=1e-6, atol=1e-7)


# --- a fold whose state is a nested vector of dual numbers (dualrevtape, deltarev of LSTM) ----------

POWERS = """
(def times (Vec (Vec Float)) ((a : Vec (Vec Float)) (m : Vec (Vec Float)))
  (build (size a) (lam (i : Integer) (let ((r (index i a)) (s (index i m)))
    (build (size r) (lam (c : Integer) (mul (index c r) (index c s))))))))
(def powers Float ((m : Vec (Vec Float)) (k : Vec Integer))
  (let ((p (fold (lam (acc_j : Tuple (Vec (Vec Float)) Integer) (let ((acc j) acc_j) (times acc m))) m k)))
    (sumbuild (size p) (lam (i : Integer) (sum (index i p))))))
"""


@pytest.mark.parametrize("derivation", ["dualrevtape", "deltarev"])
def test_a_fold_over_a_nested_dual_state_compiles(derivation, caplog):
    """powers m k = Σ_ij m_ij^(K+1), K = size k: ∂/∂m_ij = (K + 1) m_ij^K.  The fold's state is the
    dual of a matrix, a nested struct of arrays (Vec (Vec (Tuple Float Integer)) for dualrevtape)."""
    m = labrys.load(POWERS, backend="compiled")
    x, k = np.array([[0.5, -1.5, 2.0], [1.25, 0.75, -0.5]]), [3, 1, 4]
    with caplog.at_level("INFO", logger="labrys"):
        gm, gk = m.derive(derivation, "powers")((x, k), 1.0)
    assert np.allclose(gm, 4 * x ** 3, rtol=1e-13, atol=0)
    assert len(gk) == 3
    assert m.backend.fallbacks == {}
    assert not [r for r in caplog.records if "python backend" in r.getMessage()]


SKIN = """
(def skin (Vec (Vec Float)) ((w : Vec (Vec (Tuple Integer Float))) (x : Vec Float))
  (build (size w) (lam (i : Integer) (let ((row (index i w)))
    (build 2 (lam (c : Integer)
      (sumbuild (size row) (lam (k : Integer)
        (let ((b s) (index k row)) (mul (mul s (to_float (add c 1))) (index b x)))))))))))
"""


@pytest.mark.parametrize("derivation", ["dualrevtape", "deltarev"])
def test_a_ragged_input_of_tuples_and_a_matrix_output_on_the_tape(derivation):
    """skin w x [i][c] = (c + 1) Σ_k s_ik x_(b_ik): with cotangent D, ∂/∂s_ik = Σ_c D_ic (c + 1) x_(b_ik)
    and ∂/∂x_j = Σ_ic D_ic (c + 1) Σ_(k: b_ik = j) s_ik; the Integer b_ik has a unit tangent."""
    m = labrys.load(SKIN, backend="compiled")
    dt = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0], [-1.0, 0.25]])
    gw, gx = m.derive(derivation, "skin")((W, X), dt)
    scale = dt @ np.array([1.0, 2.0])  # Σ_c D_ic (c + 1)
    assert [[u for u, _ in row] for row in gw] == [[() for _ in row] for row in W]
    assert [[g for _, g in row] for row in gw] == \
        [[pytest.approx(scale[i] * X[b], rel=1e-14) for b, _ in row] for i, row in enumerate(W)]
    want_x = np.zeros(3)
    for i, row in enumerate(W):
        for b, s in row:
            want_x[b] += scale[i] * s
    assert np.allclose(gx, want_x, rtol=1e-14, atol=0)
    assert m.backend.fallbacks == {}


SUMS = """
(def pick Float (s : Sum (Vec (Vec (Tuple Integer Float))) Float)
  (case s ((inl w) (sumbuild (size w) (lam (i : Integer) (let ((row (index i w)))
                     (sumbuild (size row) (lam (k : Integer) (let ((b c) (index k row)) (mul (to_float b) c))))))))
          ((inr x) x)))
"""


@backends
def test_a_nested_vector_of_tuples_in_a_sum(backend):
    """The absent side of a sum holds an empty nested struct of arrays (Note [Compiled sums])."""
    m = labrys.load(SUMS, backend=backend)
    assert m.pick(Inj(True, [[(1, 2.0)], [], [(3, 0.5), (2, 1.0)]])) == 1 * 2.0 + 3 * 0.5 + 2 * 1.0
    assert m.pick(Inj(False, 4.0)) == 4.0
    no_fallback(m)
