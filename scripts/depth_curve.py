"""How labrys's cost grows with program depth: 10^k nested lets, calls, ifs
(tail and argument position), lambdas, tuples, tuple types and additions, on
every backend.  Each cell (shape, size, backend) runs in a fresh process:
load (parse, check) the program, call ``f`` (compiling it), and check the
answer; the CPU time of the process (all threads; robust to a shared machine,
where wall time mostly measures the neighbours), the wall time and the peak
memory are recorded.

    python scripts/depth_curve.py                      # sizes 1e3,3e3,1e4,3e4,1e5
    python scripts/depth_curve.py --sizes 1000,10000 --shapes lets,calls --backends interp
    python scripts/depth_curve.py --plot docs/img/depth_curve.png --json docs/img/depth_curve.json

Used for docs/reliability.md; the suite runs every shape at 10^4 (tests/test_depth_costs.py).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def lets(n: int) -> tuple[str, float, float]:
    body = "".join(f"(let (x{i} (add x{i - 1} 1.0)) " for i in range(1, n + 1)) + f"x{n}" + ")" * n
    return f"(def f Float (x0 : Float) {body})", 0.5, 0.5 + n


def calls(n: int) -> tuple[str, float, float]:
    return ("(def inc Float (x : Float) (add x 1.0))\n"
            f"(def f Float (x : Float) {'(inc ' * n}x{')' * n})"), 0.5, 0.5 + n


def ifs(n: int) -> tuple[str, float, float]:
    body = "".join(f"(if (lt x {i}.0) {i}.0 " for i in range(1, n + 1)) + "0.0" + ")" * n
    return f"(def f Float (x : Float) {body})", n - 1.0, float(n)


def arg_ifs(n: int) -> tuple[str, float, float]:
    body = "(add 1.0 (if (lt x 0.0) 0.0 " * n + "x" + "))" * n
    return f"(def f Float (x : Float) {body})", 0.5, 0.5 + n


def lambdas(n: int) -> tuple[str, float, float]:
    body = "".join(f"(let (g{i} (lam (y{i} : Float) " for i in range(1, n + 1)) + f"(add y{n} 1.0)"
    body += "".join(f")) (g{i} y{i - 1}))" for i in range(n, 0, -1))
    return f"(def f Float (y0 : Float) {body})", 0.5, 1.5


def tuples(n: int) -> tuple[str, float, float]:
    body = "(get$1$2 (tuple (add " * n + "x" + " 1.0) 0.0))" * n
    return f"(def f Float (x : Float) {body})", 0.5, 0.5 + n


def tuple_types(n: int) -> tuple[str, float, float]:
    ty = "(Tuple Float " * n + "Float" + ")" * n
    value = "(tuple x " * n + "x" + ")" * n
    return (f"(def mk {ty} (x : Float) {value})\n"
            "(def f Float (x : Float) (get$1$2 (mk x)))"), 0.5, 0.5


def adds(n: int) -> tuple[str, float, float]:
    return f"(def f Float (x : Float) {'(add x ' * n}x{')' * n})", 0.5, 0.5 * (n + 1)


SHAPES = {"lets": lets, "calls": calls, "ifs": ifs, "arg_ifs": arg_ifs, "lambdas": lambdas,
          "tuples": tuples, "tuple_types": tuple_types, "adds": adds}
BACKENDS = ("interp", "python", "compiled")


def cell(shape: str, n: int, backend: str) -> None:
    """Run one cell in this process; print {seconds, mb} as JSON."""
    import resource

    import labrys

    text, arg, want = SHAPES[shape](n)
    start, cpu = time.perf_counter(), time.process_time()
    m = labrys.load(text, backend=backend)
    got = m.f(arg)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert got == want, (got, want)
    mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": cpu, "wall": seconds, "mb": mb}))


def measure(shape: str, n: int, backend: str, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--cell", shape, str(n), backend]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "mb": None, "error": f"timeout > {timeout:g} s"}
    if proc.returncode != 0:
        return {"seconds": None, "mb": None, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def plot(results: list[dict], path: str) -> None:
    """CPU seconds (top row) and peak resident MB (bottom row) against n, log-log,
    one column per backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = (("seconds", "CPU seconds (load + first call)"), ("mb", "peak resident MB"))
    fig, axes = plt.subplots(len(rows), len(BACKENDS), figsize=(5 * len(BACKENDS), 8), sharey="row")
    for (key, label), line in zip(rows, axes):
        for ax, backend in zip(line, BACKENDS):
            for shape in SHAPES:
                pts = sorted((r["n"], r[key]) for r in results
                             if r["shape"] == shape and r["backend"] == backend and r.get(key) is not None)
                if pts:
                    xs, ys = zip(*pts)
                    ax.loglog(xs, ys, marker="o", label=shape)
            ax.set_title(backend)
            ax.set_xlabel("nesting depth n")
            ax.grid(True, which="both", alpha=0.3)
        line[0].set_ylabel(label)
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def table(results: list[dict]) -> str:
    """The measurements as a Markdown table: CPU seconds per size, peak MB at the largest."""
    sizes = sorted({r["n"] for r in results})
    cell = {(r["shape"], r["n"], r["backend"]): r for r in results}

    def fmt(r, key, spec):
        return "-" if r is None or r.get(key) is None else format(r[key], spec)
    head = " / ".join(f"10^{len(str(n)) - 1}" for n in sizes)
    lines = [f"| shape | {' | '.join(f'{b} {head}' for b in BACKENDS)} | peak MB at 10^{len(str(sizes[-1])) - 1} "
             f"({' / '.join(BACKENDS)}) |", "| --- " * (len(BACKENDS) + 2) + "|"]
    for shape in SHAPES:
        cpu = [" / ".join(fmt(cell.get((shape, n, b)), "seconds", ".2f") for n in sizes) for b in BACKENDS]
        mb = " / ".join(fmt(cell.get((shape, sizes[-1], b)), "mb", ".0f") for b in BACKENDS)
        lines.append(f"| {shape} | {' | '.join(cpu)} | {mb} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cell", nargs=3, metavar=("SHAPE", "N", "BACKEND"), help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per cell (default 300)")
    ap.add_argument("--json", metavar="FILE", help="write the measurements here")
    ap.add_argument("--plot", metavar="PNG", help="draw seconds against n, one panel per backend")
    ap.add_argument("--replot", metavar="JSON", help="only draw --plot (and print the table) from earlier measurements")
    args = ap.parse_args()
    if args.replot:
        with open(args.replot) as fh:
            results = json.load(fh)
        if args.plot:
            plot(results, args.plot)
        print(table(results))
        return
    if args.cell:
        shape, n, backend = args.cell
        cell(shape, int(n), backend)
        return
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        for shape in args.shapes.split(","):
            for backend in args.backends.split(","):
                r = {"shape": shape, "n": n, "backend": backend, **measure(shape, n, backend, args.timeout)}
                results.append(r)
                shown = (f"{r['seconds']:.2f} s CPU {r['wall']:.2f} s wall {r['mb']:.0f} MB"
                         if r["seconds"] is not None else r["error"])
                print(f"{shape:12} {n:>7} {backend:9} {shown}", flush=True)
                if args.json:  # after every cell: a long run can be stopped and still plotted
                    with open(args.json, "w") as fh:
                        json.dump(results, fh, indent=1)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
