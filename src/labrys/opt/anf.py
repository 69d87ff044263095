"""A-normal form (seed 000 §5.1) and renaming apart.

    Γ ⊢ e : τ   ↦   Γ ⊢ anf(e) : τ, where every argument of a call, tuple,
                    projection or injection is a variable or a constant.

Lambda bodies and ``if`` branches are normalised in place: nothing is
floated out of them (their code may depend on the binder or may not run).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import is_atom
from ..ir.traverse import FreshNames, all_names, children, rebuild
from ..util.deep import deep


class _Anf:
    def __init__(self, fresh: FreshNames) -> None:
        self.fresh = fresh

    def atom(self, e: ir.Expr, out: list) -> ir.Expr:
        """An atom for ``e``, let-binding it (into ``out``) unless it is one."""
        e = self.flat(e, out)
        if is_atom(e) or isinstance(e, ir.Lam):
            return e
        name = self.fresh("t")
        out.append((name, e))
        return ir.Var(name, type=e.type, span=e.span)

    def flat(self, e: ir.Expr, out: list) -> ir.Expr:
        """``e`` with its immediate sub-expressions made atoms (bindings into ``out``)."""
        match e:
            case ir.Const() | ir.Var() | ir.FnRef():
                return e
            case ir.Let(binder, rhs, body):
                out.append((binder, self.flat(rhs, out)))
                return self.flat(body, out)
            case ir.Lam(v, t, body):
                return ir.Lam(v, t, self.expr(body), type=e.type, span=e.span)
            case ir.If(c, t, f):
                return ir.If(self.atom(c, out), self.expr(t), self.expr(f), type=e.type, span=e.span)
            case ir.Case(s, lv, lb, rv, rb):
                return ir.Case(self.atom(s, out), lv, self.expr(lb), rv, self.expr(rb), type=e.type, span=e.span)
            case ir.Assert(c, body):
                return ir.Assert(self.atom(c, out), self.expr(body), type=e.type, span=e.span)
            case ir.Call(f, ir.Tuple(elems) as arg):
                args = ir.Tuple(tuple(self.atom(x, out) for x in elems), type=arg.type, span=arg.span)
                return ir.Call(f, args, type=e.type, span=e.span)
        return rebuild(e, [self.atom(c, out) for c, _ in children(e)])

    def expr(self, e: ir.Expr) -> ir.Expr:
        out: list = []
        body = self.flat(e, out)
        for binder, rhs in reversed(out):
            body = ir.Let(binder, rhs, body, type=body.type)
        return body


@deep
def anf(e: ir.Expr, fresh: FreshNames | None = None) -> ir.Expr:
    return _Anf(fresh or FreshNames(all_names(e))).expr(e)


def _rename(e: ir.Expr, env: dict[str, str], fresh: FreshNames, log: dict[str, str]) -> ir.Expr:
    """``env`` maps old names to new (mutated and restored, so deep lets stay linear);
    ``log`` records every renaming made."""
    def under(olds: tuple[str, ...], body: ir.Expr) -> tuple[tuple[str, ...], ir.Expr]:
        news = tuple(fresh(n) for n in olds)
        log.update(zip(olds, news))
        saved = [(n, env.get(n)) for n in olds]
        env.update(zip(olds, news))
        try:
            return news, _rename(body, env, fresh, log)
        finally:
            for n, old in reversed(saved):
                env.pop(n) if old is None else env.__setitem__(n, old)

    match e:
        case ir.Var(name):
            return ir.Var(env.get(name, name), type=e.type, span=e.span)
        case ir.Lam(v, t, body):
            (new,), b = under((v,), body)
            return ir.Lam(new, t, b, type=e.type, span=e.span)
        case ir.Let(binder, rhs, body):
            r = _rename(rhs, env, fresh, log)
            news, b = under(e.names, body)
            return ir.Let(news[0] if isinstance(binder, str) else news, r, b,
                          type=e.type, span=e.span, binding_span=e.binding_span)
        case ir.Case(s, lv, lb, rv, rb):
            (nl,), l_ = under((lv,), lb)
            (nr,), r_ = under((rv,), rb)
            return ir.Case(_rename(s, env, fresh, log), nl, l_, nr, r_, type=e.type, span=e.span)
    return rebuild(e, [_rename(c, env, fresh, log) for c, _ in children(e)])


@deep
def rename_apart(e: ir.Expr, fresh: FreshNames, log: dict[str, str] | None = None) -> ir.Expr:
    """Give every binder of ``e`` a fresh name (free variables keep theirs);
    ``log``, if given, receives the map from old to new binder names."""
    return _rename(e, {}, fresh, {} if log is None else log)
