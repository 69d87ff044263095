"""Mutation testing of the derivative rules: how many planted faults does
``labrys verify`` catch, per algorithm?  (docs/verification.md, "Measured power")

    .venv/bin/python tests/mutation/run.py            # every primitive (the full run)
    .venv/bin/python tests/mutation/run.py sin mul    # some primitives
    .venv/bin/python tests/mutation/run.py --json out.json

For each primitive with derivative rules, every mutant of tests/mutation/mutants.py
is planted in turn, and verify runs (interp backend, seed 0, 3 random points
per function... see OPTIONS) on: one def calling the primitive at each argument type
tests/test_prim_rules.py covers, the first two examples that call it, and the first two random
programs of a bounded sweep (tests/strategies.py, derandomised) that call it.
A mutant *affects* an algorithm when some cell of that algorithm differs from
the unmutated run; it is *caught* for it when that cell fails (or the
agreement check fails naming it).  A mutant the type checker rejects
(``unsupported`` where the unmutated run checked) is counted apart.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))

import labrys  # noqa: E402
from labrys.errors import LabrysError  # noqa: E402
from labrys.ir.types import TTuple, show_type  # noqa: E402
from labrys.verify import algorithms, verify  # noqa: E402
from mutation.mutants import mutants_of, planted  # noqa: E402

ROOT = TESTS.parent
OPTIONS = dict(points=2, seed=0, edges=False)
EXAMPLES = 2   # examples per primitive (the first that call it, by name)
RANDOM = 2     # random programs per primitive


@dataclass
class Program:
    label: str
    text: str


@dataclass
class Score:
    affected: int = 0
    caught: int = 0
    survivors: list[str] = field(default_factory=list)


def prim_programs(prim: str) -> list[Program]:
    """One def per argument type of tests/test_prim_rules.py's cases of prim."""
    from test_prim_rules import CASES

    out = []
    for k, c in enumerate([c for c in CASES if c.prim == prim]):
        xs = [f"x{j}" for j in range(1, len(c.types) + 1)]
        from labrys.prelude import PRIMITIVES
        arg_t = c.types[0] if len(c.types) == 1 else TTuple(c.types)
        ret = PRIMITIVES[prim].typeof(arg_t)
        params = " ".join(f"({x} : {show_type(t)})" for x, t in zip(xs, c.types))
        call = f"({prim} {' '.join(xs)})"
        out.append(Program(f"{prim}@{c.id}", f"(def t{k} {show_type(ret)} ({params}) {call})\n"))
    return out


def example_programs(prim: str) -> list[Program]:
    pattern = re.compile(rf"\({re.escape(prim)}[\s)]")
    return [Program(f"examples/{p.name}", p.read_text()) for p in sorted((ROOT / "examples").glob("*.ks"))
            if pattern.search(p.read_text()) and _loads(p.read_text())]


def random_programs(count: int) -> list[Program]:
    """A bounded, derandomised sweep of random smooth programs (tests/strategies.py)."""
    from hypothesis import HealthCheck, given, settings

    from strategies import NONSMOOTH, programs

    found: list[Program] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(gen=programs({"core", "vectors"}, exclude=NONSMOOTH | {"map"}, result="float"))
    def collect(gen):
        found.append(Program(f"random #{len(found)}", gen.text))
    collect()
    return found


def _loads(text: str) -> bool:
    try:
        labrys.load(text, backend="interp")
        return True
    except LabrysError:
        return False


def run_verify(p: Program, options: dict = OPTIONS, crash_rejects: bool = False) -> dict[tuple[str, str], tuple]:
    """(function, algorithm) -> (ok, error, tolerance, detail) of every cell.  With
    ``crash_rejects``, a mutant that breaks a generator (a Python exception) counts as
    the algorithm refusing the program (ok None), as a type checker's rejection does."""
    try:
        rows = verify(labrys.load(p.text, backend="interp"), **options)
    except LabrysError as exc:
        return {("-", "-"): (False, 0.0, 0.0, str(exc))}
    except Exception as exc:
        if not crash_rejects:
            raise
        return {("-", "-"): (None, 0.0, 0.0, f"{type(exc).__name__}: {exc}")}
    return {(r.function, name): (c.ok, c.error, c.tolerance, c.detail) for r in rows for name, c in r.cells.items()}


def judge(base: dict, now: dict, names: list[str]) -> tuple[set[str], set[str], set[str]]:
    """The algorithms a mutant affected, caught and (type checker) rejected on one program."""
    affected, caught, rejected = set(), set(), set()
    for (fn, name), cell in base.items():
        if name not in names or cell[0] is not True:
            continue
        got = now.get((fn, name))
        if got is None or got == cell:
            continue
        if got[0] is None:
            rejected.add(name)
            continue
        affected.add(name)
        if got[0] is False:
            caught.add(name)
    # the agreement check names the pair it caught: it catches for the one the mutant changed
    for (fn, name), cell in now.items():
        if name == "agree" and cell[0] is False and base.get((fn, name), (None,))[0] is True:
            m = re.match(r"(\S+) vs (\S+):", cell[3])
            if m:
                caught |= set(m.groups())
    return affected, caught & affected, rejected


def run(prims: list[str], n_random: int = 40, log=print, programs_of=None) -> dict:
    """Plant every mutant of ``prims``; ``programs_of(prim)`` overrides the programs verified."""
    from labrys.prelude import PRIMITIVES
    from test_prim_rules import CASES

    names = [a.name for a in algorithms()]
    pool = random_programs(n_random) if programs_of is None else []
    scores: dict[str, Score] = defaultdict(Score)
    unaffected: list[str] = []
    rejected_all: list[str] = []
    planted_count = 0
    for prim in prims:
        cases = [c for c in CASES if c.prim == prim]
        if not cases or not ({"fwd", "rev"} & set(PRIMITIVES[prim].rules)):
            continue
        pattern = re.compile(rf"\({re.escape(prim)}[\s)]")
        programs = programs_of(prim) if programs_of is not None else (
            prim_programs(prim) + example_programs(prim)[:EXAMPLES]
            + [p for p in pool if pattern.search(p.text)][:RANDOM])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = [run_verify(p) for p in programs]
        for m in mutants_of(prim, cases[0].types):
            planted_count += 1
            affected, caught, rejected = set(), set(), set()
            with planted(m), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for p, b in zip(programs, base):
                    a, c, r = judge(b, run_verify(p), names)
                    affected |= a
                    caught |= c
                    rejected |= r
            tally(scores, m.describe(), affected, caught)
            if not affected:
                (rejected_all if rejected else unaffected).append(m.describe())
            log(f"{m.describe()}: affects {', '.join(sorted(affected)) or '-'}; "
                f"survives in {', '.join(sorted(affected - caught)) or '-'}")
    return {"planted": planted_count, "algorithms": scores_json(scores),
            "unaffected": unaffected, "rejected_by_type_checker": rejected_all}


# --- what run.py and run_structural.py share: the score per algorithm, the report, the command line ---

def tally(scores: dict[str, Score], who: str, affected: set[str], caught: set[str]) -> None:
    """Count one mutant for every algorithm it affected."""
    for name in affected:
        scores[name].affected += 1
        if name in caught:
            scores[name].caught += 1
        else:
            scores[name].survivors.append(who)


def scores_json(scores: dict[str, Score]) -> dict:
    return {n: {"affected": s.affected, "caught": s.caught, "survivors": s.survivors}
            for n, s in sorted(scores.items())}


def score_table(result: dict, what: str) -> list[str]:
    """The report's head: the mutants planted, the score per algorithm, every survivor."""
    lines = [f"{result['planted']} mutants planted in {what}", "",
             "| algorithm | mutants that change it | caught | score |", "|---|---|---|---|"]
    for name, s in result["algorithms"].items():
        score = s["caught"] / s["affected"] if s["affected"] else 1.0
        lines.append(f"| {name} | {s['affected']} | {s['caught']} | {100 * score:.1f}% |")
    for name, s in result["algorithms"].items():
        lines += [f"survivor ({name}): {who}" for who in s["survivors"]]
    return lines


def command(doc: str, metavar: str, targets: str, random_default: int, argv: list[str] | None,
            run_one, summarise) -> int:
    """The runners' command line: ``TARGET ... [--random N] [--json out.json] [--quiet]``;
    ``run_one(targets, n_random, log)`` makes the result, ``summarise`` its report."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("targets", nargs="*", metavar=metavar, help=targets)
    ap.add_argument("--random", type=int, default=random_default,
                    help=f"random programs in the sweep (default {random_default})")
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    result = run_one(args.targets, args.random, (lambda s: None) if args.quiet else print)
    print(summarise(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


def summary(result: dict) -> str:
    lines = score_table(result, "the primitives' fwd and rev rules")
    lines.append(f"{len(result['unaffected'])} mutants change no algorithm's results on these programs")
    lines += [f"  unaffected: {w}" for w in result["unaffected"]]
    lines.append(f"{len(result['rejected_by_type_checker'])} mutants are rejected by the type checker")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from labrys.prelude import PRIMITIVES

    def run_prims(prims: list[str], n_random: int, log) -> dict:
        return run(prims or sorted(p for p, v in PRIMITIVES.items() if {"fwd", "rev"} & set(v.rules)), n_random,
                   log=log)
    return command(__doc__, "PRIM", "primitives (default: every one with derivative rules)", 40, argv,
                   run_prims, summary)


if __name__ == "__main__":
    sys.exit(main())
