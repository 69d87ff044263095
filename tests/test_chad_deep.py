"""CHAD (Vákár & Smeding, CHAD: combinatory homomorphic automatic differentiation) on deep
programs: every pass of the reverse translation does work linear in the depth of a let
chain, and the translation's output is linear in it too (Note [Restricted contexts] in
labrys.ad.chad_common: the paper's contexts would make it quadratic).

Work is counted, not timed: the Python function calls each pass makes (cProfile's
counts, deterministic for a given program) and the sizes of the terms; a chain twice as
deep must cost about twice as much.  The cyclic collector, whose full collections walk
every live node again and so made the passes super-linear in practice, is paused while
a pipeline runs (Note [Garbage collection in passes]).
"""
from __future__ import annotations

import cProfile
import gc
import pstats
from dataclasses import replace

import labrys
from labrys.ad import chad
from labrys.ad.pipeline import Pass, Work, fresh_for, run_pipeline
from labrys.ir.traverse import size
from labrys.util.deep import run_deep


def _chain(n: int) -> str:
    return "(def f Float (x0 : Float)\n" + "".join(f"(let (x{k + 1} (mul x{k} 1.0001))\n" for k in range(n)) \
        + f"x{n}" + ")" * n + ")\n"


def _source(n: int):
    m = labrys.load(_chain(n), backend="interp")
    sig = m.function("f").sigs[0]
    return m, m.derivations.checked.typed(sig.decl)


def _work_per_pass(n: int) -> tuple[dict[str, int], dict[str, int]]:
    """The Python calls each pass of [chadR f] makes on a chain of n lets, and the size of
    the term after each pass."""
    m, d = _source(n)
    calls: dict[str, int] = {}

    def counted(p: Pass) -> Pass:
        def run(d, work):
            prof = cProfile.Profile()
            prof.enable()
            try:
                return p.run(d, work)
            finally:
                prof.disable()
                calls[p.name] = sum(v[1] for v in pstats.Stats(prof).stats.values())
        return replace(p, run=run)

    def job():
        work = Work(m.derivations.functions, fresh_for(d), m.derivations)
        return run_pipeline(tuple(counted(p) for p in chad.REV_TRANSLATION), d, work)
    derived = run_deep(job)  # the profiler counts the thread it is enabled on: the deep-stack worker's
    return calls, {s.name: size(s.d.body) for s in derived.stages}


def test_every_pass_of_chad_is_linear_in_the_depth_of_a_let_chain():
    calls1, sizes1 = _work_per_pass(250)
    calls2, sizes2 = _work_per_pass(500)
    assert set(calls1) == {"prepare", "scalarise", "translate", "simplify", "lower"}
    for name in calls1:  # O(L²) would give 4; a constant overhead per pass keeps it under 2
        assert 1.8 < calls2[name] / calls1[name] < 2.1, (name, calls1[name], calls2[name])
    for name in sizes1:  # the raw term (restricted contexts) and the simplified one alike
        assert 1.9 < sizes2[name] / sizes1[name] < 2.1, (name, sizes1[name], sizes2[name])
    assert sizes2["simplify"] < sizes2["translate"]


def test_the_collector_is_paused_while_a_pipeline_runs():
    m, d = _source(3)
    seen = []

    def probe(d, work):
        seen.append(gc.isenabled())
        return d
    work = Work(m.derivations.functions, fresh_for(d), m.derivations)
    was = gc.isenabled()
    run_pipeline((Pass("probe", "probe", probe),), d, work)
    assert seen == [False] and gc.isenabled() == was
