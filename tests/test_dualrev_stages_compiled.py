"""Smeding & Vákár's staged versions D¹–D⁵ (``dualrev1`` … ``dualrev5``) on the compiled
backend (Note [Staged versions in compiled code]): every gradient is checked against
Krawiec et al.'s ``deltarev`` and central finite differences, and nothing falls back
to Python.

A stage's module costs its Numba compilation (tens of seconds on a loaded machine;
D¹'s and D²'s are not cached across processes), so by default each stage compiles
one module, of ``compact``: Fig. 1's shared x·(x + y), a closure over both scalar
inputs mapped over a vector input (a vector result), mutual recursion through ``if``
on the vector's sum, Integer and Bool inputs and literals, a tuple result.  Every
later check reuses that module (repeated calls, a cotangent of the wrong length).
With ``LABRYS_EXAMPLES`` set, every stage also runs the larger programs of
``test_dualrev_unseen.py`` (``everything``: a chain of shared lets, closures calling
closures, a tuple of a vector and a scalar; ``rows``: a matrix input) and
``examples/dualrev.ks``."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import labrys
from test_dualrev_unseen import CASES, PROGRAMS, check, finite_differences, reals

ROOT = Path(__file__).resolve().parent.parent
STAGES = ["dualrev1", "dualrev2", "dualrev3", "dualrev4", "dualrev5"]
SWEEP = bool(os.environ.get("LABRYS_EXAMPLES"))
sweep = pytest.mark.skipif(not SWEEP, reason="set LABRYS_EXAMPLES to run every stage on the larger programs")

COMPACT = """
(def tick Float ((t : Float) (k : Integer)) (if (lte k 0) t (tock (mul t t) (sub k 1))))
(def tock Float ((t : Float) (k : Integer)) (if (lte k 0) (sin t) (tick (add t 0.5) (sub k 1))))
(def compact (Tuple (Vec Float) Float) ((v : Vec Float) (x : Float) (y : Float) (k : Integer) (b : Bool))
  (let ((z (add x y))
        (g (lam (t : Float) (mul t (mul x y)))))
    (tuple (map g v) (add (mul x z) (if b (tock (sum v) k) (mul 2.0 (to_float k)))))))
"""
X = (np.array([0.3, -0.2, 0.5]), 0.7, -0.4, 3, True)
DT = (np.array([1.0, 2.0, -1.0]), 1.0)
_derived: dict[str, labrys.Derivative] = {}


@pytest.fixture(scope="module")
def compiled() -> labrys.Module:
    return labrys.load(COMPACT, backend="compiled")


@pytest.fixture(scope="module")
def python() -> labrys.Module:
    return labrys.load(COMPACT, backend="python")


def derived(m: labrys.Module, alg: str):
    """The stage's derivative of ``compact``, compiled once per test session."""
    if alg not in _derived:
        _derived[alg] = m.derive(alg, "compact")
    return _derived[alg]


@pytest.mark.parametrize("alg", STAGES)
def test_a_stage_compiled_is_deltarev_and_finite_differences(alg, compiled, python):
    got = derived(compiled, alg)(X, DT)
    assert compiled.backend.fallbacks == {}, compiled.backend.fallbacks
    assert f"[{alg} compact]" in compiled.backend.sources  # it ran as generated Numba code
    assert isinstance(got[0], np.ndarray) and got[0].shape == (3,) and got[3:] == ((), ())
    assert np.allclose(reals(got), reals(python.derive("deltarev", "compact")(X, DT)), rtol=1e-12, atol=1e-12)
    assert np.allclose(reals(got), finite_differences(python, "compact", X, DT), rtol=1e-5, atol=1e-6)
    # by hand: ∂/∂v_i = x·y·dt_i + 2(Σv + 1/2) (tock(s, 3) = (s + 1/2)² + 1/2), ∂/∂x = y·Σ v_i dt_i + 2x + y
    v, x, y = X[:3]
    assert np.allclose(got[0], x * y * DT[0] + 2 * (v.sum() + 0.5), rtol=1e-12)
    assert got[1] == pytest.approx(y * (v @ DT[0]) + 2 * x + y, rel=1e-12)


@pytest.mark.parametrize("alg", STAGES)
def test_repeated_calls_start_from_a_fresh_run(alg, compiled, python):
    d = derived(compiled, alg)
    first = d(X, DT)
    again = d(X, DT)
    assert np.array_equal(first[0], again[0]) and first[1:] == again[1:]
    other = (np.array([1.5, -0.5]), 0.2, 0.9, 0, False)  # the other branch, a shorter vector
    dt = (np.array([0.5, -2.0]), 3.0)
    assert np.allclose(reals(d(other, dt)), reals(python.derive("deltarev", "compact")(other, dt)), rtol=1e-12)
    assert compiled.backend.fallbacks == {}


def test_a_cotangent_of_the_wrong_length_is_an_error(compiled):
    with pytest.raises(labrys.LabrysError):
        derived(compiled, "dualrev5")(X, (np.ones(2), 1.0))


@sweep
@pytest.mark.parametrize("alg", STAGES + ["dualrev", "dualrevtape"])
@pytest.mark.parametrize("name", ["everything", "rows"])
def test_every_stage_on_the_larger_programs(alg, name):
    m, py = labrys.load(PROGRAMS, backend="compiled"), labrys.load(PROGRAMS, backend="python")
    x, dt = CASES[name]
    got = m.derive(alg, name)(x, dt)
    assert m.backend.fallbacks == {}, m.backend.fallbacks
    check(got, (finite_differences(py, name, x, dt), reals(py.derive("deltarev", name)(x, dt))))
    assert got[0].shape == x[0].shape


@sweep
def test_the_example_runs_compiled():
    m = labrys.load(ROOT / "examples" / "dualrev.ks", backend="compiled")
    m.main()
    staged = {f: why for f, why in m.backend.fallbacks.items() if f.startswith(("[dualrev1", "[dualrev3", "[dualrev5",
                                                                                "[dr1", "[dr3", "[dr5"))}
    assert staged == {}
