"""Regressions of the scalarise pass (vector arithmetic reduced for the
dual-number algorithms of Krawiec et al.)."""
from __future__ import annotations

import numpy as np
import pytest

import labrys

# h(x) = x0 x + x1 x; at x = (1, 2) its Jacobian is [[2 x0 + x1, x0], [x1, x0 + 2 x1]] = [[4, 1], [2, 5]]
VECTOR_SUMBUILD = """
(def h (Vec Float) (x : Vec Float)
  (sumbuild 2 (lam (k : Integer) (mul (index k x) x))))
"""


@pytest.mark.parametrize("derivation", ["fwd", "dualfwd"])
def test_sumbuild_of_vectors_forward(derivation):
    # scalarise copies the body for the first term and for the fold step; while
    # both copies shared binder names, cleanup evaluated every term at k = 0
    # (found through ADBench hand's skinning sum)
    m = labrys.load(VECTOR_SUMBUILD)
    x = np.array([1.0, 2.0])
    assert list(m.derive(derivation, "h")(x, np.array([1.0, 0.0]))) == [4.0, 2.0]
    assert list(m.derive(derivation, "h")(x, np.array([0.0, 1.0]))) == [1.0, 5.0]


@pytest.mark.parametrize("derivation", ["rev", "deltarev1", "deltarev2", "deltarev"])
def test_sumbuild_of_vectors_reverse(derivation):
    m = labrys.load(VECTOR_SUMBUILD)
    x = np.array([1.0, 2.0])
    assert list(m.derive(derivation, "h")(x, np.array([1.0, 0.0]))) == [4.0, 1.0]
    assert list(m.derive(derivation, "h")(x, np.array([0.0, 1.0]))) == [2.0, 5.0]
