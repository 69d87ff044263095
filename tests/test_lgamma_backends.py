"""lgamma is the C library's on every backend (compiled code calls it through Numba), so the
backends agree to the last bit: CPython's math.lgamma(1.25) is 33 ulps from it."""
from __future__ import annotations

import pytest

import labrys

SRC = "(def f Float (x : Float) (lgamma x))"
LN_GAMMA_5_4 = -0.0982718364218131614  # ln Γ(5/4) = ln(0.9064024770554770779…)


@pytest.mark.parametrize("backend", ["interp", "python", "compiled"])
def test_lgamma_agrees_across_backends_and_with_the_true_value(backend) -> None:
    f = labrys.load(SRC, backend=backend).function("f")
    assert f(1.25) == pytest.approx(LN_GAMMA_5_4, rel=2e-16)
    assert f(1.25) == labrys.load(SRC, backend="compiled").function("f")(1.25)
