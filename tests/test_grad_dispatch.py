"""Note [Cached gradient dispatch] (labrys.transforms): after the first call, grad
reuses what it decided per tuple of argument types.  Semantics only (no timing): the
same values and shapes as the first call, for every kind of argument, on every backend,
and the same errors."""
from __future__ import annotations

import numpy as np
import pytest

import labrys

SRC = """
(def f Float ((x : Float) (y : Float)) (mul x (mul y y)))
(def g Float ((v : Vec Float) (s : Float))
  (mul s (sumbuild (size v) (lam (i : Integer) (mul (index i v) (index i v))))))
"""


@pytest.mark.parametrize("backend", ["compiled", "python", "interp"])
def test_repeated_scalar_gradients_are_the_hand_derived_ones(backend):
    m = labrys.load(SRC, backend=backend)
    grad, grad_y = labrys.grad(m.f), labrys.grad(m.f, argnums=1)
    for x, y in [(1.5, 2.0), (-3.0, 0.5), (2, 3), (np.float64(0.25), 4.0), (1.5, 2.0)]:
        assert grad(x, y) == pytest.approx((y * y, 2 * x * y), rel=1e-15)
        assert grad_y(x, y) == pytest.approx(2 * x * y, rel=1e-15)


@pytest.mark.parametrize("backend", ["compiled", "interp"])
def test_argument_kinds_keep_their_shapes_across_calls(backend):
    m = labrys.load(SRC, backend=backend)
    grad = labrys.grad(m.g)
    v = np.array([1.0, -2.0, 3.0])
    for s in (2.0, 3.0):
        gv, gs = grad(v, s)
        assert isinstance(gv, np.ndarray) and gv.shape == (3,)
        np.testing.assert_allclose(gv, 2 * s * v, rtol=1e-15)
        assert gs == pytest.approx(14.0, rel=1e-15)
    gv, gs = grad([1.0, -2.0, 3.0], 2.0)          # a list after arrays: its own plan
    np.testing.assert_allclose(np.asarray(gv, dtype=float), 4 * v, rtol=1e-15)
    assert labrys.grad(m.g, argnums=(0,))(v, 2.0)[0].shape == (3,)


def test_errors_stay_errors_after_warm_up():
    m = labrys.load(SRC, backend="compiled")
    grad = labrys.grad(m.f, argnums=2)
    for _ in range(2):
        with pytest.raises(labrys.LabrysError, match="argnums 2"):
            grad(1.0, 2.0)
    ok = labrys.grad(m.f)
    assert ok(1.0, 2.0) == pytest.approx((4.0, 4.0))
    for _ in range(2):
        with pytest.raises(labrys.LabrysError):
            ok("a", 2.0)
