"""Zeros shaped like primal values, for §9's lowering of CHAD (Vákár & Smeding, CHAD §9;
Note [Zeros shaped like the context] in chad_lower.py): a Σ becomes ``ts_sumbuild`` shaped
like a primal value its body names, and a zero in one branch of an ``if`` is shaped like
the other branch (the rewrite itself: chad_lower_sums.py).

    Γ ⊢ t : τ̲ (lowered, typed)  ↦  Γ ⊢ like(t) : S  with  dS = τ̲,  or nothing
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.traverse import free_vars, nodes
from ..ir.types import FLOAT, UNIT, TTuple, Type
from .chad_lower import _tangent, sizeless

_MAX_SHAPE_DEPTH = 64


class Shapes:
    """Note [Zeros shaped like the context]: a primal expression whose zero tangent is the zero
    of a lowered linear term (its sizes read from primal values), or None if the term does not
    say its shape.  ``env`` maps the def's uniquely let-bound names to their right-hand sides,
    so a Σ of the per-element backpropagators of a build, ``Σ_i get (h (index i w))`` with
    ``h = get$2$2 (y i)``, is shaped like the result of y's backpropagator."""

    def __init__(self, body: ir.Expr, fresh) -> None:
        self.fresh = fresh
        counts: dict[str, int] = {}
        self.env: dict[str, ir.Expr] = {}
        for x in nodes(body):
            for name in _binders(x):
                counts[name] = counts.get(name, 0) + 1
            if isinstance(x, ir.Let) and isinstance(x.binder, str):
                self.env[x.binder] = x.rhs
            elif isinstance(x, ir.Let):
                for k, name in enumerate(x.binder):
                    self.env[name] = (k + 1, len(x.binder), x.rhs)
        self.env = {k: v for k, v in self.env.items() if counts.get(k) == 1}

    def like(self, e: ir.Expr, bound: set[str], depth: int = 0) -> ir.Expr | None:
        """The shape of e, free of ``bound`` (variables not in scope where it is used)."""
        if depth > _MAX_SHAPE_DEPTH or e.type is None:
            return None
        if e.type == FLOAT:
            return ir.Const(0.0, FLOAT, type=FLOAT)
        if e.type == UNIT:
            return ir.Tuple((), type=UNIT)
        match e:
            case ir.Call("ts_delta", ir.Tuple((xs, _, _))):
                return self.expand(xs, bound, depth + 1)
            case ir.Call("ts_zero", x):
                return self.expand(x, bound, depth + 1)
            case ir.Call("ts_add", ir.Tuple((a, b))):
                return self.like(a, bound, depth + 1) or self.like(b, bound, depth + 1)
            case ir.Call("ts_sumbuild", ir.Tuple((_, _, like))):
                return self.expand(like, bound, depth + 1)
            case ir.Tuple(elems):  # a part without a shape is a hole: a projection may not need it
                parts = [self.like(x, bound, depth + 1) or _hole() for x in elems]
                return ir.Tuple(tuple(parts), type=TTuple(tuple(p.type for p in parts)))
            case ir.Var(name) if name in self.env:
                rhs = self.rhs(name, e.type)
                return self.like(rhs, bound | _all_binders(rhs), depth + 1)
            case ir.Let(_, _, body):
                return self.like(body, bound | set(_binders(e)), depth + 1)
            case ir.If(_, a, b):
                return self.like(a, bound, depth + 1) or self.like(b, bound, depth + 1)
            case ir.Get(i, n, x):
                return self.component(x, i, n, e.type, bound, depth + 1)
            case ir.App(f, _):
                found = self.function(f, bound, depth + 1)
                return None if found is None else self.like(found[0].body, found[1], depth + 1)
        return None

    def fill(self, e: ir.Expr, other: ir.Expr, bound: set[str], depth: int = 0) -> ir.Expr:
        """e with each ``chadZero`` of a sized type in a tail position replaced by a concrete zero
        shaped like the same position of ``other`` (the other branch of an if, same type)."""
        if depth > _MAX_SHAPE_DEPTH:
            return e
        while isinstance(other, ir.Let):
            bound = bound | set(_binders(other))
            other = other.body
        if isinstance(other, ir.If):  # an if nested in the other branch: shaped like either of its branches
            return self.fill(self.fill(e, other.then, bound, depth + 1), other.orelse, bound, depth + 1)
        match e:
            case ir.Call("chadZero") if e.type is not None and not sizeless(e.type):
                like = self.like(other, bound)
                if like is None or _HOLE in free_vars(like) or _tangent(like.type) != e.type:
                    return e
                g = ir.Var(self.fresh("shape"), type=like.type)
                return ir.Let(g.name, like, ir.Call("ts_zero", g, type=e.type), type=e.type)
            case ir.Tuple(elems) if isinstance(other, ir.Tuple) and len(other.elems) == len(elems):
                return ir.Tuple(tuple(self.fill(a, b, bound, depth + 1) for a, b in zip(elems, other.elems)),
                                type=e.type, span=e.span)
            case ir.Lam(var, t, body) if isinstance(other, ir.Lam):
                return ir.Lam(var, t, self.fill(body, other.body, bound | {other.var}, depth + 1),
                              type=e.type, span=e.span)
            case ir.Let(binder, rhs, body):
                return ir.Let(binder, rhs, self.fill(body, other, bound, depth + 1), type=e.type, span=e.span)
        return e

    def rhs(self, name: str, t: Type) -> ir.Expr:
        rhs = self.env[name]
        if isinstance(rhs, tuple):  # component k of a tuple-pattern let
            k, n, whole = rhs
            return ir.Get(k, n, whole, type=t)
        return rhs

    def component(self, x: ir.Expr, i: int, n: int, t: Type, bound: set[str], depth: int) -> ir.Expr | None:
        """The shape of ``get$i$n x`` (of type t)."""
        if depth > _MAX_SHAPE_DEPTH:
            return None
        match x:
            case ir.Tuple(elems):
                return self.like(elems[i - 1], bound, depth + 1)
            case ir.Var(name) if name in self.env:
                rhs = self.rhs(name, x.type)
                return self.component(rhs, i, n, t, bound | _all_binders(rhs), depth + 1)
            case ir.Let(_, _, body):
                return self.component(body, i, n, t, bound | set(_binders(x)), depth + 1)
            case ir.Call("rfold", ir.Tuple((_, _, _, _, dacc, czero))):  # (dacc, dv, c): c starts at czero
                return self.like(dacc, bound, depth + 1) if i == 1 else \
                    self.like(czero, bound, depth + 1) if i == 3 else None
            case ir.App(f, _):
                found = self.function(f, bound, depth + 1)
                return None if found is None else self.component(found[0].body, i, n, t, found[1], depth + 1)
        if x.type is None:
            return None
        whole = self.like(x, bound, depth + 1)
        if whole is None:
            return None
        return whole.elems[i - 1] if isinstance(whole, ir.Tuple) else ir.Get(i, n, whole, type=t)

    def expand(self, x: ir.Expr, bound: set[str], depth: int) -> ir.Expr | None:
        """x itself if it is in scope, else with the names out of scope replaced by their
        definitions (a primal expression; None if that does not bring it in scope)."""
        if not (free_vars(x) & bound) and _HOLE not in free_vars(x):
            return x
        if depth > _MAX_SHAPE_DEPTH:
            return None
        match x:
            case ir.Var(name) if name in self.env:
                return self.expand(self.rhs(name, x.type), bound, depth + 1)
            case ir.Tuple(elems):
                parts = [self.expand(e, bound, depth + 1) or _hole() for e in elems]
                return ir.Tuple(tuple(parts), type=x.type)
            case ir.Get(i, n, y):
                inner = self.expand(y, bound, depth + 1)
                return None if inner is None else ir.Get(i, n, inner, type=x.type)
        return None

    def function(self, f: ir.Expr, bound: set[str], depth: int) -> tuple[ir.Lam, set[str]] | None:
        """The λ that f evaluates to, with the binders crossed to reach it added to ``bound``."""
        value = self.value(f, bound, depth)
        if value is None or not isinstance(value[0], ir.Lam):
            return None
        lam, crossed = value
        return lam, crossed | {lam.var}

    def value(self, e: ir.Expr, bound: set[str], depth: int) -> tuple[ir.Expr, set[str]] | None:
        """The literal (λ or tuple) e evaluates to, looking through names, lets, projections and
        applications of known λs; every binder inside what is looked into is added to ``bound``."""
        if depth > _MAX_SHAPE_DEPTH:
            return None
        match e:
            case ir.Var(name) if name in self.env:
                rhs = self.rhs(name, e.type)
                return self.value(rhs, bound | _all_binders(rhs), depth + 1)
            case ir.Lam() | ir.Tuple():
                return e, bound
            case ir.If(_, a, b):  # the branches' (co)tangents have one shape: either says it
                return self.value(a, bound, depth + 1) or self.value(b, bound, depth + 1)
            case ir.Let():
                return self.value(e.body, bound | set(_binders(e)), depth + 1)
            case ir.Get(i, _, x):
                whole = self.value(x, bound, depth + 1)
                if whole is None or not isinstance(whole[0], ir.Tuple):
                    return None
                return self.value(whole[0].elems[i - 1], whole[1], depth + 1)
            case ir.App(f, _):
                found = self.function(f, bound, depth + 1)
                return None if found is None else self.value(found[0].body, found[1], depth + 1)
        return None


_HOLE = "?hole"  # not a name of the language: a part of a shape that is not known


def _hole() -> ir.Expr:
    return ir.Var(_HOLE)


def _binders(x: ir.Expr) -> tuple[str, ...]:
    if isinstance(x, ir.Let):
        return (x.binder,) if isinstance(x.binder, str) else tuple(x.binder)
    if isinstance(x, ir.Lam):
        return (x.var,)
    if isinstance(x, ir.Case):
        return (x.left_var, x.right_var)
    return ()


def _all_binders(e: ir.Expr) -> set[str]:
    return {name for x in nodes(e) for name in _binders(x)}

