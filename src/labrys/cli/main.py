"""The ``labrys`` command line.

Every user error prints ``file:line:col: error: message``, the source line
and a caret, and exits 1; ``--debug`` shows the Python traceback instead.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Sequence

from ..ad import REGISTRY
from ..api import load
from ..backends import BACKENDS, DEFAULT
from ..context import run_scope, set_fast_math, set_max_depth, set_threads
from ..errors import LabrysError, format_error
from ..memory import set_max_memory
from ..values import format_value
from ..version import __version__
from .arguments import choose_overload
from .bench import add_bench
from .progress import progress


def cmd_run(args: argparse.Namespace) -> int:
    module = load(args.file, backend=args.backend)
    start = time.perf_counter()
    if args.fn is None:
        if "main" not in module.names():
            raise LabrysError(f"{args.file} has no 'main'; name a function: labrys run FILE FN ARGS...")
        sig, value = module.function("main").select(())
    else:
        sig, value = choose_overload(module.function(args.fn), args.args, module)
    with progress(f"compiling {args.file}"):
        module.backend.prepare(sig)
    with run_scope(module.backend.name):
        result = module.backend.call(sig, value)
    sys.stdout.flush()
    if args.fn is not None:
        print(format_value(result, top=False))
    if args.timings:
        total = time.perf_counter() - start
        print(f"labrys: {module.backend.name} backend: compile {module.compile_seconds:.3f} s, "
              f"run {total - module.compile_seconds:.3f} s", file=sys.stderr)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Every file is checked; each error is reported; the exit code says if any failed."""
    failed = 0
    for path in args.files:
        try:
            module = load(path, backend="interp")
        except LabrysError as exc:
            if args.debug:
                raise
            failed += 1
            sys.stdout.flush()
            print(format_error(exc.message, exc.span, exc.notes), file=sys.stderr)
            continue
        if not args.quiet:
            print(f"{path}: ok ({len(module.names())} functions)")
    if failed and len(args.files) > 1:
        print(f"labrys: {failed} of {len(args.files)} files have errors", file=sys.stderr)
    return 1 if failed else 0


def cmd_fmt(args: argparse.Namespace) -> int:
    from ..api import _read_source
    from ..syntax.fmt import format_source, write_atomically

    status = 0
    for path in args.files:
        text, name = _read_source(Path(path))
        out = format_source(text, name)
        if args.check:
            if out != text:
                print(f"{path}: not in canonical form", file=sys.stderr)
                status = 1
        elif args.write:
            if out != text:
                write_atomically(path, out)
        else:
            sys.stdout.write(out)
    return status


def cmd_show(args: argparse.Namespace) -> int:
    from .show import show

    return show(args.file, args.fn, args.stages, args.deriv, not args.unoptimised, args.timings, args.wrt)


def cmd_prims(args: argparse.Namespace) -> int:
    from .prims import reference

    sys.stdout.write(reference(args.markdown))
    return 0


def cmd_algorithms(args: argparse.Namespace) -> int:
    from .show import algorithms_table

    print(algorithms_table(args.json))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from ..verify import columns, passed, report, verify

    with progress(f"verifying {args.file}") as say:
        only = args.algorithms.split(",") if args.algorithms else None
        rows = verify(load(args.file, backend=args.backend), args.fn, points=args.points, seed=args.seed,
                      tol=args.tol, progress=say, only=only)
    print(report(rows, columns(only), args.json, args.seed))
    return 0 if passed(rows) else 1


def cmd_adbench(args: argparse.Namespace) -> int:
    from ..adbench import RUNNERS

    with progress(f"ADBench {args.problem} on {args.datafile}"):
        if args.wrt and args.problem not in ("gmm", "lstm"):
            raise LabrysError(f"--wrt applies to gmm and lstm (their data is an argument), not {args.problem}")
        more = {"wrt": True} if args.wrt else {}
        result = RUNNERS[args.problem](args.datafile, args.deriv, backend=args.backend, **more)
    for line in result.summary():
        print(line)
    if args.out:  # one folder per problem: gmm's and ba's test.txt never meet
        for path in result.write(args.datafile, Path(args.out) / args.problem):
            print(f"wrote {path}")
    return 0 if result.ok else 1


def cmd_cost(args: argparse.Namespace) -> int:
    from .. import cost

    try:
        sizes = [int(k) for k in args.sizes.split(",")]
    except ValueError:
        raise LabrysError(f"--sizes takes comma-separated integers, got {args.sizes!r}") from None
    cost.check_sizes(sizes)
    if args.plot:
        cost.plotting_available()
    with progress(f"measuring {args.fn}") as say:
        report = cost.measure(load(args.file, backend="interp"), args.fn, args.deriv or ["rev"], sizes, progress=say)
    if args.json:
        print(json.dumps({"function": report.function, "sizes": report.sizes,
                          "primal": {"ops": report.primal.ops, "seconds": report.primal.seconds},
                          **{c.derivation: {"ops": c.ops, "seconds": c.seconds, "slope": report.slope(c),
                                            "verdict": report.verdict(c)} for c in report.derived}}, indent=2))
    else:
        print(cost.table(report))
    if args.plot:
        cost.plot(report, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr if args.json else sys.stdout)
    return 0


def demo_source() -> str:
    return resources.files("labrys").joinpath("demo.ks").read_text(encoding="utf-8")


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(demo_source(), args.backend)


def cmd_cache(args: argparse.Namespace) -> int:
    """Note [Cache ownership]: clear deletes only what labrys wrote."""
    from ..backends.cache_folder import cache_info, clear_cache

    info = clear_cache() if args.action == "clear" else cache_info()
    if info.problem:
        print(f"{info.root}: not usable ({info.problem}); the compiled backend compiles without a disk cache")
        return 0
    what = f"{info.modules} compiled module{'s' * (info.modules != 1)}, {info.size / 1e6:.1f} MB"
    kept = f"; {info.others} other entr{'ies' if info.others != 1 else 'y'} there, not labrys's, kept" \
        if info.others else ""
    if args.action == "clear":
        print(f"cleared {info.root}: {what}{kept}")
    else:
        print(f"{info.root}: {what}{kept.replace(', kept', ' (clear keeps them)')}")
    return 0


def add_backend(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help=f"interp, python or compiled (default: $LABRYS_BACKEND, else {DEFAULT})")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="labrys", description="Run, check and differentiate .ks programs.")
    p.add_argument("--version", action="version", version=f"labrys {__version__}")
    p.add_argument("--debug", action="store_true",
                   help="show Python tracebacks for errors, and lint the code after every AD pass")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also show what labrys does behind the scenes: functions that run on the python backend "
                        "instead of compiled, compile cache repairs (or set LABRYS_VERBOSE=1)")
    p.add_argument("--max-depth", type=int, metavar="N",
                   help="user functions may call each other at most N deep (default 200000, or "
                        "$LABRYS_MAX_DEPTH); deeper is an error naming the function")
    p.add_argument("--max-memory", metavar="SIZE",
                   help="stop a run when the process would hold more than SIZE of memory (e.g. 500M, 2G; or "
                        "$LABRYS_MAX_MEMORY; no limit by default): an error naming the function")
    p.add_argument("--threads", type=int, metavar="N", dest="labrys_threads",
                   help="the compiled backend may run a gradient's outer reverse sum on N threads (default every "
                        "core, or $LABRYS_THREADS; 1 is serial; otherwise results differ from serial by float "
                        "reassociation)")
    p.add_argument("--fast-math", action="store_true",
                   help="the compiled backend may reassociate float sums and fuse multiply-adds, so that loops "
                        "such as dot products use vector instructions (or $LABRYS_FAST_MATH=1; never assumes "
                        "no NaN/Inf; results differ from the default by rounding only)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a .ks program (its main, or FN on ARGS)",
                         description="Run main, or call FN with ARGS (each a .ks expression or JSON).")
    run.add_argument("file", metavar="FILE")
    run.add_argument("fn", metavar="FN", nargs="?", help="function to call, e.g. f or '[f Float]'")
    run.add_argument("args", metavar="ARGS", nargs="*", help="arguments: .ks literals/expressions or JSON")
    run.add_argument("--timings", action="store_true", help="print compile and run time to stderr")
    add_backend(run)
    run.set_defaults(handler=cmd_run)

    check = sub.add_parser("check", help="parse and type-check .ks files",
                           description="Parse and type-check; report the first error of each file.")
    check.add_argument("files", metavar="FILE", nargs="+")
    check.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    check.set_defaults(handler=cmd_check)

    fmt = sub.add_parser("fmt", help="lay out .ks files canonically, keeping every comment",
                         description="Print (or with --write rewrite) each file in canonical layout; "
                         "comments are kept, tokens are kept as written, and the program is unchanged.")
    fmt.add_argument("files", metavar="FILE", nargs="+")
    fmt.add_argument("-w", "--write", action="store_true",
                     help="rewrite the files in place (atomically: a temporary file, then a rename)")
    fmt.add_argument("--check", action="store_true", help="exit 1 if the file is not in canonical layout")
    fmt.set_defaults(handler=cmd_fmt)

    show = sub.add_parser("show", help="print a derived function, or the passes that make it, as .ks",
                          description="Print the derived function [DERIV FN] as .ks, after the generated functions "
                                      "it calls; with --stages, the program after every pass of DERIV's pipeline "
                                      "(without --deriv: the twelve stages of the 2019 Knossos notes' Demo, "
                                      "forward and reverse mode).")
    show.add_argument("file", metavar="FILE")
    show.add_argument("fn", metavar="FN", help="the function, e.g. f or '[f Float]'")
    show.add_argument("--stages", action="store_true", help="print the program after every pass")
    show.add_argument("--deriv", metavar="NAME",
                      help="the derivation (default: the default gradient, rev or sufrev, and why; with --stages the "
                           f"2019 Demo's fwd and rev): {', '.join(REGISTRY.names(internal=True))} "
                           "(labrys algorithms lists them)")
    show.add_argument("--unoptimised", action="store_true", help="print the derivation before optimisation")
    show.add_argument("--wrt", metavar="X,Y", help="differentiate with respect to these parameters only: "
                      "[rev FN (wrt X Y)] (docs/activity.md)")
    show.add_argument("--timings", action="store_true", help="with --stages: the time each pass took")
    show.set_defaults(handler=cmd_show)

    algs = sub.add_parser("algorithms", help="list every AD algorithm: paper, calling convention, status",
                          description="Every registered derivation: its name, the paper and figure it implements, "
                                      "how [NAME f] is called, the programs it accepts, and whether it is "
                                      "implemented yet.")
    algs.add_argument("--json", action="store_true", help="machine-readable output")
    algs.set_defaults(handler=cmd_algorithms)

    prims = sub.add_parser("prims", help="the primitive reference: every primitive, what it does, its facts",
                           description="Every primitive of the prelude, by section, with its documentation "
                                       "(docs/primitives.md is the --markdown output).")
    prims.add_argument("--markdown", action="store_true", help="a Markdown page with each primitive's facts")
    prims.set_defaults(handler=cmd_prims)

    verify = sub.add_parser("verify", help="check derivatives against finite differences and each other",
                            description="For every function (or FN): each derivation against central finite "
                                        "differences, forward against reverse (dot-product test), at random "
                                        "points. Exits 1 if any check fails.")
    verify.add_argument("file", metavar="FILE")
    verify.add_argument("fn", metavar="FN", nargs="?")
    verify.add_argument("--json", action="store_true", help="machine-readable output")
    verify.add_argument("--points", "--trials", type=int, default=3, dest="points",
                        help="random points per function, besides the edge points 0, ±1, 1e-8, 1e4 (default 3)")
    verify.add_argument("--seed", type=int, default=0, help="seed of the random points and directions (default 0)")
    verify.add_argument("--algorithms", metavar="NAMES",
                        help="check only these derivations (comma-separated, e.g. fwd,rev; default: every one)")
    verify.add_argument("--tol", type=float, default=1e-6,
                        help="relative error allowed beyond the estimated rounding and truncation (default 1e-6)")
    add_backend(verify)
    verify.set_defaults(handler=cmd_verify)

    cst = sub.add_parser("cost", help="how a derivative's cost grows with the input size",
                         description="Op counts (and wall time) of FN and its derivatives for inputs whose vector "
                                     "dimensions and Integers are each size n; the fitted log-log slope of derivative "
                                     "against primal cost, and a verdict.")
    cst.add_argument("file", metavar="FILE")
    cst.add_argument("fn", metavar="FN")
    cst.add_argument("--deriv", action="append", metavar="NAME", help="derivation (repeatable; default rev)")
    cst.add_argument("--sizes", default="10,100,1000", help="comma-separated sizes n (default 10,100,1000)")
    cst.add_argument("--plot", metavar="PNG", help="draw the cost curves (needs matplotlib)")
    cst.add_argument("--json", action="store_true", help="machine-readable output")
    cst.set_defaults(handler=cmd_cost)

    adb = sub.add_parser("adbench", help="an ADBench objective and its derivative from a data file",
                         description="Read an ADBench data file, print the objective, its gradient or Jacobian "
                                     "(ADBench's layout) and a finite-difference check; --out writes ADBench's "
                                     "output files.")
    adb.add_argument("problem", metavar="PROBLEM", choices=["gmm", "lstm", "ba", "hand"],
                     help="gmm, lstm, ba or hand (the simple variant; the model is the folder 'model' beside DATAFILE)")
    adb.add_argument("datafile", metavar="DATAFILE")
    adb.add_argument("--deriv", metavar="NAME",
                     help="derivation to use: gmm and lstm take a reverse one (default: the default gradient, rev or "
                          "sufrev, docs/split.md); ba and hand any forward "
                          f"or reverse one ({', '.join(REGISTRY.names('forward') + REGISTRY.names('reverse'))}; "
                          "default rev for ba, fwd for hand)")
    adb.add_argument("--wrt", action="store_true",
                     help="gmm, lstm: differentiate with respect to the parameters only, not the data "
                          "(gmm: alphas, means, icf; lstm: main_params, extra_params), so the data gets no "
                          "cotangent code (docs/activity.md)")
    adb.add_argument("--out", metavar="DIR",
                     help="write ADBench's <name>_F_labrys.txt and <name>_J_labrys.txt into DIR/PROBLEM/")
    add_backend(adb)
    adb.set_defaults(handler=cmd_adbench)

    add_bench(sub)

    demo = sub.add_parser("demo", help="run the bundled example and show what labrys does",
                          description="Run the bundled demo program: its source, values and derivatives.")
    add_backend(demo)
    demo.set_defaults(handler=cmd_demo)

    cache = sub.add_parser("cache", help="the compiled backend's cache: info or clear",
                           description="Compiled modules live in $LABRYS_CACHE_DIR or ~/.cache/labrys (in its "
                                       "labrys-cache/ subfolder when that folder holds other files); clear deletes "
                                       "only the files labrys wrote.")
    cache.add_argument("action", choices=["info", "clear"])
    cache.set_defaults(handler=cmd_cache)
    return p


@contextlib.contextmanager
def library_log(verbose: bool) -> Iterator[None]:
    """With --verbose, the library's INFO log (``labrys.*`` loggers) on stderr as notes."""
    if not verbose:
        yield
        return
    logger, level = logging.getLogger("labrys"), logging.getLogger("labrys").level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("labrys: note: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.debug:  # Note [Pass driver]: lint every pass of every derivation
        os.environ.setdefault("LABRYS_LINT", "1")
    try:
        if args.max_depth is not None:
            set_max_depth(args.max_depth)
        if args.max_memory is not None:
            set_max_memory(args.max_memory)
        if args.labrys_threads is not None:
            set_threads(args.labrys_threads)
        if args.fast_math:
            set_fast_math(True)
        with library_log(args.verbose or os.environ.get("LABRYS_VERBOSE", "") not in ("", "0")):
            return args.handler(args)
    except LabrysError as exc:
        if args.debug:
            raise
        sys.stdout.flush()
        print(format_error(exc.message, exc.span, exc.notes), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("labrys: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug in labrys: say so, without a traceback
        if args.debug:
            raise
        print(f"labrys: internal error: {type(exc).__name__}: {exc}\n"
              "  (this is a bug in labrys; run with --debug for a traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
