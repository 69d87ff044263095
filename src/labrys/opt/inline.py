"""Inlining of small derived callees (Ellis et al. §3: "rather than calling ∂f,
inline it", where it pays).

    Γ ⊢ e : τ   ↦   Γ ⊢ inline(e) : τ

A call ``[rev g](a, r)`` (or ``fwd``, ``fwdt``) whose generated definition is
small and calls no other function is replaced by that definition's body,
its parameters let-bound to the arguments.  Derivation stays compositional
(each function is differentiated once, on its own); only the generated code
is specialised.  Hand-written derivatives stay calls: the user wrote them to
be called.
"""
from __future__ import annotations

from typing import Callable

from ..ir import nodes as ir
from ..ir.names import DerivedName
from ..ir.traverse import FreshNames, all_names, map_bottom_up, nodes, size, substitute
from ..util.deep import deep
from .anf import rename_apart

MAX_SIZE = 100


def is_leaf(d: ir.Def) -> bool:
    """Calls no function but primitives, and holds no linear map."""
    return not any(isinstance(x, ir.Call) and (not isinstance(x.func, str) or x.func.startswith("lm"))
                   for x in nodes(d.body))


@deep
def inline_calls(e: ir.Expr, callee: Callable[[ir.Call], ir.Def | None]) -> ir.Expr:
    """Inline every call for which ``callee`` returns a small leaf definition."""
    fresh = FreshNames(all_names(e))

    def rewrite(x: ir.Expr) -> ir.Expr:
        if not (isinstance(x, ir.Call) and isinstance(x.func, DerivedName)):
            return x
        d = callee(x)
        if d is None or size(d.body) > MAX_SIZE or not is_leaf(d):
            return x
        names = tuple(fresh(p.name) for p in d.params)
        renamed = {p.name: ir.Var(n, type=p.type) for p, n in zip(d.params, names)}
        body = substitute(rename_apart(d.body, fresh), renamed, fresh)
        binder = names[0] if len(names) == 1 else names
        return ir.Let(binder, x.arg, body, type=x.type)
    return map_bottom_up(e, rewrite)
