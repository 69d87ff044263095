"""A bounded slice of the mutation testing of tests/mutation/ (the full run:
``python tests/mutation/run.py``, docs/verification.md): every single fault
planted in the fwd and rev rules of ``sin`` and ``div`` that changes an
algorithm's results on a def calling the primitive is caught by verify, for
that algorithm."""
from __future__ import annotations

import warnings

import labrys
from labrys.ir.types import FLOAT
from mutation.mutants import Mutant, mutants_of, planted
from mutation.run import prim_programs, run


def test_planted_faults_in_sin_and_div_are_caught():
    result = run(["sin", "div"], log=lambda s: None, programs_of=lambda prim: prim_programs(prim)[:1])
    assert result["planted"] == len(mutants_of("sin", (FLOAT,))) + len(mutants_of("div", (FLOAT, FLOAT)))
    for name in ("fwd", "rev", "dualfwd", "deltarev"):  # every family: Knossos and Krawiec et al.
        assert result["algorithms"][name]["affected"] > 0, name
    for name, score in result["algorithms"].items():
        assert score["caught"] == score["affected"], (name, score["survivors"])


def test_a_mutant_is_planted_only_inside_its_context():
    m = labrys.load("(def f Float (x : Float) (sin x))")
    want = m.derive("rev", "f")(0.5, 1.0)
    with planted(Mutant("sin", "rev", 0, "scale2")), warnings.catch_warnings():
        assert labrys.load("(def f Float (x : Float) (sin x))").derive("rev", "f")(0.5, 1.0) == 2 * want
    assert labrys.load("(def f Float (x : Float) (sin x))").derive("rev", "f")(0.5, 1.0) == want
