"""The benchmark's outputs: ``results.md`` (the machine, the summary of
:mod:`labrys.bench.summary`, one table per workload), ``summary.md`` (what
README shows) and a PNG chart per workload (when matplotlib is installed)."""
from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from . import summary
from .run import TOLERANCE, Options, Result, Row
from .threads import threads_note
from .timing import seconds

PACKAGES = ("labrys", "numpy", "jax", "jaxlib", "torch", "autograd", "matplotlib")


def machine() -> list[str]:
    """Lines describing where the numbers come from."""
    cpu = _first_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown CPU"
    memory = _first_field("/proc/meminfo", "MemTotal")
    gib = f"{int(memory.split()[0]) / 2 ** 20:.1f} GiB" if memory else "unknown memory"
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} not installed")
    threads = ""
    try:
        import torch
        n = torch.get_num_threads()
        threads = f"; PyTorch uses {n} thread{'s' * (n != 1)}"
    except ImportError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return [f"- Machine: {cpu}, {os.cpu_count()} cores, {gib}; {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}{threads}.",
            f"- Versions: {', '.join(versions)}; labrys commit {_commit()}.",
            f"- Load average (1, 5, 15 min) when the run ended: {load} — the machine is shared, so "
            f"numbers are noisy."]


def _first_field(path: str, key: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


cell = summary.cell


def _ratio(row: Row) -> str:
    r = row.ratio
    if r is None:
        return "—"
    return f"≈ {r:.2g}" if row.gradient.estimated or row.objective.estimated else summary.factor(r)


def _diff(row: Row, result: Result) -> str:
    if row.diff is None:
        return "—"
    text = f"{row.diff:.1e}" if row.diff else "0"
    if row.wrong:
        text = f"✗ {text}"
    elif row.reference and not row.diff:
        text += " (ref.)"
    return text + " (objective only)" if row.values[1] is None and result.references[1] else text


def workload_table(result: Result) -> list[str]:
    w, inst = result.workload, result.instance
    lines = [f"## {w.title}", ""]
    if inst is None:
        return lines + [f"Skipped: {result.skipped}", ""]
    obj_ref, grad_ref = result.references
    lines += [f"`{w.name}`: {inst.size}. Compared with: objective {obj_ref or '—'}, gradient {grad_ref or '—'}.",
              "", "| implementation | threads | objective | gradient | gradient / objective | compile | max rel. diff "
              "| note |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for row in result.rows:
        note = row.status or row.note
        lines.append(f"| {row.name} | {row.threads} | {cell(row.objective)} | {cell(row.gradient)} | {_ratio(row)} | "
                     f"{seconds(row.compile) if row.compile is not None else '—'} | {_diff(row, result)} | {note} |")
    setup = next((r.setup for r in result.rows if r.labrys and r.setup is not None), None)
    if setup is not None:
        lines += ["", f"labrys's objective compiled in {seconds(setup)} (load, type-check, compile, first call beyond "
                      f"a later one); each gradient row's *compile* is its own (derive, compile, first calls)."]
    return lines + [""]


def table1_per_unit(results: list[Result]) -> list[str]:
    """Table 1's programs per unit of n, beside the paper's published times."""
    rows = [r for r in results if r.workload.paper and r.instance is not None]
    if not rows:
        return []
    lines = ["| program | unit | paper: TH | paper: ad | labrys gradient (best row) | JAX (jit) | PyTorch |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        n, unit = r.instance.per_unit

        def per(row: Row | None) -> str:
            return seconds(row.gradient.median / n) if row and row.gradient else "—"  # noqa: B023 (called now)
        best = summary.best(r)
        lines.append(f"| {r.workload.name} | {unit} | {r.workload.paper['TH']} µs | {r.workload.paper['ad']} µs | "
                     f"{per(best)} ({best.name if best else '—'}) | {per(summary.peer(r, 'JAX (jit)'))} | "
                     f"{per(summary.peer(r, 'PyTorch'))} |")
    return lines


def _threads(options: Options) -> str:
    if options.threads <= 0:
        return "The main rows' peers use their frameworks' default threads. " + threads_note()
    return (f"The main rows' peers run on {options.threads} thread{'s' * (options.threads != 1)} (PyTorch's "
            f"set_num_threads, XLA's Eigen pool); the rows marked *· default threads* are the same code at the "
            f"frameworks' default threads, timed in a child process (XLA fixes its threads when JAX is "
            f"imported). " + threads_note())


def _fast_math(options: Options) -> str:
    if not options.fast_math:
        return "labrys's code adds floats in the interpreter's order (`--no-fast-math`)."
    return ("labrys's code is compiled with fast math (the default; `labrys --fast-math`): sums may be "
            "reassociated and multiply-adds fused, so its loops use vector instructions; NaN and infinities keep "
            "their meaning (`--no-fast-math`: the interpreter's order).")


def intro(options: Options, command: str) -> list[str]:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return [f"Made by `{command}` on {now}.", ""] + machine()


def summary_markdown(results: list[Result], options: Options, command: str, cut: str = "") -> str:
    """What README shows: the machine, one line per workload, the targets, every algorithm's ratio."""
    lines = intro(options, command) + ([f"- **{cut}**"] if cut else []) + [
        "", "Median per call, one process (labrys and the peers at 1 thread; *default threads*: JAX's and "
        "PyTorch's own, in a child process). *Compile*: labrys's objective (load, type-check, first call) + all "
        "its gradients (derive, compile, first calls). ≈: estimated from smaller sizes, not run. "
        f"{_fast_math(options)} Full tables: `benchmarks/results/results.md`.", ""] + summary.overview(results) + [
        "", "Issue 15's targets (the best labrys row):", ""] + summary.targets(results)
    per_algorithm = summary.algorithms(results)
    if per_algorithm:
        lines += ["", "Gradient / labrys objective, per reverse algorithm (compiled backend unless named):", ""]
        lines += per_algorithm
    return "\n".join(lines) + "\n"


def markdown(results: list[Result], options: Options, command: str, cut: str = "") -> str:
    lines = ["# labrys benchmarks", ""] + intro(options, command) + ([f"- **{cut}**"] if cut else []) + [
        "",
        f"Times are per call: the median of up to {options.repeat} samples after a warm-up call, all in one "
        f"process (calls of microseconds are timed in batches). Each cell (one implementation's objective "
        f"or gradient) has a budget of {options.budget:g} s: no sample starts that would end past it, and "
        f"a labrys cell whose call is estimated (from runs at two smaller sizes) to exceed the budget is not run "
        f"and shows the estimate, marked ≈ … (est.). Nothing is interrupted: a cell not started before the run's "
        f"time limit says so. *Compile* is the one-off cost, not counted in the budget: setup (labrys: derive "
        f"and compile the gradient; the objective's load, type-check and compile are the line under each table; "
        f"JAX: tracing) plus what the first calls took beyond a later one. *Max rel. diff* "
        f"is max |a − b| / max |b| over the objective and the gradient, against the first row that has them; "
        f"✗ marks a difference above {TOLERANCE:g}. Where a workload names the parameters the peers "
        f"differentiate, labrys's derivations that take `wrt` compute only those cotangents; the others "
        f"compute every argument's. {_threads(options)} {_fast_math(options)}", "", "## Summary",
        ""] + summary.overview(results) + [
        "", "## Issue 15 targets", ""] + summary.targets(results) + [""]
    per_algorithm = summary.algorithms(results)
    if per_algorithm:
        lines += ["## Gradient / objective per reverse algorithm", ""] + per_algorithm + [""]
    per_unit = table1_per_unit(results)
    if per_unit:
        lines += ["## Table 1 of Smeding & Vákár, per unit of n", "",
                  "The paper (GHC 9.2.2, i9-10900K) against Kmett's `ad`; here the gradient time divided by n.",
                  ""] + per_unit + [""]
    for result in results:
        lines += workload_table(result)
    return "\n".join(lines)


def charts(results: list[Result], out: Path) -> list[Path]:
    """One horizontal bar chart per workload (log scale); [] without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    for result in results:
        rows = [r for r in result.rows if r.objective or r.gradient]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(9, 0.5 * len(rows) + 1.5))
        for k, (what, colour) in enumerate((("objective", "tab:blue"), ("gradient", "tab:orange"))):
            label = what
            for i, r in enumerate(rows):
                t = getattr(r, what)
                if t is not None:
                    guess = t.estimated
                    ax.barh(i + (k - 0.5) * 0.4, t.median, 0.4, color=colour, hatch="//" if guess else None,
                            alpha=0.5 if guess else 1.0, label=label)
                    label = None
        ax.set_yticks(range(len(rows)), [r.name for r in rows])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("seconds per call (log scale; hatched: not run, estimated)")
        ax.set_title(f"{result.workload.name}: {result.instance.size}", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        path = out / f"{result.workload.name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
