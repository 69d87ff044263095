"""Mutation testing of the algorithms' structural cases: how many planted
faults in the let/if/tuple/projection/call/loop rules does ``labrys verify``
catch, per algorithm?  (docs/verification.md, "Measured power")

    .venv/bin/python tests/mutation/run_structural.py              # every family (the full run)
    .venv/bin/python tests/mutation/run_structural.py dual nabla   # some families
    .venv/bin/python tests/mutation/run_structural.py --json out.json

Each mutant of tests/mutation/structural.py is planted in turn and verify
runs (interp backend, seed 0, 3 random points per function, no edge points,
only the algorithms the mutant's family reaches) on: one def per construct
(STRUCTURE below), the examples that load, and a bounded, derandomised sweep
of random programs (tests/strategies.py).  Judged as in run.py: a mutant
*affects* an algorithm when some cell of it differs from the unmutated run,
and is *caught* when that cell fails (or the agreement check fails naming it);
a mutant that never fires (no program reaches its site) is reported apart.
"""
from __future__ import annotations

import importlib
import sys
import warnings
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))


verify_module = importlib.import_module("labrys.verify")  # labrys.verify is also the function
from mutation.run import Program, Score, command, judge, run_verify, score_table, scores_json, tally  # noqa: E402
from mutation.structural import StructuralMutant, planted, structural_mutants  # noqa: E402
from mutation.structural_dualrev import VERSIONS  # noqa: E402

ROOT = TESTS.parent
OPTIONS = dict(points=3, seed=0, edges=False)
FAMILIES = {  # the algorithms each family's cases reach
    "nabla": ("fwd", "fwdt", "rev"),
    "transpose": ("fwd", "rev"),
    "apply": ("fwd", "fwdt", "rev"),
    "closed": ("fwd", "rev"),
    "dual": ("dualfwd", "deltarev1", "deltarev2", "deltarev"),
    "chadfwd": ("chadfwd", "chadrev"),
    "chadrev": ("chadfwd", "chadrev"),
    "split": ("fwd", "sufrev"),
    "dualrev": VERSIONS,
    "dualrev_op": VERSIONS,
    "dualrev_rt": VERSIONS,
}

STRUCTURE = Program("structure", """
(def h Float ((a : Float) (b : Float)) (mul a (sin b)))
(def f_let Float ((x : Float) (y : Float)) (let (a (mul x y)) (let (b (sin a)) (mul a (add b x)))))
(def f_if Float ((x : Float) (y : Float)) (if (gt x 1.0) (mul x y) (mul y (sin x))))
(def f_tuple Float ((x : Float) (y : Float))
  (let ((p q) (tuple (mul x y) (sin x))) (add (mul 2.0 p) (mul p q))))
(def f_get Float (t : Tuple Float Float) (mul (get$1$2 t) (exp (get$2$2 t))))
(def f_call Float ((x : Float) (y : Float)) (add (h x y) (mul 3.0 (h y x))))
(def f_build Float (v : Vec Float) (sum (build (size v) (lam (i : Integer) (mul (index i v) (sin (index i v)))))))
(def f_sumbuild Float ((v : Vec Float) (x : Float)) (sumbuild (size v) (lam (i : Integer) (sin (mul x (index i v))))))
(def f_fold Float ((v : Vec Float) (x : Float))
  (fold (lam (t : Tuple Float Float) (mul (get$1$2 t) (add (get$2$2 t) x))) x v))
(def f_app Float ((x : Float) (y : Float)) (let (g (lam (z : Float) (mul z (sin x)))) (add (g y) (mul 2.0 (g x)))))
(def f_pair (Tuple Float Float) ((x : Float) (y : Float)) (tuple (mul x (sin y)) (mul 2.0 x)))
(def f_case Float ((x : Float) (y : Float))
  (case (if (gt x 1.0) (inl (Sum Float Float) (mul x y)) (inr (Sum Float Float) x))
    ((inl a) (mul a x))
    ((inr b) (sin (mul b y)))))
""")


def programs(n_random: int) -> list[Program]:
    from mutation.run import random_programs

    out = [STRUCTURE]
    for p in sorted((ROOT / "examples").glob("*.ks")):
        if p.name in ("fold.ks", "lets.ks", "closures.ks", "sums.ks", "vectors.ks", "rotate_vec_by_quat.ks"):
            out.append(Program(f"examples/{p.name}", p.read_text()))
    return out + random_programs(n_random)


def _only(names: tuple[str, ...]):
    everything = verify_module.algorithms

    def chosen(only=None):
        return [a for a in everything(only) if a.name in names]
    return everything, chosen


def run(families: list[str], n_random: int = 8, log=print, progs: list[Program] | None = None,
        mutants: list[StructuralMutant] | None = None) -> dict:
    progs = programs(n_random) if progs is None else progs
    scores: dict[str, Score] = defaultdict(Score)
    never_fired: list[str] = []
    unaffected: list[str] = []
    planted_count = 0
    for family in families:
        names = FAMILIES[family]
        everything, chosen = _only(names)
        verify_module.algorithms = chosen
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                base = [run_verify(p, OPTIONS, crash_rejects=True) for p in progs]
            for m in [m for m in (mutants or structural_mutants((family,))) if m.family == family]:
                planted_count += 1
                affected: set[str] = set()
                caught: set[str] = set()
                with planted(m) as fired, warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for p, b in zip(progs, base):
                        a, c, _ = judge(b, run_verify(p, OPTIONS, crash_rejects=True), list(names))
                        affected |= a
                        caught |= c
                if not fired[0]:
                    never_fired.append(m.describe())
                elif not affected:
                    unaffected.append(m.describe())
                tally(scores, m.describe(), affected, caught)
                log(f"{m.describe()}: fired {fired[0]}; affects {', '.join(sorted(affected)) or '-'}; "
                    f"survives in {', '.join(sorted(affected - caught)) or '-'}")
        finally:
            verify_module.algorithms = everything
    return {"planted": planted_count, "algorithms": scores_json(scores),
            "never_fired": never_fired, "unaffected": unaffected}


def summary(result: dict) -> str:
    lines = score_table(result, "the algorithms' structural cases")
    lines.append(f"{len(result['never_fired'])} mutants never fire on these programs")
    lines += [f"  never fired: {w}" for w in result["never_fired"]]
    lines.append(f"{len(result['unaffected'])} mutants fire but change no result")
    lines += [f"  unaffected: {w}" for w in result["unaffected"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return command(__doc__, "FAMILY", f"families (default: {' '.join(FAMILIES)})", 8, argv,
                   lambda families, n_random, log: run(families or list(FAMILIES), n_random, log=log), summary)


if __name__ == "__main__":
    sys.exit(main())
