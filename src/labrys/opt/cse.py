"""Common-subexpression elimination (Ellis et al. §5.1): scope-aware and
alpha-aware.

    Γ ⊢ e : τ   ↦   Γ ⊢ cse(e) : τ

Within a let-chain, a pure right-hand side equal (up to renaming of its
bound variables) to one already bound in scope is replaced by that
variable.  Bindings made inside a lambda or an ``if`` branch are available
only there.  The input must be renamed apart (every binder unique).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import is_atom
from ..ir.traverse import FreshNames, children, rebuild
from ..util.deep import deep
from .anf import rename_apart
from .simplify import is_pure


class _Canonical(FreshNames):
    """Binder names #1, #2, ... in traversal order: alpha-equal terms become equal."""

    def __call__(self, base: str = "t") -> str:
        return f"#{next(self.counter)}"


def canonical(e: ir.Expr) -> ir.Expr:
    return rename_apart(e, _Canonical())


def _cse(e: ir.Expr, avail: dict, env: dict[str, ir.Expr]) -> ir.Expr:
    match e:
        case ir.Var(name):
            return env.get(name, e)
        case ir.Let():
            avail = dict(avail)
            bindings = []
            while isinstance(e, ir.Let):
                rhs = _cse(e.rhs, avail, env)
                key = canonical(rhs) if not is_atom(rhs) and is_pure(rhs) else None
                if isinstance(e.binder, str) and key in avail:
                    env[e.binder] = avail[key]
                else:
                    if key is not None and isinstance(e.binder, str):
                        avail[key] = ir.Var(e.binder, type=rhs.type)
                    bindings.append((e.binder, rhs))
                e = e.body
            body = _cse(e, avail, env)
            for binder, rhs in reversed(bindings):
                body = ir.Let(binder, rhs, body, type=body.type)
            return body
    kids = children(e)
    if not kids:
        return e
    return rebuild(e, [_cse(c, dict(avail) if binders or isinstance(e, ir.If) else avail, env)
                       for c, binders in kids])


@deep
def cse(e: ir.Expr) -> ir.Expr:
    return _cse(e, {}, {})
