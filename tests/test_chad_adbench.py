"""CHAD's reverse mode on the ADBench programs, compiled through the §9 lowering
(src/labrys/ad/chad_lower.py, Notes [Zeros shaped like the context] and [Zeros out of a Σ]):
[chadrev f] of GMM, LSTM and BA's reproj_err on small instances equals Knossos rev (another
algorithm, run on the interpreter) and central finite differences, with no fallback note and no
CHAD run-time primitive left in any def it reaches."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from labrys.ad.chad_lower import runtime_left
from labrys.adbench import program


def _flat(x) -> np.ndarray:
    if isinstance(x, (tuple, list)):
        parts = [_flat(e) for e in x if not isinstance(e, int)]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.atleast_1d(np.asarray(x, dtype=float)).ravel()


def _gmm():
    rng = np.random.default_rng(3)
    n, d, k = 4, 2, 3
    return (rng.normal(size=(n, d)), rng.normal(size=k), rng.normal(size=(k, d)),
            rng.normal(size=(k, d * (d + 1) // 2)) * 0.3, (1.0, 0)), (0, 1, 2, 3), 1.0


def _lstm():
    rng = np.random.default_rng(4)
    layers, b, c = 1, 2, 3
    return (rng.normal(size=(2 * layers, 4 * b)) * 0.5, rng.normal(size=(3, b)) * 0.5,
            rng.normal(size=(2 * layers, b)) * 0.5, rng.normal(size=(c, b)) * 0.5), (0, 1, 2), 1.0


def _ba():
    rng = np.random.default_rng(5)
    cam = np.concatenate([rng.normal(size=3) * 0.1, rng.normal(size=3), [1.5, 0.1, -0.2, 0.01, 0.001]])
    return (cam, rng.normal(size=3) + np.array([0.0, 0.0, 5.0]), 0.8, rng.normal(size=2)), (0, 1, 2), (1.0, -0.5)


CASES = {"gmm": ("gmm_objective", _gmm), "lstm": ("lstm_objective", _lstm), "ba": ("reproj_err", _ba)}


def _fd_dot(f, args, active, direction, h=1e-6) -> float:
    """<J · direction> by central differences over the active (real) arguments."""
    def moved(s):
        out = list(args)
        for k, dk in zip(active, direction):
            out[k] = args[k] + s * dk
        return tuple(out)
    return (_flat(f(*moved(h))) - _flat(f(*moved(-h)))) / (2 * h)


@pytest.mark.parametrize("problem", sorted(CASES))
def test_chadrev_compiled_on_adbench(problem, caplog):
    name, make = CASES[problem]
    args, active, dt = make()
    compiled = program(problem, backend="compiled")
    interp = program(problem, backend="interp")
    with caplog.at_level(logging.INFO, logger="labrys"):
        back = compiled.derive("chadrev", name)
        got = back((args, dt))
    assert not [r.getMessage() for r in caplog.records if "dynamic run time" in r.getMessage()]
    reached = [back.d] + compiled.linker.reached(back.d)
    assert [str(r.name) for r in reached if runtime_left(r.body) is not None] == []
    assert compiled.backend.fallbacks == {}
    want = interp.derive("rev", name)((args, dt))   # Knossos rev, on the interpreter
    for k in active:
        np.testing.assert_allclose(_flat(got[k]), _flat(want[k]), rtol=1e-10, atol=1e-12)
    # finite differences: <dt, J d> = <J^T dt, d> along a random direction of the active arguments
    rng = np.random.default_rng(9)
    direction = [rng.normal(size=np.shape(args[k])) for k in active]
    fd = _fd_dot(getattr(interp, name), args, active, direction)
    lhs = float(_flat(dt) @ fd)
    rhs = sum(float(_flat(got[k]) @ _flat(d)) for k, d in zip(active, direction))
    assert lhs == pytest.approx(rhs, rel=1e-5, abs=1e-8)
