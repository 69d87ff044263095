"""A bounded slice of the mutation testing of the algorithms' structural cases
(the full run: ``python tests/mutation/run_structural.py``, docs/verification.md):
one fault per family, planted in a let, if, tuple, loop or call rule (or, for
Smeding & Vákár's versions, an op's dual part and the run time's CALL), changes
its algorithms' results on a def using that construct and is caught by verify."""
from __future__ import annotations

import labrys
from mutation.run_structural import Program, run
from mutation.structural import StructuralMutant, planted

PROGRAM = Program("slice", """
(def h Float ((a : Float) (b : Float)) (mul a (sin b)))
(def f Float ((x : Float) (y : Float))
  (let ((p q) (tuple (mul x y) (sin x)))
    (if (gt x 0.0) (add (h p q) (mul p q)) (mul 2.0 p))))
(def s Float ((v : Vec Float) (x : Float)) (sumbuild (size v) (lam (i : Integer) (sin (mul x (index i v))))))
""")

MUTANTS = [
    StructuralMutant("nabla", "let", "neg"),
    StructuralMutant("transpose", "build", "scale2"),
    StructuralMutant("dual", "if", "zero"),
    StructuralMutant("chadrev", "tuple", "scale2", 1),
    StructuralMutant("split", "call", "neg"),
    StructuralMutant("dualrev", "if", "scale2"),        # Smeding & Vákár: the translation's if
    StructuralMutant("dualrev_op", "op", "swap"),       # an op's operands' dual parts swapped
    StructuralMutant("dualrev_rt", "call", "neg"),      # CALL's cotangent negated (D²–D⁵)
    StructuralMutant("dualrev_rt", "record", "scale2"),  # an op's recorded partial doubled (dualrev, tape)
]


def test_structural_faults_are_caught():
    families = sorted({m.family for m in MUTANTS})
    result = run(families, progs=[PROGRAM], mutants=MUTANTS, log=lambda s: None)
    assert result["planted"] == len(MUTANTS) and not result["never_fired"] and not result["unaffected"]
    for name in ("fwd", "rev", "dualfwd", "deltarev", "chadrev", "sufrev", "dualrev1", "dualrev2", "dualrev5",
                 "dualrev", "dualrevtape"):
        assert result["algorithms"][name]["affected"] > 0, name
    for name, score in result["algorithms"].items():
        assert score["caught"] == score["affected"], (name, score["survivors"])


def test_a_structural_mutant_is_planted_only_inside_its_context():
    text = "(def f Float ((x : Float) (y : Float)) (let (a (mul x y)) (mul a x)))"
    want = labrys.load(text).derive("rev", "f")((0.5, 2.0), 1.0)
    with planted(StructuralMutant("transpose", "let", "scale2")) as fired:
        got = labrys.load(text).derive("rev", "f")((0.5, 2.0), 1.0)
    assert fired[0] > 0 and got != want
    assert labrys.load(text).derive("rev", "f")((0.5, 2.0), 1.0) == want
