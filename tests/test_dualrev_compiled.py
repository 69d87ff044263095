"""Smeding & Vákár's ``dualrev`` (§9.1–9.2: Contrib data, a staging array in the reverse
pass) and Krawiec et al.'s naive ``deltarev2`` (eval₂, a tree walk) on the compiled
backend (Notes [Contribs on the tape], [Naive eval₂ on the tape]).  Every gradient is
checked against central finite differences, Knossos ``rev`` and the Python run time of
the same algorithm, and nothing falls back to python."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys.values import Inj
from test_compiled_tape import CASES, PROGRAMS, call, finite_differences, flat

ROOT = Path(__file__).resolve().parent.parent
COMPILED = ["dualrev", "deltarev2", "deltarev1"]
D1_TYPES = {"pairs", "sumin"}  # deltarev1's compiled Interleave: Float, Integer, Bool, tuples, Vec Float only
RUNS = [(alg, c) for alg in COMPILED for c in CASES if alg != "deltarev1" or c[0] not in D1_TYPES]

MORE = """
(def chainv Float ((x : Float) (n : Integer))
  (if (eq n 0) x (let (y (chainv x (sub n 1))) (add (mul 0.5 y) (mul y 0.5)))))
(def closures Float ((x : Float) (y : Float))
  (let (f (lam (z : Float) (mul z (mul x y))))
    (add (f (sin x)) (f y))))
(def mapped (Vec Float) ((v : Vec Float) (c : Float))
  (map (lam (a : Float) (mul c (exp a))) v))
"""


@pytest.fixture(scope="module")
def compiled() -> labrys.Module:
    return labrys.load(PROGRAMS + MORE, backend="compiled")


@pytest.fixture(scope="module")
def python() -> labrys.Module:
    return labrys.load(PROGRAMS + MORE, backend="python")


@pytest.mark.parametrize("alg, case", RUNS, ids=[f"{a}-{c[0]}-{k}" for k, (a, c) in enumerate(RUNS)])
def test_compiled_gradient_is_finite_differences_and_the_python_run_time(alg, case, compiled, python):
    name, x, dt = case
    got = call(compiled, alg, name, x, dt)
    assert compiled.backend.fallbacks == {}, compiled.backend.fallbacks
    assert np.allclose(flat(got), finite_differences(python, name, x, dt), rtol=1e-5, atol=1e-6)
    assert np.allclose(flat(got), flat(call(python, alg, name, x, dt)), rtol=1e-12, atol=1e-12)
    if isinstance(x[0], Inj):
        assert got[0].left == x[0].left


@pytest.mark.parametrize("alg", COMPILED)
@pytest.mark.parametrize("name, x, dt", [
    ("chainv", (1.3, 12), 1.0),                               # a shared chain: y used twice per step
    ("closures", (0.4, -1.1), 1.0),                           # a closure over both inputs, called twice
    ("mapped", (np.array([0.1, -0.5, 0.9]), 1.7), np.array([1.0, -2.0, 0.5])),  # a vector result
    ("fibc", (0.5, 1.5, 12), 1.0)])
def test_compiled_equals_knossos_rev_and_finite_differences(alg, name, x, dt, compiled, python):
    got = call(compiled, alg, name, x, dt)
    assert not any(k.endswith(f" {name}]") for k in compiled.backend.fallbacks), compiled.backend.fallbacks
    ref = "deltarev" if name == "closures" else "rev"  # Knossos rev has no rule for a let-bound lambda
    assert np.allclose(flat(got), flat(call(python, ref, name, x, dt)), rtol=1e-12, atol=1e-12)
    assert np.allclose(flat(got), finite_differences(python, name, x, dt), rtol=1e-5, atol=1e-6)


def test_deltarev1_on_a_vector_of_tuples_falls_back_with_a_note():
    m = labrys.load(PROGRAMS, backend="compiled")
    x = [(1.0, 0.1), (2.0, -0.3)]
    assert flat(m.derive("deltarev1", "pairs")(x, 1.0)) == pytest.approx(flat(m.derive("rev", "pairs")(x, 1.0)))
    assert "Vec (Tuple Float Float)" in m.backend.fallbacks["[deltarev1 pairs]"]
