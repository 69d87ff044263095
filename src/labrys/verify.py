"""``labrys verify``: check every derivation against finite differences,
against each other (the dot-product test) and across algorithms, at points
it reports (docs/verification.md).

Every implemented derivation of the registry (:mod:`labrys.ad.registry`) whose
calling convention is forward-like or reverse-like is checked on every
function that accepts it.  A non-finite number in a derivative or in a
compared value is a failure, never a pass; a point where the function itself
is not finite or not differentiable is skipped (and reported), and another
point is drawn.  The tolerances are those of :mod:`labrys.checks`.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Collection

import numpy as np

from . import checks
from .ad import REGISTRY
from .ad.derivation import SAME_TYPE, Derivation
from .api import Derivative, Function, Module
from .checks import Comparison, floats
from .errors import LabrysError
from .ir import nodes as ir
from .ir.names import DerivedName, TypedName, show_name
from .ir.types import TTuple, has_function
from .types.checker import Signature
from .types.tangent import is_constant_tangent
from .values import to_python
from .verify_points import EDGES, random_like, random_value, shapes, tangent_like, tried_text, with_floats

TOL = 1e-6           # relative error allowed beyond the estimated finite-difference error
AGREE_TOL = 1e-9     # relative to the magnitudes summed, beyond the measured rounding noise


def algorithms(only: Collection[str] | None = None) -> list[Derivation]:
    """The derivations verify checks: every implemented forward or reverse one (those named in ``only``)."""
    return [d for d in REGISTRY if d.implemented and not d.internal and d.convention.direction
            and (only is None or d.name in only)]


def translations(only: Collection[str] | None = None) -> list[Derivation]:
    """The same-type translations verify checks against f itself (``[CL f]`` computes f)."""
    return [d for d in REGISTRY if d.implemented and not d.internal and d.convention is SAME_TYPE
            and (only is None or d.name in only)]


def columns(only: Collection[str] | None = None) -> list[str]:
    """The cells of a row, in the order the table prints them."""
    return [a.name for a in algorithms(only)] + [a.name for a in translations(only)] + ["agree"]


@dataclass
class Cell:
    ok: bool | None           # None: unsupported
    error: float = 0.0        # |computed - expected| at the worst point
    detail: str = ""
    tolerance: float = 0.0    # what was allowed there
    checked: int = 0          # points checked

    def text(self) -> str:
        if self.ok is None:
            return f"unsupported: {self.detail}"
        if not self.ok:
            return f"✗ {self.detail}"
        return f"✓ {self.error:.1e} ≤ {self.tolerance:.1e}"

    def record(self, c: Comparison, where: str, what: str = "") -> None:
        """Count one checked point; keep the worst (error / allowed); fail beyond it."""
        self.checked += 1
        if self.checked == 1 or c.ratio > (self.error / self.tolerance if self.tolerance else
                                           (0.0 if self.error == 0 else float("inf"))):
            self.error, self.tolerance = c.error, c.allowed
        if not c.ok:
            self.ok, self.detail = False, f"{what}{c.error:.1e} > {c.allowed:.1e} at x = {where}"

    def fail(self, detail: str) -> None:
        self.ok, self.detail = False, detail


@dataclass
class Point:
    """A point verify tried: the argument, the finite-difference step, and
    "checked" or why it was skipped."""

    x: str
    step: float
    status: str


@dataclass
class Row:
    function: str
    cells: dict[str, Cell] = field(default_factory=dict)
    points: list[Point] = field(default_factory=list)
    shapes: str = ""  # where the argument's sizes came from, when not vectors of 3
    finding: str = ""  # "no point where f is defined: ...": f failed at every point of every size tried

    @property
    def ok(self) -> bool:
        return not self.finding and all(c.ok is not False for c in self.cells.values())


def check_function(module: Module, sig: Signature, points: int = 3, tol: float = TOL, seed: int = 0,
                   edges: bool = True, agree_tol: float = AGREE_TOL, trials: int | None = None,
                   only: Collection[str] | None = None) -> Row:
    """Every registered algorithm on one function: at the edge points (every
    Float 0, 1, -1, 1e-8 or 1e4) where the function is finite and smooth, and
    at ``points`` random points (more are drawn when some are skipped)."""
    points = trials if trials is not None else points
    row = Row(show_name(sig.name))
    rng = np.random.default_rng(seed)
    f = module.function(sig.name)[sig.arg]
    algs = algorithms(only)
    derived: dict[str, Callable] = {}
    for alg in algs:
        try:
            derived[alg.name] = _derived(module, alg.name, sig)
        except LabrysError as exc:
            row.cells[alg.name] = Cell(None, detail=_where(exc))
    for alg in algs:
        row.cells.setdefault(alg.name, Cell(True))
    same: dict[str, Callable] = {}
    for alg in translations(only):
        try:
            same[alg.name] = _derived(module, alg.name, sig)
            row.cells[alg.name] = Cell(True)
        except LabrysError as exc:
            row.cells[alg.name] = Cell(None, detail=_where(exc))
    row.cells["agree"] = Cell(True)
    if has_function(sig.ret):
        for alg in algs + translations(only):
            row.cells[alg.name] = Cell(None, detail=f"a function-typed result ({sig.ret}) has no finite differences")
        del row.cells["agree"]
        return row
    try:
        first = random_value(sig.arg, rng)
    except LabrysError as exc:
        for alg in algs + translations(only):
            row.cells[alg.name] = Cell(None, detail=str(exc.message))
        del row.cells["agree"]
        return row
    sweep = functools.partial(_sweep, row, f, derived, algs, rng, tol, agree_tol, points, edges, same)
    sweep(first, lambda: random_value(sig.arg, rng))
    tried = ["vectors of 3"]
    if row.points and all(p.status.startswith("f fails at x") for p in row.points):
        for what, template in shapes(module, sig, rng, f, tried):  # Note [Shapes the function accepts]
            before = len(row.points)
            sweep(template, lambda t=template: random_like(t, rng))
            if any(p.status == "checked" for p in row.points[before:]):
                row.shapes = what
                break
    if row.points and all(p.status.startswith("f fails at x") for p in row.points):
        row.finding = (f"no point where f is defined: {row.points[-1].status} (the last of {len(row.points)} "
                       f"points; sizes tried: {tried_text(tried)})")
        if len(derived) <= 1:
            del row.cells["agree"]
        for cell in row.cells.values():
            if cell.ok:
                cell.fail(row.finding)
        return row
    reasons = "; ".join(f"{why} ({len(xs)} points)" for why, xs in _skipped(row).items())
    for name, cell in row.cells.items():
        if cell.ok and cell.checked == 0 and name != "agree":
            cell.fail(f"nothing checked: {reasons}")
        elif cell.ok and cell.checked == 0 and len(derived) > 1:
            cell.fail("nothing compared: fewer than two algorithms gave finite results" if not reasons
                      else f"nothing checked: {reasons}")
    if len(derived) <= 1:
        del row.cells["agree"]
    return row


def _sweep(row: Row, f: Callable, derived: dict[str, Callable], algs: list[Derivation], rng: np.random.Generator,
           tol: float, agree_tol: float, points: int, edges: bool, same: dict[str, Callable], first: Any,
           draw: Callable[[], Any]) -> None:
    """The edge points of ``first``'s shape, then random points from ``draw`` until
    ``points`` of them are checked (at most 10 times as many tries)."""
    candidates = [with_floats(first, e) for e in EDGES] if edges and floats(first).size else []
    checked, tries = 0, 0
    while checked < points and tries < 10 * max(points, 1):
        edge = bool(candidates)
        if edge:
            x = candidates.pop(0)
        else:
            x, tries = draw(), tries + 1
        status = _check_point(row, f, derived, algs, x, rng, tol, agree_tol, same)
        row.points.append(Point(_short(x), status[1], status[0]))
        if status[0] == "checked" and not edge:
            checked += 1


def _check_point(row: Row, f: Callable, derived: dict[str, Callable], algs: list[Derivation], x: Any,
                 rng: np.random.Generator, tol: float, agree_tol: float,
                 same: dict[str, Callable] | None = None) -> tuple[str, float]:
    """Check every algorithm at x; "checked", or why x was skipped; and the step used."""
    where = _short(x)
    try:
        y = f(x)
    except LabrysError as exc:
        return f"f fails at x ({exc.message})", 0.0
    fx = floats(y)
    if not checks.finite(fx):
        return f"f is {checks.non_finite(fx)} at x", 0.0
    for name, call in (same or {}).items():  # a translation computes f: the same Floats, to rounding
        cell = row.cells[name]
        if cell.ok is not True:
            continue
        try:
            out = floats(call(x))
        except LabrysError as exc:
            cell.fail(_where(exc))
            continue
        if out.shape != fx.shape:
            cell.fail(f"{out.size} Floats, f gives {fx.size} at x = {where}")
            continue
        cell.record(checks.compare(out, fx, agree_tol), where, "vs f: ")
    dx = checks.scale_tangent(tangent_like(x, rng), x)
    dy = tangent_like(y, rng)
    diffs = checks.finite_differences(f, x, dx, fx)
    if isinstance(diffs, str):
        return diffs, checks.STEP
    dxs, dys = floats(dx), floats(dy)
    fd_dot = checks.pairing(diffs.value, dys)
    fd_dot_error = float(np.dot(diffs.error, np.abs(dys)))
    pairings: dict[str, checks.Pairing] = {}
    against_fd: list[tuple[Cell, Comparison]] = []
    for alg in algs:
        cell = row.cells[alg.name]
        if alg.name not in derived or cell.ok is not True:
            continue
        call = derived[alg.name]
        try:
            if alg.convention.direction == "forward":
                out = floats(alg.convention.tangent(call(x, dx)))
                probe = floats(alg.convention.tangent(call(x, checks.scale(dx, checks.PROBE)))) / checks.PROBE
                twice = floats(alg.convention.tangent(call(x, checks.scale(dx, 4.0)))) / 4.0
                other, against = dys, "J·dx"
            else:
                out = floats(call(x, dy))
                probe = floats(call(x, checks.scale(dy, checks.PROBE))) / checks.PROBE
                twice = floats(call(x, checks.scale(dy, 4.0))) / 4.0
                other, against = dxs, "Jᵀ·dy"
        except LabrysError as exc:
            cell.fail(_where(exc))
            continue
        if not checks.finite(out):
            cell.fail(f"{checks.non_finite(out)} in {against} at x = {where}")
            continue
        if not checks.linear(out, twice):
            cell.fail(f"{against} is not linear in {'dx' if against == 'J·dx' else 'dy'} at x = {where}: "
                      f"4 times the {'tangent' if against == 'J·dx' else 'cotangent'} gives not 4 times the result")
            continue
        if out.shape != (diffs.value.shape if against == "J·dx" else dxs.shape):
            cell.fail(f"{against} has {out.size} Floats, expected "
                      f"{diffs.value.size if against == 'J·dx' else dxs.size} at x = {where}")
            continue
        if against == "J·dx":
            noise = np.abs(probe - out) if checks.finite(probe) else 0.0
            c = checks.compare(out, diffs.value, tol, checks.FD_FACTOR * diffs.error + checks.NOISE_FACTOR * noise
                               + checks.unit_rounding(dxs, np.ones(1)))
        else:
            side = checks.pairing(out, other, probe if checks.finite(probe) else None)
            c = checks.compare(np.array(side.value), np.array(fd_dot.value), 0.0,
                               tol * (side.magnitude + fd_dot.magnitude) + checks.FD_FACTOR * fd_dot_error
                               + checks.NOISE_FACTOR * side.noise + checks.unit_rounding(dxs, dys))
        against_fd.append((cell, c))
        pairings[alg.name] = checks.pairing(out, other, probe if checks.finite(probe) else None)
    _agreement(row.cells["agree"], pairings, where, agree_tol, checks.unit_rounding(dxs, dys))
    if not all(c.ok for _, c in against_fd):
        unreliable = checks.unconfirmed(f, x, dx, fx, diffs)
        if unreliable:  # Note [Differences that a finer step contradicts] in labrys.checks
            return unreliable, diffs.step
    for cell, c in against_fd:
        cell.record(c, where, "vs finite differences: ")
    return "checked", diffs.step


def _agreement(cell: Cell, pairings: dict[str, checks.Pairing], where: str, tol: float, floor: float) -> None:
    """Every pair of algorithms gives the same <dy, J dx> (for a forward and a
    reverse derivation this is the dot-product test <rev(x,dy),dx> = <dy,fwd(x,dx)>)."""
    names = sorted(pairings)
    if len(names) < 2:
        return
    worst: tuple[float, Comparison, str] | None = None
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            c = checks.compare_pairings(pairings[a], pairings[b], tol, floor)
            if worst is None or c.ratio > worst[0]:
                worst = (c.ratio, c, f"{a} vs {b}: ")
    if worst is not None and cell.ok:
        cell.record(worst[1], where, worst[2])


def _derived(module: Module, derivation: str, sig: Signature) -> Callable:
    """[derivation f] as the program resolves it: a hand-written one if the user
    wrote it, else generated now (so an unsupported construct is reported here)."""
    name = DerivedName(derivation, TypedName(sig.name, sig.arg) if isinstance(sig.name, str) else sig.name)
    written = [s for s in module.checked.functions.candidates(name) if isinstance(s.decl, ir.Def)
               and isinstance(s.arg, TTuple) and s.arg.elems and s.arg.elems[0] == sig.arg]  # this overload's
    if not written:
        return Derivative(module, derivation, sig)
    fn = Function(module, written[0].name, written)
    return lambda *args: fn(args[0] if len(args) == 1 else tuple(args))


def _where(exc: LabrysError) -> str:
    where = f" at {exc.span!r}" if exc.span is not None else ""
    return exc.message.split(" does not support ")[-1] + where


def _short(x: Any) -> str:
    text = " ".join(repr(to_python(x) if not isinstance(x, list) else x).split())  # a matrix on one line
    return text if len(text) <= 60 else text[:57] + "..."


def verify(module: Module, name: str | None = None, progress: Callable[[str], None] = lambda text: None,
           **options: Any) -> list[Row]:
    """One row per function (or for ``name``) whose input and output hold Floats.

    Options: ``points`` (random points per function, default 3; ``trials`` is
    the old name), ``seed`` (default 0: the same points every run), ``tol``,
    ``agree_tol``, ``edges`` (also try the edge points; default True), ``only``
    (the names of the derivations to check; default: every one)."""
    known = {a.name for a in algorithms() + translations()}
    if options.get("only") is not None and set(options["only"]) - known:
        raise LabrysError(f"verify has no derivation {', '.join(sorted(set(options['only']) - known))}; "
                          f"it checks {', '.join(columns()[:-1])}")
    rows = []
    for d in module.program.decls:
        if not isinstance(d, ir.Def) or (name is not None and show_name(d.name) != name):
            continue
        if is_constant_tangent(d.arg_type) or is_constant_tangent(d.ret):
            continue
        progress(show_name(d.name))
        sig = module.checked.functions.resolve(d.name, d.arg_type)
        with np.errstate(all="ignore"), warnings.catch_warnings():  # a NaN is the cell's finding, not a warning
            warnings.simplefilter("ignore", RuntimeWarning)
            rows.append(check_function(module, sig, **options))
    if name is not None and not rows:
        raise LabrysError(f"no differentiable function named {name} (its argument and result need Floats)")
    return rows


def passed(rows: list[Row]) -> bool:
    """True when something was checked and no cell failed (what the CLI's exit code says)."""
    return bool(rows) and all(r.ok for r in rows) and any(c.checked for r in rows for c in r.cells.values())


def _skipped(row: Row) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in row.points:
        if p.status != "checked":
            out.setdefault(p.status, []).append(p.x)
    return out


def report(rows: list[Row], names: list[str], as_json: bool = False, seed: int = 0) -> str:
    """The table (or JSON) ``labrys verify`` prints: per cell ✓ error ≤ tolerance
    or ✗ why; then per function the points tried (with ``seed``), and the steps."""
    import json

    if as_json:
        return json.dumps([{"function": r.function, "ok": r.ok, "shapes": r.shapes or "vectors of 3",
                            **({"finding": r.finding} if r.finding else {}),
                            "points": [{"x": p.x, "step": p.step, "status": p.status} for p in r.points],
                            **{n: {"ok": c.ok, "max_error": c.error, "tolerance": c.tolerance,
                                   "checked": c.checked, "detail": c.detail}
                               for n, c in r.cells.items()}} for r in rows], indent=2)
    if not rows:
        return "nothing checked: no function takes and returns Floats"
    width = max([len("function")] + [len(r.function) for r in rows])
    texts = [{n: r.cells[n].text() if n in r.cells else "-" for n in names} for r in rows]
    widths = {n: max([len(n)] + [len(t[n]) for t, r in zip(texts, rows) if not r.finding]) for n in names}
    lines = ["function".ljust(width) + "".join(f" | {n:<{widths[n]}}" for n in names).rstrip()]
    for r, t in zip(rows, texts):
        if r.finding:  # one finding for the whole row, not the same text in every column
            lines.append(f"{r.function.ljust(width)} | ✗ {r.finding}")
            continue
        lines.append((r.function.ljust(width) + "".join(f" | {t[n]:<{widths[n]}}" for n in names)).rstrip())
    lines.append("")
    lines.append(f"points (seed {seed}; finite differences move each Float by h·|x| (h at 0) and h/2·|x|, "
                 f"h = {checks.STEP:g} unless shown, Richardson-extrapolated):")
    for r in rows:
        used = [p.x + (f" (h = {p.step:g})" if p.step != checks.STEP else "") for p in r.points
                if p.status == "checked"]
        lines.append(f"  {r.function}: checked at {len(used)}: {', '.join(used[:4]) or '-'}"
                     + (", ... (--json lists them all)" if len(used) > 4 else "")
                     + (f"; sizes: {r.shapes} (vectors of 3 fail)" if r.shapes else ""))
        for status, xs in _skipped(r).items():
            lines.append(f"  {' ' * len(r.function)}  skipped {len(xs)} ({status}): {', '.join(xs[:3])}"
                         + (", ..." if len(xs) > 3 else ""))
    return "\n".join(lines)
