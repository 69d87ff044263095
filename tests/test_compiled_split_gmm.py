"""Loops whose per-step BOG holds vectors, on the compiled backend (Note [Rows of
structs of arrays] in labrys.backends.numba_soa): vectors of tuples with Float-vector
components and with vector-of-tuples components (rows) are built and read in compiled
code, and ADBench GMM's [sufrev gmm_objective] compiles.  Expected values: NumPy,
and Knossos rev on the interpreter."""
from __future__ import annotations

import os

import numpy as np
import pytest

import labrys

NESTED = """
(def rows Float ((v : Vec Float) (m : Integer))
  (let (t (build (size v) (lam (i : Integer)
             (let (x (index i v))
               (tuple x
                      (build m (lam (j : Integer) (mul x (to_float j))))
                      (build m (lam (j : Integer) (tuple (to_float j) (add x (to_float j))))))))))
    (sumbuild (size t) (lam (i : Integer)
      (let ((a w r) (index i t))
        (add a (add (sum w) (sumbuild (size r) (lam (j : Integer)
                                                 (let ((p q) (index j r)) (mul p q)))))))))))
(def ragged Float (v : Vec Float)
  (let (t (build (size v) (lam (i : Integer)
             (tuple (index i v) (build (add i 1) (lam (j : Integer) (tuple (to_float j) (index i v))))))))
    (sumbuild (size t) (lam (i : Integer)
      (let ((a r) (index i t))
        (mul a (sumbuild (size r) (lam (j : Integer) (let ((p q) (index j r)) (add p q))))))))))
"""


def rows_numpy(v, m):
    j = np.arange(m, dtype=float)
    return sum(x + np.sum(x * j) + np.sum(j * (x + j)) for x in v)


def test_vectors_of_tuples_holding_vectors_compile():
    m = labrys.load(NESTED, backend="compiled")
    v = np.array([0.5, -1.0, 2.0, 3.5])
    assert m.rows(v, 3) == pytest.approx(rows_numpy(v, 3), rel=1e-14)
    assert m.rows(np.zeros(0), 3) == 0.0
    assert m.rows(v, 0) == pytest.approx(np.sum(v), rel=1e-14)
    assert not m.backend.fallbacks
    # rows of different lengths: the compiled build refuses them and the call re-runs on python
    expected = sum(x * sum(j + x for j in range(i + 1)) for i, x in enumerate(v))
    assert m.ragged(v) == pytest.approx(expected, rel=1e-14)


PICK = """
(def pick Float (v : Vec Float)
  (sumbuild (size v) (lam (i : Integer)
    (let (x (index i v))
      (if (gt x 0.0) (sumbuild 3 (lam (j : Integer) (mul x (mul x (to_float j))))) (sin x))))))
"""


def test_a_sum_whose_slot_holds_a_loops_bogs():
    """Per-step BOG (Sum (… Vec (Tuple …)) …): rows are written only where the slot is present
    (an absent slot's placeholder has no rows), so it compiles, with no re-run on python."""
    from labrys.backends.python import PythonBackend
    m = labrys.load(PICK, backend="compiled")
    v = np.array([0.5, -1.0, 2.0, -0.25])
    on_python = []
    original = PythonBackend.generate

    def spy(self, d):  # a call re-run on python (Note [Compiled fallback]) generates its python version
        on_python.append(d.name)
        return original(self, d)
    PythonBackend.generate = spy
    try:
        got = m.derive("sufrev", "pick")(v, 1.0)
        negative = m.derive("sufrev", "pick")(-np.abs(v), 1.0)
    finally:
        PythonBackend.generate = original
    # x > 0: Σ_j x² j = 3x², d/dx = 6x; else sin x, d/dx = cos x
    np.testing.assert_allclose(got, np.where(v > 0, 6 * v, np.cos(v)), rtol=1e-14)
    np.testing.assert_allclose(negative, np.cos(-np.abs(v)), rtol=1e-14)  # the slot never present
    assert not m.backend.fallbacks and on_python == []


@pytest.mark.skipif(not os.environ.get("LABRYS_SLOW"), reason="compiles GMM's split passes (about a minute "
                    "of Numba on a cold cache): LABRYS_SLOW=1")
def test_gmm_sufrev_compiles_and_equals_rev():
    from labrys.adbench import program, read_gmm
    from test_examples import ROOT
    args = read_gmm(ROOT / "data" / "adbench" / "gmm" / "test.txt").arguments()
    mc = program("gmm", backend="compiled")
    got = mc.derive("sufrev", "gmm_objective")(args, 1.0)
    want = program("gmm", backend="interp").derive("rev", "gmm_objective")(args, 1.0)
    for g, w in zip(got[1:4], want[1:4]):
        np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w, dtype=float), rtol=1e-12)
    assert not mc.backend.fallbacks
