"""Smeding & Vákár's staged versions D¹–D⁵ (``dualrev1`` … ``dualrev5``) on the compiled
backend (Note [Staged versions in compiled code]): every gradient is checked against
Knossos ``rev`` and central finite differences, and nothing falls back to Python."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import labrys
from test_compiled_tape import call, finite_differences, flat

ROOT = Path(__file__).resolve().parent.parent
STAGES = ["dualrev1", "dualrev2", "dualrev3", "dualrev4", "dualrev5"]
# Each case is one Numba module per stage (D¹'s and D²'s recurse through apply and are compiled
# anew in every process): the whole sweep only with LABRYS_EXAMPLES set
SWEEP = bool(os.environ.get("LABRYS_EXAMPLES"))
sweep = pytest.mark.skipif(not SWEEP, reason="set LABRYS_EXAMPLES to run every stage on every case")

PROGRAMS = """
(def fig1 Float ((x : Float) (y : Float))
  (let (z (add x y)) (mul x z)))
(def tex Float (x : Tuple Float Float)
  (let ((x1 (get$1$2 x)) (x2 (get$2$2 x)) (x3 (add x1 x2)))
    (add (mul x3 x1) x3)))
(def tbad Float ((x : Float) (n : Integer))
  (if (eq n 0) x (let (y (tbad x (sub n 1))) (mul y y))))
(def chain Float ((x : Float) (y : Float))
  (let ((a (mul x y)) (b (mul a a)) (c (add a b)) (d (mul c (sin b))) (e (div d (add 1.0 (mul c c)))))
    (add e (mul a 2.0))))
(def evn Float ((x : Float) (n : Integer))
  (if (eq n 0) x (odd (mul x 1.25) (sub n 1))))
(def odd Float ((x : Float) (n : Integer))
  (if (eq n 0) (sin x) (evn (add (mul x 0.5) (cos x)) (sub n 1))))
(def pair (Tuple Float Float) ((x : Float) (y : Float))
  (tuple (mul x (exp y)) (sub (mul y y) x)))
(def both Float ((x : Float) (y : Float))
  (let (g (lam (t : Float) (add (mul x t) (mul y (mul t t)))))
    (add (g x) (g (mul y 3.0)))))
(def lit (Tuple Float Float) ((x : Float) (k : Integer) (b : Bool))
  (if b (tuple (mul x (to_float k)) 1.0) (tuple (add 2.0 (mul 3.0 x)) (mul x x))))
(def probe Float ((x : Float) (y : Float) (n : Integer))
  (add (add (fig1 x y) (tex (tuple y x)))
       (add (add (chain x y) (evn x n)) (add (both x y) (tbad y 3)))))
"""

# (function, argument, output cotangent): one compiled module per stage and case, so few cases
# that each go through many constructs: probe calls fig1 (Fig. 1), tex (t_ex), a chain of shared
# lets, mutual recursion through if, a closure over both inputs and t_bad; pair and lit have
# tuple results, lit Integer and Bool inputs and literals.
CASES = [
    ("probe", (0.3, 0.9, 5), 1.0),
    ("pair", (0.6, -1.2), (1.0, -0.5)),
    ("lit", (1.5, 3, True), (1.0, 2.0)),
]
REFERENCE = {"probe": "deltarev", "pair": "rev", "lit": "rev"}  # Knossos rev has no rule for a lambda
IDS = [c[0] for c in CASES]
# always: the probe on every stage, the tuple results and scalar kinds on D⁵; the rest with LABRYS_EXAMPLES
RUNS = [pytest.param(alg, case, id=f"{case[0]}-{alg}",
                     marks=[] if case[0] == "probe" or alg == "dualrev5" else [sweep])
        for alg in STAGES for case in CASES]


@pytest.fixture(scope="module")
def compiled() -> labrys.Module:
    return labrys.load(PROGRAMS, backend="compiled")


@pytest.fixture(scope="module")
def python() -> labrys.Module:
    return labrys.load(PROGRAMS, backend="python")


@pytest.mark.parametrize("alg, case", RUNS)
def test_a_stage_compiled_is_another_algorithm_and_finite_differences(alg, case, compiled, python):
    name, x, dt = case
    got = call(compiled, alg, name, x, dt)
    assert compiled.backend.fallbacks == {}, compiled.backend.fallbacks
    assert f"[{alg} {name}]" in compiled.backend.sources  # it ran as generated Numba code
    assert np.allclose(flat(got), flat(call(python, REFERENCE[name], name, x, dt)), rtol=1e-12, atol=1e-12)
    assert np.allclose(flat(got), finite_differences(python, name, x, dt), rtol=1e-5, atol=1e-6)


def test_the_closure_over_both_inputs_is_knossos_rev_of_its_inlined_form(compiled, python):
    m = labrys.load(PROGRAMS + """
(def inlined Float ((x : Float) (y : Float))
  (add (add (mul x x) (mul y (mul x x))) (add (mul x (mul y 3.0)) (mul y (mul (mul y 3.0) (mul y 3.0))))))""",
                    backend="python")
    want = m.derive("rev", "inlined")((1.3, 0.4), 1.0)
    assert np.allclose(flat(call(compiled, "dualrev5", "both", (1.3, 0.4), 1.0)), flat(want), rtol=1e-12)
    assert compiled.backend.fallbacks == {}


@pytest.mark.parametrize("alg", [pytest.param("dualrev1", marks=sweep), pytest.param("dualrev3", marks=sweep),
                                 "dualrev5"])
def test_repeated_calls_start_from_a_fresh_run(alg, compiled):
    d = compiled.derive(alg, "tbad")
    first = d((1.1, 5), 1.0)
    assert first[0] == pytest.approx(32 * 1.1 ** 31, rel=1e-12) and first[1] == ()  # d/dx x^32 = 32 x^31
    assert d((1.1, 5), 1.0) == first
    assert d((0.5, 0), 3.0) == (3.0, ())  # tbad(x, 0) = x
    assert compiled.backend.fallbacks == {}


@sweep
def test_the_example_runs_compiled():
    m = labrys.load(ROOT / "examples" / "dualrev.ks", backend="compiled")
    m.main()
    staged = {f: why for f, why in m.backend.fallbacks.items() if f.startswith(("[dualrev1", "[dualrev3", "[dualrev5",
                                                                                "[dr1", "[dr3", "[dr5"))}
    assert staged == {}
