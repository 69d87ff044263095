"""``labrys bench``: its options and its command (the run itself is :mod:`labrys.bench`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import LabrysError
from .progress import progress


def cmd_bench(args: argparse.Namespace) -> int:
    from ..bench import Options, bench, find_suite, update_readme

    if args.summary:  # README's block from a finished run's summary.md
        results = Path(args.out) if args.out else find_suite(args.suite) / "results"
        readme = find_suite(args.suite).parent / "README.md"
        update_readme(results / "summary.md", readme)
        print(f"updated {readme} from {results / 'summary.md'}")
        return 0
    budget = args.budget if args.budget is not None else 2.0 if args.quick else 10.0
    if args.repeat < 1 or budget <= 0 or args.time_limit <= 0:
        raise LabrysError("--repeat takes a positive whole number, --budget and --time-limit a positive number "
                          "of seconds")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("no charts: matplotlib is not installed (pip install 'labrys[plot]'); results.md only")
    command = "labrys bench " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["bench"] else "labrys bench"
    with progress("benchmarking") as say:
        workload = [""]

        def show(line: str) -> None:  # "gmm_d10_K25: labrys rev (compiled) gradient …"
            if not line.startswith(" "):
                workload[0] = line.split(" (")[0] + ": "
            say(workload[0] + line.strip() if line.startswith(" ") else line)
        options = Options(repeat=args.repeat, budget=budget, quick=args.quick, backends=args.backend,
                          peers=args.peer, derivations=args.deriv, data=args.data, threads=args.threads,
                          fast_math=not args.no_fast_math, progress=show)
        results, _ = bench(args.workloads, options, args.out, args.suite, command.strip(),
                           time_limit=args.time_limit, threads_rows=not args.no_default_threads,
                           written=lambda paths: print("\n".join(f"wrote {p}" for p in paths), flush=True))
    wrong = [f"{r.workload.name}: {row.name}" for r in results for row in r.rows if row.wrong]
    for w in wrong:
        print(f"disagrees with the reference: {w}", file=sys.stderr)
    return 1 if wrong else 0



def add_bench(sub: argparse._SubParsersAction) -> None:
    bch = sub.add_parser("bench", help="time labrys's derivatives beside JAX, PyTorch, autograd and NumPy",
                         description="Run the benchmark workloads (Table 1 of Smeding & Vákár, ADBench GMM, BA, "
                                     "LSTM): every reverse derivation on every backend beside the peers, in one "
                                     "process; check that all gradients agree; write results.md and PNG charts. "
                                     "Peers come with pip install -e '.[bench]'.")
    bch.add_argument("workloads", metavar="WORKLOAD", nargs="*",
                     help="workloads or groups (table1, adbench, gmm, lstm, ba); default: all")
    bch.add_argument("--repeat", type=int, default=5, help="timed samples per cell after a warm-up (default 5)")
    bch.add_argument("--budget", type=float,
                     help="seconds of timing per cell, compiling not counted; a labrys call estimated from smaller "
                          "sizes to take longer is not run (default 10; 2 with --quick)")
    bch.add_argument("--time-limit", type=float, default=1800.0, metavar="SECONDS",
                     help="the whole run's limit: cells not started by then say so (default 1800)")
    bch.add_argument("--backend", action="append", metavar="B",
                     help="labrys backend: interp, python, compiled or all (repeatable; default: compiled)")
    bch.add_argument("--deriv", action="append", metavar="NAME",
                     help="reverse derivation, or all (repeatable; default: the final ones, rev sufrev deltarev "
                          "dualrevtape chadrev)")
    bch.add_argument("--peer", action="append", metavar="NAME",
                     help="peer to run: NumPy, 'JAX (jit)', PyTorch, autograd (repeatable; default: all)")
    bch.add_argument("--quick", action="store_true", help="small sizes: the whole run takes seconds")
    bch.add_argument("--threads", type=int, default=1,
                     help="threads for PyTorch and JAX in the main rows (default 1, like labrys; 0: their own "
                          "defaults); labrys's own are `labrys --threads N bench …`")
    bch.add_argument("--no-fast-math", action="store_true",
                     help="compile labrys's code without reassociation (default: with it, as --fast-math; "
                          "see docs/backends.md, Fast math)")
    bch.add_argument("--no-default-threads", action="store_true",
                     help="skip the rows at the frameworks' default threads (a child process)")
    bch.add_argument("--summary", action="store_true",
                     help="run nothing: put the summary.md of --out (default benchmarks/results) into README.md "
                          "between its markers")
    bch.add_argument("--out", metavar="DIR",
                     help="where results.md and the charts go (default ./labrys-bench; the committed results "
                          "are benchmarks/results: name it to refresh them)")
    bch.add_argument("--data", metavar="DIR", help="ADBench data (default: the clone's data/adbench, or "
                                                    "$LABRYS_ADBENCH_DATA)")
    bch.add_argument("--suite", metavar="DIR", help="the benchmarks folder (default: the clone's benchmarks/)")
    bch.set_defaults(handler=cmd_bench)
