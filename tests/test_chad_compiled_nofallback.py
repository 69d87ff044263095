"""CHAD on the compiled backend without fallbacks, case by case: each case once printed a
note under ``LABRYS_VERBOSE=1`` (or, for the first, failed); each test asserts that no
note is logged on the ``labrys`` logger and that the compiled result equals an
independent expectation (hand-computed, NumPy, or another algorithm)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import labrys
from labrys.ad.chad_lower import runtime_left


def _notes(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if "python backend" in r.getMessage() or "lowering left" in r.getMessage()
            or "could not be loaded" in r.getMessage()]


# A closure capturing a vector of vectors of tuples: chadfwd's linear map captures ``w``, so the
# closure heap holds a nested struct of arrays.  Its heap type used to be written as
# Array(float64, None), which Numba formatted with %d: a TypeError on the first call that became
# "labrys: error: %d format: a real number is required, not NoneType" (ADBench hand, chadfwd).
CAPTURED_NEST = """
(def f Float ((w : Vec (Vec (Tuple Integer Float))) (x : Float))
  (sumbuild (size w) (lam (i : Integer)
    (let (row (index i w))
      (sumbuild (size row) (lam (j : Integer)
        (let (p (index j row))
          (mul (sin (mul x (get$2$2 p))) (to_float (get$1$2 p))))))))))
"""


def test_chadfwd_closure_capturing_nested_vectors_of_tuples(caplog):
    w = [[(1, 0.5), (2, 1.5)], [(3, 2.0)]]
    dw = [[((), 0.0), ((), 0.0)], [((), 0.0)]]
    m = labrys.load(CAPTURED_NEST, backend="compiled")
    with caplog.at_level(logging.INFO, logger="labrys"):
        got = m.derive("chadfwd", "f")(((w, 0.3), (dw, 1.0)))
    assert _notes(caplog) == []
    # d/dx Σ b sin(x a) = Σ b a cos(x a), by hand
    want = sum(b * a * np.cos(0.3 * a) for b, a in [(1, 0.5), (2, 1.5), (3, 2.0)])
    assert got == pytest.approx(want, rel=1e-13)


# chadPlus at vectors of tuples whose Integer fields have unit cotangents, and at a vector of
# vectors of such tuples: lowered (it used to keep the dynamic run time, 'chadPlus … has no
# first-order lowering').  The compiled backend still sends this def to python, for its one-hots
# into a vector of tuples (ts_delta; docs/backends.md), so only the lowering note is checked here.
RECORDS = """
(def f Float ((v : Vec (Tuple Float Integer)) (w : Vec (Vec (Tuple Integer Float))))
  (let ((s (sumbuild (size v) (lam (i : Integer) (mul (get$1$2 (index i v)) (to_float (get$2$2 (index i v)))))))
        (q (sumbuild (size v) (lam (i : Integer) (mul (get$1$2 (index i v)) (get$1$2 (index i v))))))
        (r (sumbuild (size w) (lam (i : Integer)
             (sumbuild (size (index i w)) (lam (j : Integer) (get$2$2 (index j (index i w)))))))))
    (mul (mul s q) (mul r r))))
"""


def test_chadrev_plus_of_vectors_of_records(caplog):
    a, b = np.array([0.5, -1.5, 2.0]), np.array([2, 3, -1])
    v = [(float(x), int(y)) for x, y in zip(a, b)]
    w = [[(1, 0.25), (2, 1.0)], [(0, -0.5)]]
    m = labrys.load(RECORDS, backend="compiled")
    with caplog.at_level(logging.INFO, logger="labrys"):
        d = m.derive("chadrev", "f")
        dv, dw = d(((v, w), 1.0))
    assert [n for n in _notes(caplog) if "lowering left" in n] == []
    assert all(runtime_left(x.body) is None for x in (d.d, *d.support))
    # f = s q r², s = Σ a b, q = Σ a², r = Σ w.2: by hand
    s, q, r = float(a @ b), float(a @ a), 0.75
    np.testing.assert_allclose([x for x, _ in dv], (b * q + s * 2 * a) * r * r, rtol=1e-13)
    assert [[u for _, u in row] for row in dw] == [[pytest.approx(2 * s * q * r)] * 2, [pytest.approx(2 * s * q * r)]]
    assert [[k for k, _ in row] for row in dw] == [[(), ()], [()]]


# A zero in one branch of an if whose other branch is itself an if (ADBench hand's
# bone_angles): shaped like that if's branches, so [chadR bone_angles] is lowered.
BONES = """
(def bone_angles (Tuple Float Float) ((theta : Vec Float) (b : Integer))
  (let ((f (div (sub b 1) 4))
        (k (sub (sub b 1) (mul 4 f))))
    (if (or (eq b 0) (or (eq b 21) (eq k 0)))
        (tuple 0.0 0.0)
        (if (eq k 1)
            (tuple (index (add 6 (mul 4 f)) theta) (index (add 7 (mul 4 f)) theta))
            (tuple (index (add 6 (add (mul 4 f) k)) theta) 0.0)))))
"""


@pytest.mark.parametrize("bone, rows", [(0, {}), (2, {6: 1.0, 7: 2.0}), (3, {8: 1.0})])
def test_chadrev_zero_shaped_by_a_nested_if(caplog, bone, rows):
    theta = np.linspace(0.1, 2.6, 26)
    m = labrys.load(BONES, backend="compiled")
    with caplog.at_level(logging.INFO, logger="labrys"):
        d = m.derive("chadrev", "bone_angles")
        got, unit = d(((theta, bone), (1.0, 2.0)))
    assert _notes(caplog) == []
    want = np.zeros(26)  # by hand: b = 2 reads theta[6], theta[7]; b = 3 (k = 2) reads theta[8]
    for i, x in rows.items():
        want[i] = x
    np.testing.assert_array_equal(got, want)
    assert unit == ()


# The tangent primitives of tuples with a Vec Integer leaf (its tangent a Vec (Tuple)): the
# lowered hand chadrev's ts_zero of its context (Tuple (Tuple (Tuple) (Vec Integer)) …).
UNITS = """
(def z (Tuple (Tuple (Tuple) (Vec (Tuple))) (Vec Float)) ((p : Tuple (Tuple (Tuple) (Vec Integer)) (Vec Float)))
  (ts_zero p))
(def a (Tuple (Tuple (Tuple) (Vec (Tuple))) (Vec Float))
       ((p : Tuple (Tuple (Tuple) (Vec (Tuple))) (Vec Float)) (q : Tuple (Tuple (Tuple) (Vec (Tuple))) (Vec Float)))
  (ts_add p q))
"""


def test_unit_leaves_in_tangent_tuples_compile(caplog):
    m = labrys.load(UNITS, backend="compiled")
    with caplog.at_level(logging.INFO, logger="labrys"):
        zero = m.z((((), np.array([4, 5, 6])), np.array([1.0, 2.0])))
        total = m.a((((), [(), ()]), np.array([1.0, 2.0])), (((), [(), ()]), np.array([3.0, 4.0])))
    assert _notes(caplog) == []
    assert zero[0] == ((), [(), (), ()])
    np.testing.assert_array_equal(zero[1], [0.0, 0.0])
    assert total[0] == ((), [(), ()])
    np.testing.assert_array_equal(total[1], [4.0, 6.0])
    with pytest.raises(labrys.LabrysError, match="sizes differ"):
        m.a((((), [(), ()]), np.array([1.0, 2.0])), (((), [()]), np.array([3.0, 4.0])))


def test_hand_chadfwd_compiles_and_matches_fwd(caplog):
    """ADBench hand's chadfwd Jacobian on compiled (it used to fail with the heap's TypeError): no
    note, equal to Knossos fwd's Jacobian (another algorithm) and to central finite differences."""
    from pathlib import Path

    from labrys.adbench import program, read_hand
    from labrys.adbench.hand import fd_check, hand_jacobian
    data = read_hand(Path(__file__).resolve().parents[1] / "data" / "adbench" / "hand" / "test.txt")
    compiled = program("hand", backend="compiled")
    with caplog.at_level(logging.INFO, logger="labrys"):
        jac = hand_jacobian(compiled, data, "chadfwd")
    assert _notes(caplog) == []
    assert jac.shape == (3 * data.points.shape[0], data.theta.size)
    np.testing.assert_allclose(jac, hand_jacobian(compiled, data, "fwd"), rtol=1e-12, atol=1e-13)
    assert fd_check(compiled, data, jac) < 1e-6
