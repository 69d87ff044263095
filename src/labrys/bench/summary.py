"""The short form of a benchmark run: issue 15's targets, one line per workload,
the gradient/objective ratio of every labrys reverse algorithm, and the block
``labrys bench --summary`` puts into README.md between markers."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import LabrysError
from .run import Result, Row
from .timing import Timing, seconds

BEGIN = "<!-- labrys bench summary: begin (written by `labrys bench --summary`; do not edit) -->"
END = "<!-- labrys bench summary: end -->"


def cell(t: Timing | None) -> str:
    if t is None:
        return "—"
    return f"≈ {seconds(t.median)} (est.)" if t.estimated else seconds(t.median)


def factor(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def measured(row: Row | None, what: str) -> bool:
    return row is not None and not row.status and getattr(row, what) is not None


def peer(result: Result, name: str) -> Row | None:
    return next((r for r in result.rows if r.name == name and not r.status), None)


def best(result: Result, what: str = "gradient") -> Row | None:
    """The fastest labrys row for ``what``, measured rows before estimated ones."""
    rows = [r for r in result.rows if r.labrys and measured(r, what)]
    return min(rows, key=lambda r: (getattr(r, what).estimated, getattr(r, what).median), default=None)


def objective_row(result: Result) -> Row | None:
    """labrys's objective (compiled backend first): one row holding it."""
    rows = [r for r in result.rows if r.labrys and measured(r, "objective") and "·" not in r.name]
    return min(rows, key=lambda r: (r.backend != "compiled", r.objective.median), default=None)


def labrys_compile(result: Result) -> str:
    """The objective's compile time and the sum of the gradients' (labrys, main rows)."""
    rows = [r for r in result.rows if r.labrys and "·" not in r.name]
    setup = next((r.setup for r in rows if r.setup is not None), None)
    grads = sum(r.compile or 0.0 for r in rows if r.gradient is not None or r.status.startswith("error in"))
    if setup is None:
        return "—"
    return f"{seconds(setup)} + {seconds(grads)}"


def targets(results: list[Result]) -> list[str]:
    """Issue 15's targets (Deliver 6), as measured: the best labrys row against the mark."""
    lines = ["| target | labrys (best row) | against | ratio | met? |", "| --- | --- | --- | ---: | --- |"]
    by_name = {r.workload.name: r for r in results if r.instance is not None}

    def line(target: str, mine: Row | None, value: float | None, against: str, limit: float, approx: bool) -> None:
        if mine is None or value is None:
            lines.append(f"| {target} | {'—' if mine is None else mine.name} | {against or '—'} | — | "
                         f"not measured |")
            return
        ratio = mine.gradient.median / value
        verdict = "met" if ratio <= limit else f"missed by {factor(ratio / limit)}×"
        lines.append(f"| {target} | {mine.name}: {cell(mine.gradient)} | {against} | "
                     f"{'≈ ' if approx or mine.gradient.estimated else ''}{factor(ratio)} | {verdict} |")

    def against_peer(target: str, result: Result, name: str, limit: float) -> None:
        other = peer(result, name)
        mine = best(result)
        ok = measured(other, "gradient")
        line(target, mine, other.gradient.median if ok else None,
             f"{name}: {cell(other.gradient)}" if ok else name, limit, ok and other.gradient.estimated)

    for name in ("gmm_d10_K25", "gmm_d64_K10", "lstm_l2_c1024", "ba1"):
        result = by_name.get(name)
        if result is None:
            continue
        what = "Jacobian" if name == "ba1" else "gradient"
        for jax in ("JAX (jit)", "JAX (jit) · default threads"):
            against_peer(f"{name} {what} ≤ 1× {jax}", result, jax, 1.0)
        if name.startswith("gmm"):
            obj = objective_row(result)
            line(f"{name} gradient ≤ 3× labrys objective", best(result),
                 obj.objective.median if obj else None,
                 f"labrys objective: {cell(obj.objective)}" if obj else "", 3.0, False)
    if "scalar_mult" in by_name:
        mine = best(by_name["scalar_mult"])
        line("scalar_mult gradient ≤ 2 µs", mine, 1e-6, "1 µs", 2.0, False)
    for name in ("dot", "sum_mat_vec"):
        if name in by_name:
            against_peer(f"{name} gradient ≤ 2× NumPy's closed form", by_name[name], "NumPy", 2.0)
    return lines


def overview(results: list[Result]) -> list[str]:
    """One line per workload: objective, best gradient, peers at both thread settings, compile."""
    lines = ["| workload | labrys objective | labrys gradient (best) | gradient / objective | JAX 1 thread | "
             "JAX default threads | PyTorch 1 thread | PyTorch default threads | NumPy gradient | "
             "labrys compile (objective + gradients) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for result in results:
        if result.instance is None:
            lines.append(f"| {result.workload.name} | skipped: {result.skipped} |" + " |" * 8)
            continue
        obj, grad = objective_row(result), best(result)
        ratio = "—"
        if obj and grad:
            est = grad.gradient.estimated or obj.objective.estimated
            ratio = ("≈ " if est else "") + factor(grad.gradient.median / obj.objective.median)

        def g(name: str, result: Result = result) -> str:
            row = peer(result, name)
            if measured(row, "gradient"):
                return cell(row.gradient)
            other = next((r for r in result.rows if r.name == name), None)
            return _short(other.status) if other is not None and other.status else "—"
        best_text = f"{cell(grad.gradient)} ({grad.name.removeprefix('labrys ')})" if grad else "—"
        lines.append(f"| {result.workload.name} | {cell(obj.objective) if obj else '—'} | {best_text} | {ratio} | "
                     f"{g('JAX (jit)')} | {g('JAX (jit) · default threads')} | {g('PyTorch')} | "
                     f"{g('PyTorch · default threads')} | {g('NumPy')} | {labrys_compile(result)} |")
    return lines


def algorithms(results: list[Result]) -> list[str]:
    """gradient / labrys objective for every labrys gradient row, workloads × algorithms."""
    names = list(dict.fromkeys(r.name.removeprefix("labrys ") for res in results for r in res.rows
                               if r.labrys and r.name != f"labrys ({r.backend})" and "·" not in r.name))
    if not names:
        return []
    lines = ["| workload | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
    for result in results:
        if result.instance is None:
            continue
        obj = objective_row(result)
        cells = []
        for name in names:
            row = next((r for r in result.rows if r.name == "labrys " + name), None)
            if row is None:
                cells.append("—")
            elif row.status:
                cells.append(_short(row.status))
            elif row.gradient is None or obj is None:
                cells.append("—")
            else:
                est = "≈ " if row.gradient.estimated or obj.objective.estimated else ""
                cells.append(f"{est}{factor(row.gradient.median / obj.objective.median)}")
        lines.append(f"| {result.workload.name} | " + " | ".join(cells) + " |")
    return lines


def _short(status: str) -> str:
    """A row's status in a few words, for a summary cell."""
    if status.startswith("does not accept"):
        return "rejects the program"
    if status.startswith("not run"):
        return "not run (time limit)" if "time limit" in status else "not run"
    if status == "not installed":
        return status
    return "error"


def readme_block(summary: str) -> str:
    return f"{BEGIN}\n{summary.strip()}\n{END}"


def update_readme(summary_file: Path, readme: Path) -> None:
    """Replace README's block between the markers by ``summary_file``'s text."""
    if not summary_file.is_file():
        raise LabrysError(f"no {summary_file}: run `labrys bench --out {summary_file.parent}` first")
    if not readme.is_file():
        raise LabrysError(f"no {readme} to update")
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise LabrysError(f"{readme} has no benchmark summary block (a line {BEGIN} … {END})")
    block = readme_block(summary_file.read_text(encoding="utf-8"))
    readme.write_text(pattern.sub(lambda m: block, text, count=1), encoding="utf-8")
