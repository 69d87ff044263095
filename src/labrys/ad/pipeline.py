"""The pass driver: every derivation is a list of named passes, each a function
from a typed def to a def, run in order by :func:`run_pipeline`.

Note [Pass driver]
~~~~~~~~~~~~~~~~~~
As in ksc's ``Pipeline.hs`` (``displayPass`` then ``lintDefs``), the driver
records the def after every pass, so ``labrys show FILE f --deriv X
--stages`` prints exactly the stages that made ``[X f]``, with the pass's
title, and can time each pass.  Every pass receives a typed def; whatever it
returns is type-checked before the next pass sees it, so an unbound variable
or a result of the wrong type is reported at the pass that made it.  With
linting on (tests, ``--debug``, ``LABRYS_LINT=1``) the driver also compares
the types a pass wrote on nodes itself with the ones the checker infers.

A pass with ``shows`` makes a stage in another language (a CL term): it
returns its input def unchanged, keeps what it made in ``work.notes``, and the
stage prints ``shows(work)``.

A *view* pass (``view=True``) makes a stage that is shown but is not on the
path to the result, e.g. the optimised and transposed Jacobians of the 2019
Knossos Demo; views run only when the stages are asked for.  A pass reads the
stage named by ``source``; by default a view reads the stage just before it (so
views chain) and any other pass the latest non-view stage.  Passes of one
derivation share a :class:`Work`: fresh names, the function table and side
tables one pass hands to a later one (∇'s witness map for transposition).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.traverse import FreshNames, children, fresh_for, nodes  # noqa: F401  (fresh_for: the passes import it from here)
from ..types.checker import Functions, check_def
from ..util.deep import paused_gc

ORIGINAL = "original"


@dataclass(frozen=True)
class Pass:
    name: str
    title: str | Callable[["Work"], str]   # a function of the Work when it names the strategy
    run: Callable[[ir.Def, "Work"], ir.Def]
    source: str | None = None
    view: bool = False
    # the stage is printed as this text (or what this function, called when it is shown, returns), not as .ks
    shows: Callable[["Work"], str | Callable[[], str]] | None = None


@dataclass
class Work:
    """What the passes making one derived function share."""

    functions: Functions
    fresh: FreshNames
    generator: Any                              # the labrys.ad.derive.Derivations making it
    strategy: str | None = None                 # the derivation's strategy, if it has several
    notes: dict[str, Any] = field(default_factory=dict)
    wrt: tuple[str, ...] = ()                   # active parameters (labrys.ad.activity); () = all


@dataclass(frozen=True)
class Stage:
    name: str
    title: str
    d: ir.Def
    seconds: float
    view: bool = False
    # what `show --stages` prints instead of the def (a CL term, a procedure), or a function
    # making it: printed only when asked (CHAD's linear view of a 10^4-let chain takes seconds)
    shown: str | Callable[[], str] | None = None

    @property
    def text(self) -> str | None:
        if callable(self.shown):
            object.__setattr__(self, "shown", self.shown())
        return self.shown


@dataclass(frozen=True)
class Derived:
    """A generated def and the stages that made it, in pipeline order."""

    d: ir.Def
    stages: tuple[Stage, ...]

    def stage(self, name: str) -> ir.Def:
        return next(s.d for s in self.stages if s.name == name)


def linting() -> bool:
    return os.environ.get("LABRYS_LINT", "") not in ("", "0")


def run_pipeline(passes: tuple[Pass, ...], d: ir.Def, work: Work, views: bool = False,
                 lint: bool | None = None) -> Derived:
    """Run ``passes`` on the typed def ``d`` (Note [Pass driver])."""
    lint = linting() if lint is None else lint
    with paused_gc():  # Note [Garbage collection in passes]
        return _run_passes(passes, d, work, views, lint)


def _run_passes(passes: tuple[Pass, ...], d: ir.Def, work: Work, views: bool, lint: bool) -> Derived:
    stages = {ORIGINAL: Stage(ORIGINAL, "Original definition", d, 0.0)}
    order, current = [ORIGINAL], ORIGINAL
    for p in passes:
        if p.view and not views:
            continue
        start = time.perf_counter()
        source = p.source or (order[-1] if p.view else current)
        out = typed(p.run(stages[source].d, work), work.functions, p.name, lint)
        title = p.title(work) if callable(p.title) else p.title
        text = p.shows(work) if p.shows else work.notes.pop(("text", p.name), None)
        stages[p.name] = Stage(p.name, title, out, time.perf_counter() - start, p.view, text)
        order.append(p.name)
        if not p.view:
            current = p.name
    return Derived(stages[current].d, tuple(stages[n] for n in order))


def typed(d: ir.Def, functions: Functions, pass_name: str, lint: bool) -> ir.Def:
    """``d`` type-checked; linted (compared with its own annotations) when asked."""
    try:
        checked = check_def(d, functions)
    except LabrysError as exc:
        if exc.message.startswith("internal"):
            raise
        raise LabrysError(f"internal: the pass '{pass_name}' made ill-typed code for {show_name(d.name)}: "
                          f"{exc.message}", exc.span or d.span) from None
    if lint and d.body.type is not None:
        _same_annotations(d, checked, pass_name)
    return checked


def _same_annotations(made: ir.Def, checked: ir.Def, pass_name: str) -> None:
    """Every type a pass wrote on a node is the one the checker infers."""
    stack = [(made.body, checked.body)]
    while stack:
        a, b = stack.pop()
        if a.type is not None and a.type != b.type:
            raise LabrysError(f"internal: the pass '{pass_name}' annotated a node of {show_name(made.name)} "
                              f"with {a.type}, but it has type {b.type}", a.span or made.span)
        stack.extend(zip((c for c, _ in children(a)), (c for c, _ in children(b))))


def calls(d: ir.Def) -> list[ir.Call | ir.FnRef]:
    """The calls and function references in d's body."""
    return [x for x in nodes(d.body) if isinstance(x, (ir.Call, ir.FnRef))]
