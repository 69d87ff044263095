"""Smeding & Vákár's ``dualrev`` (§9.1–9.2: Contrib data, a staging array in the reverse
pass) and Krawiec et al.'s naive ``deltarev2`` (eval₂, a tree walk) on the compiled
backend (Notes [Contribs on the tape], [Naive eval₂ on the tape]).  Every gradient is
checked against central finite differences, Knossos ``rev`` and the Python run time of
the same algorithm, and nothing falls back to python."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_compiled_tape import CASES, IDS, PROGRAMS, call, finite_differences, flat

import labrys
from labrys.values import Inj

ROOT = Path(__file__).resolve().parent.parent
COMPILED = ["dualrev", "deltarev2"]

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


@pytest.mark.parametrize("alg", COMPILED)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compiled_gradient_is_finite_differences_and_the_python_run_time(alg, case, compiled, python):
    name, x, dt = case
    got = call(compiled, alg, name, x, dt)
    assert compiled.backend.fallbacks == {}, compiled.backend.fallbacks
    assert np.allclose(flat(got), finite_differences(python, name, x, dt), rtol=1e-5, atol=1e-6)
    assert np.allclose(flat(got), flat(call(python, alg, name, x, dt)), rtol=1e-12, atol=1e-12)
    if isinstance(x[0], Inj):
        assert got[0].left == x[0].left
