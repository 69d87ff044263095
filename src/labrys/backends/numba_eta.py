"""A prepass of the compiled backend: a loop whose body is a function value gets a lambda body,
the form the loop rules of :mod:`.numba_source` and the closure table need."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.traverse import fresh_for, map_bottom_up, nodes
from ..ir.types import TLam
from .numba_closures import LOOP_PRIMITIVES


def eta_loops(d: ir.Def) -> ir.Def:
    """d with every loop over a function value given a lambda body."""
    if not any(isinstance(x.type, TLam) and not isinstance(x, ir.Lam) for x in nodes(d.body)):
        return d
    return d.with_body(eta_loop_arguments(d.body, fresh_for(d)))


def eta_loop_arguments(body: ir.Expr, fresh) -> ir.Expr:
    """(build n f) with f a function value ↦ (build n (lam (i : Integer) (f i))), and
    alike for every loop primitive, so the loop's body is a lambda as the loop rules
    need (typed: the new nodes carry their types)."""
    def eta(x: ir.Expr) -> ir.Expr:
        if not (isinstance(x, ir.Call) and x.func in LOOP_PRIMITIVES):
            return x
        args = ir.call_args(x)
        if not any(isinstance(a.type, TLam) and not isinstance(a, ir.Lam) for a in args):
            return x
        new = []
        for a in args:
            if isinstance(a.type, TLam) and not isinstance(a, ir.Lam):
                v = fresh("x")
                app = ir.App(a, ir.Var(v, type=a.type.arg), type=a.type.res, span=a.span)
                a = ir.Lam(v, a.type.arg, app, type=a.type, span=a.span)
            new.append(a)
        arg = ir.Tuple(tuple(new), type=x.arg.type, span=x.arg.span) if isinstance(x.arg, ir.Tuple) else new[0]
        return ir.Call(x.func, arg, type=x.type, span=x.span)

    return map_bottom_up(body, eta)
