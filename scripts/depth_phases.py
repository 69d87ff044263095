"""Where a deep program's time and memory go, phase by phase: read the
s-expressions, parse, check, compile the def on the backend (span filling and
code generation included), then run it.  Each cell runs in a fresh process,
like scripts/depth_curve.py (whose shapes it uses); CPU seconds per phase and
the process's peak resident memory after each phase are printed.

    python scripts/depth_phases.py --sizes 10000,100000 --shapes lets,arg_ifs --backends python
    python scripts/depth_phases.py --profile lets 30000 python     # cProfile of one cell, top 30
    python scripts/depth_phases.py --tracemalloc lets 30000 python # what holds the memory at its peak
    python scripts/depth_phases.py --replot after.json --before before.json --plot phases.png
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import depth_curve  # noqa: E402

PHASES = ("read", "parse", "check", "module", "compile", "run")


def _rss_mb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phases(shape: str, n: int, backend: str) -> dict:
    """Run one cell phase by phase in this process."""
    import labrys
    from labrys.api import Module, check_program
    from labrys.errors import Source
    from labrys.syntax.parser import parse_program
    from labrys.syntax.sexpr import read
    from labrys.util.deep import gc_paused, run_deep

    text, arg, want = depth_curve.SHAPES[shape](n)
    out: dict = {}

    def timed(name, fn):
        cpu = time.process_time()
        result = fn()
        out[name] = {"cpu": time.process_time() - cpu, "peak_mb": _rss_mb()}
        return result

    # read as parse_program reads, with the collector paused (Note [Garbage collection in passes]);
    # "parse" is parse_program: reading again, then parsing
    timed("read", lambda: run_deep(lambda: gc_paused(read)(Source("<deep>", text))))
    program = timed("parse", lambda: parse_program(text, "<deep>"))
    checked = timed("check", lambda: check_program(program))
    m = timed("module", lambda: Module(checked, backend=backend, name="<deep>"))
    fn = m.function("f")
    for sig in fn.sigs:  # f's callees compile with it (compiled) or on first call (run)
        timed("compile", lambda sig=sig: m.backend.prepare(sig))
    got = timed("run", lambda: fn(arg))
    assert got == want, (got, want)
    del labrys
    return out


def measure(shape: str, n: int, backend: str, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--cell", shape, str(n), backend]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout > {timeout:g} s"}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def plot(results: list[dict], path: str, before: list[dict] | None = None) -> None:
    """Stacked CPU seconds per phase for every shape and backend (next to the
    ``before`` measurement of the same cell, hatched, when given)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [r for r in results if "error" not in r]
    old = {(r["shape"], r["n"], r["backend"]): r for r in before or () if "error" not in r}
    shown = [p for p in PHASES if p != "read"]  # "parse" reads again (parse_program)
    fig, ax = plt.subplots(figsize=(max(8, 0.6 * len(cells)), 5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(cells):
        for j, (cell, dx, hatch) in enumerate(((old.get((r["shape"], r["n"], r["backend"])), -0.2, "//"),
                                               (r, 0.2, None))):
            if cell is None:
                continue
            bottom = 0.0
            for k, ph in enumerate(shown):
                h = cell.get(ph, {}).get("cpu", 0.0)
                ax.bar(i + dx, h, 0.38, bottom=bottom, color=colours[k % len(colours)], hatch=hatch,
                       label=ph if (i == 0 and j == 1) else None)
                bottom += h
    ax.axhline(5.0, color="grey", linestyle=":", label="5 s")
    ax.set_xticks(range(len(cells)), [f"{r['shape']}\n{r['backend']}" for r in cells], rotation=90, fontsize=7)
    ax.set_ylabel("CPU seconds (load + first call)")
    n = sorted({r["n"] for r in cells})
    ax.set_title(f"Phases at depth {', '.join(map(str, n))}" + (" (hatched: before)" if before else ""))
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cell", nargs=3, metavar=("SHAPE", "N", "BACKEND"), help=argparse.SUPPRESS)
    ap.add_argument("--profile", nargs=3, metavar=("SHAPE", "N", "BACKEND"))
    ap.add_argument("--tracemalloc", nargs=3, metavar=("SHAPE", "N", "BACKEND"))
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--shapes", default=",".join(depth_curve.SHAPES))
    ap.add_argument("--backends", default=",".join(depth_curve.BACKENDS))
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--plot", metavar="PNG", help="plot the measurements (with --replot: of a --json file)")
    ap.add_argument("--replot", metavar="JSON", help="plot a --json file again instead of measuring")
    ap.add_argument("--before", metavar="JSON", help="an earlier --json file to plot next to it")
    args = ap.parse_args()
    before = json.load(open(args.before)) if args.before else None
    if args.replot:
        plot(json.load(open(args.replot)), args.plot or "depth_phases.png", before)
        return
    if args.cell:
        shape, n, backend = args.cell
        print(json.dumps(phases(shape, int(n), backend)))
        return
    if args.profile:
        import cProfile
        import pstats

        from labrys.util.deep import run_deep
        shape, n, backend = args.profile
        prof = cProfile.Profile()
        # profile on the deep-stack worker, where the passes run
        run_deep(lambda: (prof.enable(), phases(shape, int(n), backend), prof.disable()))
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return
    if args.tracemalloc:
        import tracemalloc
        shape, n, backend = args.tracemalloc
        tracemalloc.start(8)
        phases(shape, int(n), backend)
        snap = tracemalloc.take_snapshot()
        print(f"peak traced {tracemalloc.get_traced_memory()[1] / 2**20:.0f} MB; live at the end:")
        for stat in snap.statistics("lineno")[:25]:
            print(stat)
        return
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        for shape in args.shapes.split(","):
            for backend in args.backends.split(","):
                r = measure(shape, n, backend, args.timeout)
                results.append({"shape": shape, "n": n, "backend": backend, **r})
                if "error" in r:
                    print(f"{shape:12} {n:>7} {backend:9} {r['error']}", flush=True)
                    continue
                cells = " ".join(f"{p}={r[p]['cpu']:.2f}" for p in PHASES if p in r)
                total = sum(r[p]["cpu"] for p in PHASES if p in r)
                print(f"{shape:12} {n:>7} {backend:9} total={total:.2f}s {cells} "
                      f"peak={max(r[p]['peak_mb'] for p in PHASES if p in r):.0f}MB", flush=True)
                if args.json:
                    with open(args.json, "w") as fh:
                        json.dump(results, fh, indent=1)
    if args.plot:
        plot(results, args.plot, before)


if __name__ == "__main__":
    main()
