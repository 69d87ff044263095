"""The benchmark's outputs: ``results.md`` (the machine, the issue-6 targets, one
table per workload) and a PNG chart per workload (when matplotlib is installed)."""
from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from .run import LIMIT, TOLERANCE, Options, Result, Row
from .timing import Timing, seconds

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


def cell(t: Timing | None) -> str:
    if t is None:
        return "—"
    if t.interrupted:
        return f"> {seconds(t.median)}"
    return f"≈ {seconds(t.median)} (est.)" if t.estimated else seconds(t.median)


def _ratio(row: Row) -> str:
    r = row.ratio
    if r is None or row.gradient.interrupted or row.objective.interrupted:
        return "—"
    return f"≈ {r:.2g}" if row.gradient.estimated or row.objective.estimated else _factor(r)


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
              "", "| implementation | objective | gradient | gradient / objective | compile | max rel. diff | note |",
              "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for row in result.rows:
        note = row.status or row.note
        lines.append(f"| {row.name} | {cell(row.objective)} | {cell(row.gradient)} | {_ratio(row)} | "
                     f"{seconds(row.compile) if row.compile is not None else '—'} | {_diff(row, result)} | {note} |")
    return lines + [""]


def _best(result: Result, what: str, backend: str | None = None) -> Row | None:
    """The fastest labrys row for ``what``, measured rows before estimated ones."""
    rows = [r for r in result.rows if r.labrys and getattr(r, what) is not None and not r.status
            and (backend is None or r.backend == backend)]

    def key(r: Row) -> tuple:
        t = getattr(r, what)
        return t.estimated or t.interrupted, t.median
    return min(rows, key=key, default=None)


def _factor(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _label(row: Row, what: str) -> str:
    """A row's name; a labrys objective belongs to the backend, not to a derivation."""
    return f"labrys ({row.backend})" if what == "objective" and row.labrys else row.name


def _peer(result: Result, name: str) -> Row | None:
    return next((r for r in result.rows if r.name == name and not r.status), None)


def targets(results: list[Result]) -> list[str]:
    """Issue 6's three targets, as measured here: the best labrys row against the peer."""
    lines = ["| target | workload | labrys (best row) | against | ratio | met? |",
             "| --- | --- | --- | --- | ---: | --- |"]

    def line(target: str, result: Result, row: Row | None, what: str, other: Row | None, limit: float,
             other_what: str | None = None) -> None:
        if row is None or other is None:
            missing = "no labrys row" if row is None else "peer not run"
            lines.append(f"| {target} | {result.workload.name} | — | — | — | not measured ({missing}) |")
            return
        mine, theirs = getattr(row, what), getattr(other, other_what or what)
        ratio = mine.median / theirs.median
        approx = "> " if mine.interrupted else "≈ " if mine.estimated or theirs.estimated else ""
        verdict = "met" if ratio <= limit else f"missed by {_factor(ratio / limit)}×"
        lines.append(f"| {target} | {result.workload.name} | {_label(row, what)}: {cell(mine)} | "
                     f"{_label(other, other_what or what)}: "
                     f"{cell(theirs)} | {approx}{_factor(ratio)} | {verdict} |")

    for result in results:
        if result.instance is None:
            continue
        compiled = _best(result, "objective", "compiled")
        line("objective ≤ 2× NumPy (compiled backend)", result, compiled or _best(result, "objective"),
             "objective", _peer(result, "NumPy"), 2.0)
    for result in results:
        if result.instance is None or not {"gmm", "lstm"} & set(result.workload.groups):
            continue
        best = _best(result, "gradient")
        line("gradient / objective ≤ 4", result, best, "gradient", best, 4.0, "objective")
        if result.workload.name in ("gmm_d10_K25", "lstm_l2_c1024"):
            for peer in ("JAX (jit)", "PyTorch"):
                line(f"gradient faster than {peer}", result, best, "gradient", _peer(result, peer), 1.0)
    return lines


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
        best = _best(r, "gradient")
        lines.append(f"| {r.workload.name} | {unit} | {r.workload.paper['TH']} µs | {r.workload.paper['ad']} µs | "
                     f"{per(best)} ({best.name if best else '—'}) | {per(_peer(r, 'JAX (jit)'))} | "
                     f"{per(_peer(r, 'PyTorch'))} |")
    return lines


def _threads(options: Options) -> str:
    if options.threads <= 0:
        return "The peers use their frameworks' default threads."
    return (f"The peers run on {options.threads} thread{'s' * (options.threads != 1)} (PyTorch's "
            f"set_num_threads, XLA's Eigen pool), as labrys and Smeding & Vákár's Table 1 do (`--threads 0` for "
            f"the frameworks' defaults; on this shared 2-core machine PyTorch's two OpenMP threads made "
            f"GMM 20× slower, JAX's made it about 2× faster).")


def markdown(results: list[Result], options: Options, command: str) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# labrys benchmarks", "", f"Made by `{command}` on {now}.", ""] + machine() + [
        "",
        f"Times are per call: the median of up to {options.repeat} samples after a warm-up call, all in one "
        f"process (calls of microseconds are timed in batches). Each cell (one implementation's objective "
        f"or gradient) has a budget of {options.budget:g} s: it stops sampling when the budget is spent, and "
        f"a labrys cell whose call is estimated (from runs at two smaller sizes) to exceed the budget is not run "
        f"and shows the estimate, marked ≈ … (est.); a labrys cell still running after {LIMIT:g}× the budget is "
        f"interrupted and shows > that time. *Compile* is the one-off cost: setup (labrys: load, "
        f"type-check, derive; JAX: tracing) plus what each first call took beyond a later one. *Max rel. diff* "
        f"is max |a − b| / max |b| over the objective and the gradient, against the first row that has them; "
        f"✗ marks a difference above {TOLERANCE:g}. labrys's reverse derivative returns the cotangent of every "
        f"argument (the GMM data points and the LSTM state too); the peers differentiate only what ADBench asks "
        f"for. {_threads(options)}", "", "## Issue 6 targets", ""] + targets(results) + [""]
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
                    guess = t.estimated or t.interrupted
                    ax.barh(i + (k - 0.5) * 0.4, t.median, 0.4, color=colour, hatch="//" if guess else None,
                            alpha=0.5 if guess else 1.0, label=label)
                    label = None
        ax.set_yticks(range(len(rows)), [r.name for r in rows])
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("seconds per call (log scale; hatched: not run, estimated or interrupted)")
        ax.set_title(f"{result.workload.name}: {result.instance.size}", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        path = out / f"{result.workload.name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
