"""The reference interpreter: strict, call-by-value (docs/reference.md §7).

Each typed function body is compiled once into nested Python closures over
a frame (a list of slots fixed at compile time): variables become slot reads,
primitives are specialised to their static argument types, let-chains run as
a loop.  Lambdas are flat closures that copy their free variables.

Note [Positions in derived code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
AD passes build new nodes without spans, so an error inside derived code
(an index out of range in ``[fwd f]``) had no position.  Before a def is
compiled on any backend, every node without a span takes its nearest
enclosing node's, and the top the def's (a derived def's span is its
original's): the error then names the construct it was derived from, or at
least the function.  Every
primitive call adds its cost to the op-count meter of the run-time context
(Note [Run-time context] in labrys.context).
"""
from __future__ import annotations

import dataclasses
from operator import itemgetter
from typing import Any, Callable

from ..context import current
from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.names import Name, show_name
from ..ir.traverse import fill_spans, lambda_free_vars
from ..types.checker import BodyFacts, CheckedProgram, Signature
from ..types.primitives import Primitive
from ..util.deep import deep, gc_paused
from ..values import Inj, PrimError
from .limits import guard_depth

Frame = list
Code = Callable[[Frame], Any]


class Slots:
    """Static slot allocation for one frame."""

    def __init__(self, names: tuple[str, ...] = ()) -> None:
        self.count = 0
        self.scope: dict[str, list[int]] = {}
        for n in names:
            self.bind(n)

    def bind(self, name: str) -> int:
        k, self.count = self.count, self.count + 1
        self.scope.setdefault(name, []).append(k)
        return k

    def unbind(self, name: str) -> None:
        self.scope[name].pop()

    def __getitem__(self, name: str) -> int:
        return self.scope[name][-1]


class Interpreter:
    """Runs a checked program; ``externals`` implement edef'd functions and
    ``definitions`` gives the def of every function, derived ones included."""

    name = "interp"
    compile_seconds = 0.0

    def __init__(self, checked: CheckedProgram, externals: dict[Any, Callable] | None = None,
                 definitions: Any = None) -> None:
        self.checked = checked
        self.functions = checked.functions
        self.externals = externals if externals is not None else {}
        self.definitions = definitions
        self.cells: dict[int, list] = {}
        self.lambda_free: dict[int, frozenset[str]] = {}  # of the def being compiled

    def reset(self) -> None:
        self.cells.clear()

    # --- functions ----------------------------------------------------------

    def cell(self, sig: Signature) -> list:
        """A one-element list holding ``sig``'s compiled code (compiled on first use)."""
        key = id(sig)
        if key not in self.cells:
            self.cells[key] = [None]
            self.cells[key][0] = self._lazy(sig)
        return self.cells[key]

    @deep
    def prepare(self, sig: Signature) -> None:
        """Compile ``sig`` now (the compiled backend compiles it with its callees)
        instead of on its first call."""
        cell = self.cell(sig)
        if getattr(cell[0], "lazy", False):
            cell[0] = self.compile_function(sig)

    def _lazy(self, sig: Signature) -> Callable:
        def first_call(arg):
            fn = self.compile_function(sig)
            self.cells[id(sig)][0] = fn
            return fn(arg)
        first_call.lazy = True
        return first_call

    @gc_paused
    def compile_function(self, sig: Signature) -> Callable[[Any], Any]:
        d = self.definition(sig)
        if d is None:
            return self.external(sig) or missing_edef(sig, None)
        return guard_depth(self.compile_def(d), show_name(sig.name), d.span)

    def definition(self, sig: Signature) -> ir.Def | None:
        """The typed def ``sig`` runs (None: an edef)."""
        if isinstance(sig.decl, ir.Def):
            return self.checked.typed(sig.decl)
        if isinstance(sig.decl, ir.Edef):
            return None
        if self.definitions is None:
            raise LabrysError(f"{show_name(sig.name)}: derived functions need a labrys.Module", sig.decl.span)
        return self.definitions.definition(sig)

    def facts(self, d: ir.Def) -> BodyFacts | None:
        """What the checker noted of d's body, if d is a def of the loaded program."""
        facts = self.checked.facts.get(id(d.body))
        return facts if facts is not None and facts.body is d.body else None

    def external(self, sig: Signature) -> Callable | None:
        return self.externals.get(sig.name)

    def compile_def(self, d: ir.Def) -> Callable[[Any], Any]:
        facts = self.facts(d)
        d = with_spans(d, facts)
        names = tuple(p.name for p in d.params)
        slots = Slots(names)
        lambdas = facts is None or facts.lambdas  # Note [Facts the checker collects]
        saved, self.lambda_free = self.lambda_free, lambda_free_vars(d.body) if lambdas else {}
        try:
            body = self.compile(d.body, slots)
        finally:
            self.lambda_free = saved
        size = slots.count
        if len(names) == 1:
            def run1(arg):
                frame = [None] * size
                frame[0] = arg
                return body(frame)
            return run1
        k = len(names)

        def run(arg):
            frame = list(arg) + [None] * (size - k)
            return body(frame)
        return run

    @deep
    def call(self, sig: Signature, arg: Any) -> Any:
        return self.cell(sig)[0](arg)

    # --- expressions: one case per construct --------------------------------

    def compile(self, e: ir.Expr, slots: Slots) -> Code:
        match e:
            case ir.Const(value):
                return lambda fr: value
            case ir.Var(name):
                return itemgetter(slots[name])
            case ir.Call(func, arg):
                return self.compile_call(e, func, self.compile(arg, slots))
            case ir.App(func, arg):
                return _app(self.compile(func, slots), self.compile(arg, slots), e.span)
            case ir.Lam():
                return self.compile_lam(e, slots)
            case ir.Let():
                return self.compile_let(e, slots)
            case ir.If(cond, then, orelse):
                c, t, f = (self.compile(x, slots) for x in (cond, then, orelse))
                return lambda fr: t(fr) if c(fr) else f(fr)
            case ir.Tuple(elems):
                fs = [self.compile(x, slots) for x in elems]
                if len(fs) == 2:
                    a, b = fs
                    return lambda fr: (a(fr), b(fr))
                return lambda fr: tuple([f(fr) for f in fs])
            case ir.Get(i, _, arg):
                a = self.compile(arg, slots)
                return lambda fr: a(fr)[i - 1]
            case ir.Assert(cond, body):
                return self.compile_assert(e, self.compile(cond, slots), self.compile(body, slots))
            case ir.Inj(left, _, arg):
                a = self.compile(arg, slots)
                return lambda fr: Inj(left, a(fr))
            case ir.Case(scrut, lv, lb, rv, rb):
                s = self.compile(scrut, slots)
                lk, l_ = self._under(slots, lv, lb)
                rk, r_ = self._under(slots, rv, rb)

                def case(fr):
                    v = s(fr)
                    if v.left:
                        fr[lk] = v.value
                        return l_(fr)
                    fr[rk] = v.value
                    return r_(fr)
                return case
            case ir.FnRef(func):
                cell = self.cell(self.functions.by_name(func))
                return lambda fr: lambda x: cell[0](x)
        raise TypeError(f"not an expression: {e!r}")

    def _under(self, slots: Slots, name: str, body: ir.Expr) -> tuple[int, Code]:
        k = slots.bind(name)
        try:
            return k, self.compile(body, slots)
        finally:
            slots.unbind(name)

    def compile_call(self, e: ir.Call, func: Name, arg: Code) -> Code:
        target = self.functions.resolve(func, e.arg.type)
        span = e.span
        if isinstance(target, Signature):
            if isinstance(target.decl, ir.Edef) and self.external(target) is None:
                return missing_edef(target, span)
            cell = self.cell(target)
            return lambda fr: cell[0](arg(fr))
        return _prim_call(target, target.impl(e.arg.type), arg, span)

    def compile_lam(self, e: ir.Lam, slots: Slots) -> Code:
        free = self.lambda_free.get(id(e))
        if free is None:  # an expression compiled outside compile_def
            self.lambda_free = lambda_free_vars(e)
            free = self.lambda_free[id(e)]
        captured = sorted(free)
        outer = [slots[n] for n in captured]
        inner = Slots(tuple(captured) + (e.var,))
        body = self.compile(e.body, inner)
        extra = inner.count - len(captured) - 1

        def make(fr):
            caps = [fr[k] for k in outer]
            return lambda x: body(caps + [x] + [None] * extra)
        return make

    def compile_let(self, e: ir.Let, slots: Slots) -> Code:
        steps: list[tuple[Any, Code]] = []
        bound: list[str] = []
        while isinstance(e, ir.Let):
            rhs = self.compile(e.rhs, slots)
            if isinstance(e.binder, str):
                steps.append((slots.bind(e.binder), rhs))
            else:
                steps.append((tuple(slots.bind(n) for n in e.binder), rhs))
            bound.extend(e.names)
            e = e.body
        body = self.compile(e, slots)
        for n in bound:
            slots.unbind(n)

        def run(fr):
            for target, rhs in steps:
                v = rhs(fr)
                if target.__class__ is int:
                    fr[target] = v
                else:
                    for k, x in zip(target, v):
                        fr[k] = x
            return body(fr)
        return run

    def compile_assert(self, e: ir.Assert, cond: Code, body: Code) -> Code:
        span = e.cond.span or e.span

        def check(fr):
            if not cond(fr):
                raise LabrysError("assertion failed", span)
            return body(fr)
        return check


def with_spans(d: ir.Def, facts: BodyFacts | None = None) -> ir.Def:
    """``d`` with a span on every node (Note [Positions in derived code]); a body the
    checker saw wholly spanned is returned at once (Note [Facts the checker collects])."""
    if facts is not None and facts.spanned:
        return d
    body = fill_spans(d.body, d.span)
    return d if body is d.body else dataclasses.replace(d, body=body)


def missing_edef(sig: Signature, span: Span | None) -> Callable:
    def missing(*_):
        raise LabrysError(f"edef '{show_name(sig.name)}' has no implementation "
                          "(supply one with Module.implement)", span or sig.decl.span,
                          (f"declared at {sig.decl.span!r}",) if span and sig.decl.span else ())
    return missing


# Note [Primitive failures]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# A primitive that fails on the values it was given (PrimError, or NumPy's
# ValueError for shapes that do not broadcast, an index out of range, ...) is
# a run-time error at the call, with its position, on the interpreter and in
# generated Python (its ``except _primerror``) alike: never an escaped
# Python exception.  The fuzz harness found such a ValueError in delta1 code.
PRIMITIVE_FAILURES = (PrimError, ValueError, ArithmeticError, LookupError, TypeError)


def _app(f: Code, a: Code, span: Span | None) -> Code:
    """An application; a closure a primitive made (a CHAD backpropagator, a
    tangent map) fails at the application's position (Note [Primitive failures])."""
    def run(fr):
        try:
            return f(fr)(a(fr))
        except PrimError as exc:
            raise LabrysError(str(exc), span) from None
    return run


def _prim_call(prim: Primitive, impl: Callable, arg: Code, span: Span | None) -> Code:
    ops = prim.ops

    def run(fr):
        a = arg(fr)
        try:
            r = impl(a)
        except PRIMITIVE_FAILURES as exc:
            raise LabrysError(f"{prim.name}: {exc}" if not str(exc).startswith(prim.name) else str(exc),
                              span) from None
        current().ops += ops(r, a)
        return r
    return run
