"""Conversion back from CL to the IR: the term ``c`` of ``def f : S ⇒ T = c``
becomes the body of a def, by Fig. 10's semantics read as code generation.

    Γ ⊢ e : τ  ↦  C⟦e⟧Γ : T(Γ) ⇒ τ  ↦  x̄ : T(Γ) ⊢ back⟦C⟦e⟧Γ⟧(x̄) : τ

    back⟦I⟧t = t                      back⟦P[ī/n]⟧t = (tᵢ₁ … tᵢₘ)       back⟦K(k)⟧t = k
    back⟦F(π_{i,n})⟧t = tᵢ            back⟦F(f)⟧t = (f t)
    back⟦c₁ ; c₂⟧t = let v = back⟦c₁⟧t in back⟦c₂⟧v      (v only when the value is not trivial)
    back⟦(c₁ … cₙ)⟧t = (back⟦c₁⟧t … back⟦cₙ⟧t)
    back⟦IF(c₁,c₂,c₃)⟧t = (if back⟦c₁⟧t back⟦c₂⟧t back⟦c₃⟧t)
    back⟦L(x,c_r,c_b)⟧t = (let (x back⟦c_r⟧t) back⟦c_b⟧(t ▷ x))
    back⟦B(c_s,i,c_e)⟧t = (build back⟦c_s⟧t (lam (i : Integer) back⟦c_e⟧(t ▷ i)))
    back⟦B(c_s,i,c_e) ; F(sum)⟧t = (sumbuild …)               back⟦FOLD⟧, back⟦ASSERT⟧ alike

Note [Contexts as variables]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A context t is kept as the list of its components (variables, constants and
projections of variables: trivial expressions, which may be copied freely,
as in the Knossos compiler's ``fromCLExpr``), never as a tuple built at run
time, so pruning and projections cost nothing in the generated code and the
names of the source's lets come back.  A value that is not trivial is let-bound
before a second use.  A bound name that is already taken gets a fresh one,
so nothing is shadowed.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import Span
from ..ir import nodes as ir
from ..ir.names import Name
from ..ir.traverse import FreshNames
from ..ir.types import INTEGER, TTensor, TTuple, Type
from ..types.checker import Functions
from ..util.deep import deep, gc_paused
from .syntax import Assert, Build, CLDef, Comp, Fold, Func, Identity, If, Konst, Let, Prune, Term, Tup, projection_index
from .typing import UNIT, Checker, extend, index_type


@dataclass(frozen=True)
class Val:
    """A value in generated code: ``parts`` (a tuple of trivial expressions) or ``expr``."""

    type: Type
    parts: tuple[ir.Expr, ...] | None = None
    expr: ir.Expr | None = None


def trivial(e: ir.Expr) -> bool:
    return isinstance(e, (ir.Var, ir.Const)) or (isinstance(e, ir.Get) and trivial(e.arg))


class Back:
    def __init__(self, functions: Functions, fresh: FreshNames, taken: set[str], span: Span | None) -> None:
        self.checker = Checker(functions, span)
        self.fresh, self.taken = fresh, taken

    def name(self, x: str) -> str:
        if x in self.taken:
            x = self.fresh(x)
        self.taken.add(x)
        return x

    def expr_of(self, v: Val) -> ir.Expr:
        if v.parts is not None:
            return ir.Tuple(v.parts, type=v.type)
        return v.expr

    def dupable(self, v: Val, out: list) -> Val:
        if v.parts is not None or trivial(v.expr):
            return v
        x = self.name(self.fresh("t"))
        out.append((x, v.expr))
        return Val(v.type, expr=ir.Var(x, type=v.type))

    def parts(self, v: Val, out: list) -> tuple[ir.Expr, ...]:
        if v.parts is not None:
            return v.parts
        v = self.dupable(v, out)
        n = len(v.type.elems)
        return tuple(ir.Get(k + 1, n, v.expr, type=t) for k, t in enumerate(v.type.elems))

    def scope(self, c: Term, v: Val) -> tuple[ir.Expr, Type]:
        out: list = []
        r = self.term(c, v, out)
        return wrap(out, self.expr_of(r)), r.type

    def term(self, c: Term, v: Val, out: list) -> Val:
        """back⟦c⟧v, with bindings appended to ``out``; ``v`` is trivial (copied freely)."""
        match c:
            case Identity():
                return v
            case Konst(value, ctype):
                return Val(ctype, expr=ir.Const(value, ctype, type=ctype))
            case Prune(picks, _):
                parts = self.parts(v, out)
                return Val(TTuple(tuple(v.type.elems[i - 1] for i in picks)), parts=tuple(parts[i - 1] for i in picks))
            case Func(name):
                return self.call(name, v)
            case Comp(parts):
                k = 0
                while k < len(parts):
                    if k:
                        v = self.dupable(v, out)
                    nxt = parts[k + 1] if k + 1 < len(parts) else None
                    if isinstance(parts[k], Build) and nxt == Func("sum"):
                        v = self.build(parts[k], v, out, "sumbuild")
                        k += 2
                        continue
                    v = self.term(parts[k], v, out)
                    k += 1
                return v
            case Tup(elems):
                vals = [self.term(x, v, out) for x in elems]
                t = TTuple(tuple(x.type for x in vals))
                exprs = tuple(self.expr_of(x) for x in vals)
                return Val(t, parts=exprs) if all(trivial(e) for e in exprs) else Val(t, expr=ir.Tuple(exprs, type=t))
            case If(cond, then, orelse):
                test = self.expr_of(self.term(cond, v, out))
                (a, t), (b, _) = self.scope(then, v), self.scope(orelse, v)
                return Val(t, expr=ir.If(test, a, b, type=t))
            case Let(x, rhs, body):
                r = self.term(rhs, v, out)
                ctx = self.parts(v, out)
                x = self.name(x)
                out.append((x, self.expr_of(r)))
                return self.term(body, Val(extend(v.type, r.type), parts=(*ctx, ir.Var(x, type=r.type))), out)
            case Build():
                return self.build(c, v, out, "build")
            case Fold(x, body, init, vec):
                a, vv = self.term(init, v, out), self.term(vec, v, out)
                a_e, vec_e = self.expr_of(a), self.expr_of(vv)
                ctx = self.parts(v, out)
                xt = TTuple((a.type, vv.type.elem))
                x = self.name(x)
                step, _ = self.scope(body, Val(extend(v.type, xt), parts=(*ctx, ir.Var(x, type=xt))))
                lam = ir.Lam(x, xt, step)
                return Val(a.type, expr=ir.Call("fold", ir.Tuple((lam, a_e, vec_e))))
            case Assert(cond, body):
                test = self.expr_of(self.term(cond, v, out))
                b, t = self.scope(body, v)
                return Val(t, expr=ir.Assert(test, b, type=t))
        raise TypeError(f"not a CL term: {c!r}")

    def call(self, name: Name, v: Val) -> Val:
        proj = projection_index(name)
        if proj is not None:
            i, n = proj
            t = v.type.elems[i - 1]
            return Val(t, expr=v.parts[i - 1] if v.parts is not None else ir.Get(i, n, v.expr, type=t))
        t = self.checker.infer(Func(name), v.type)
        return Val(t, expr=ir.Call(name, self.expr_of(v), type=t))

    def build(self, c: Build, v: Val, out: list, prim: str) -> Val:
        size = self.term(c.size, v, out)
        ctx = self.parts(v, out)
        idx = index_type(size.type)
        i = self.name(c.var)
        body, elem = self.scope(c.body, Val(extend(v.type, idx), parts=(*ctx, ir.Var(i, type=idx))))
        lam = ir.Lam(i, idx, body)
        t = elem if prim == "sumbuild" else TTensor(1 if idx == INTEGER else len(idx.elems), elem)
        return Val(t, expr=ir.Call(prim, ir.Tuple((self.expr_of(size), lam))))


def wrap(out: list, body: ir.Expr) -> ir.Expr:
    for x, rhs in reversed(out):
        body = ir.Let(x, rhs, body)
    return body


@deep
@gc_paused
def from_cl(d: CLDef, name: Name, functions: Functions, span: Span | None = None) -> ir.Def:
    """The def ``name`` computing what ``d`` computes, with d's parameters."""
    params = tuple(ir.Param(x, t) for x, t in d.params)
    taken = {x for x, _ in d.params}
    back = Back(functions, FreshNames(taken | _bound_names(d.body)), taken, span)
    if len(params) == 1:
        v = Val(d.arg, expr=ir.Var(params[0].name, type=d.arg))
    else:
        v = Val(d.arg if d.params else UNIT, parts=tuple(ir.Var(x, type=t) for x, t in d.params))
    body, _ = back.scope(d.body, v)
    return ir.Def(name, d.ret, params, body, span=span)


def _bound_names(c: Term) -> set[str]:
    out, stack = set(), [c]
    while stack:
        x = stack.pop()
        if isinstance(x, (Let, Build, Fold)):
            out.add(x.var)
        stack.extend(x.kids())
    return out
