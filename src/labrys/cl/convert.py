"""Conversion of the first-order core to CL (Ellis et al. Fig. 10, with the
printed figure's slips corrected), with pruning:

    Γ ⊢ e : τ   ↦   C⟦e⟧Γ : T(Γ) ⇒ τ         T(x₁:τ₁ … xₙ:τₙ) = (τ₁ … τₙ)

    C⟦k⟧Γ                       = K(k)
    C⟦x⟧Γ                       = F(π_{φ(Γ,x), |Γ|})        a bare value; φ: the LAST x in Γ
    C⟦f(e)⟧Γ                    = C⟦e⟧Γ ; F(f)              (get$i$n(e) too: π is a function)
    C⟦if e₁ then e₂ else e₃⟧Γ   = IF(C⟦e₁⟧Γ, C⟦e₂⟧Γ, C⟦e₃⟧Γ)
    C⟦(e₁ … eₙ)⟧Γ               = (C⟦e₁⟧Γ, …, C⟦eₙ⟧Γ)
    C⟦let x:τ = e_r in e_b⟧Γ    = L(x, C⟦e_r⟧Γ, C⟦e_b⟧(Γ, x:τ))
    C⟦build e_s (λi.e_e)⟧Γ      = B(C⟦e_s⟧Γ, i, C⟦e_e⟧(Γ, i:ℕ))
    C⟦sumbuild e_s (λi.e_e)⟧Γ   = B(C⟦e_s⟧Γ, i, C⟦e_e⟧(Γ, i:ℕ)) ; F(sum)
    C⟦fold (λx.e_f) e_a e_v⟧Γ   = FOLD(x, C⟦e_f⟧(Γ, x:(A,E)), C⟦e_a⟧Γ, C⟦e_v⟧Γ)
    C⟦map (λx.e) v⟧Γ            = C⟦let vs = v in build (size vs) (λi. let x = vs[i] in e)⟧Γ
    C⟦assert e_c e_b⟧Γ          = ASSERT(C⟦e_c⟧Γ, C⟦e_b⟧Γ)
    C⟦let (x₁ … xₘ) = e_r in e_b⟧Γ = L(p, C⟦e_r⟧Γ, C⟦let x₁ = get$1$m(p) … in e_b⟧(Γ, p))

    Pruning: when fv(e) ⊊ Γ (e not a variable),
    C⟦e⟧Γ = P[φ(Γ,v₁) … φ(Γ,vₘ) / |Γ|] ; C⟦e⟧Γ′,  v₁ … vₘ = fv(e) in Γ order, Γ′ their sublist.

    C⟦f(x₁:τ₁ … xₙ:τₙ) = e⟧ = (f : S ⇒ τ = C⟦e⟧(x̄:τ̄)), S = (τ₁ … τₙ); for n = 1, S = τ₁ and
    the term is (I,) ; C⟦e⟧(x₁:τ₁) — a one-parameter function takes its argument bare.

Note [Pruning only on shrinkage]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Fig. 10 states pruning as an equation that applies to any e; read left to
right it would loop.  It fires only when Γ′ is strictly shorter than Γ (a
name bound twice counts once, at its last binding), and never at a variable,
whose projection already picks one component.  Every constant then sits
behind a ``P[/n]`` and runs on the empty context, as Fig. 11's
``K(k) : () ⇒ τ`` needs (Note [K and pruning] in labrys.cl.typing).  The
free variables of every sub-expression are computed once, bottom-up, so a
10⁴-long let chain converts in linear time.
"""
from __future__ import annotations

from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.traverse import FreshNames, all_names, free_vars, free_vars_table
from ..ir.types import INTEGER, TLam, TTensor, TTuple, Type
from ..util.deep import deep, gc_paused
from .syntax import Assert, Build, CLDef, Fold, Func, I, If, Konst, Let, Prune, Term, Tup, comp, projection

LOOPS = ("build", "sumbuild", "fold", "map")


def _is_vec(t: Type | None) -> bool:
    return isinstance(t, TTensor) and t.rank == 1


def _outside(what: str, span: Span | None) -> LabrysError:
    return LabrysError(f"CL (Ellis et al.'s categorical combinators, Fig. 9) has no {what}", span)


class Converter:
    def __init__(self, root: ir.Expr, fresh: FreshNames, span: Span | None) -> None:
        self.table = free_vars_table(root, 10**9)
        self.fresh, self.span = fresh, span

    def free(self, e: ir.Expr) -> frozenset[str] | set[str]:
        if isinstance(e, ir.Var):
            return {e.name}
        if isinstance(e, ir.Const):
            return set()
        got = self.table.get(id(e))
        return got if got is not None else free_vars(e)

    def expr(self, e: ir.Expr, names: tuple[str, ...], types: tuple[Type, ...], pruned: bool = False) -> Term:
        """C⟦e⟧Γ for Γ = names : types."""
        span = e.span or self.span
        if not pruned and not isinstance(e, ir.Var):
            last = {n: k for k, n in enumerate(names)}
            free = self.free(e)
            missing = [v for v in free if v not in last]
            if missing:
                raise LabrysError(f"internal: CL conversion met {missing[0]}, which is not in scope", span)
            keep = sorted(last[v] for v in free)
            if len(keep) < len(names):  # Note [Pruning only on shrinkage]
                return comp(Prune(tuple(k + 1 for k in keep), len(names)),
                            self.expr(e, tuple(names[k] for k in keep), tuple(types[k] for k in keep), True))
        match e:
            case ir.Const(value, ctype):
                return Konst(value, ctype)
            case ir.Var(name):
                k = len(names) - 1 - names[::-1].index(name)
                return projection(k + 1, len(names))
            case ir.Call(func, arg) if func in LOOPS and isinstance(arg, ir.Tuple) and any(
                    isinstance(x, ir.Lam) for x in arg.elems):
                return self.loop(e, names, types, span)
            case ir.Call(func, arg):
                if any(isinstance(x, ir.Lam) for x in (arg.elems if isinstance(arg, ir.Tuple) else (arg,))):
                    raise _outside(f"function arguments: ({show_name(func)} …) takes a lambda (only build, "
                                   "sumbuild and fold take one, as the body of a loop)", span)
                return comp(self.expr(arg, names, types), Func(func))
            case ir.Get(i, n, arg):
                return comp(self.expr(arg, names, types), projection(i, n))
            case ir.Tuple(elems):
                return Tup(tuple(self.expr(x, names, types) for x in elems))
            case ir.If(c, t, f):
                return If(self.expr(c, names, types), self.expr(t, names, types), self.expr(f, names, types))
            case ir.Let(binder, rhs, body) if isinstance(binder, str):
                return Let(binder, self.expr(rhs, names, types),
                           self.expr(body, (*names, binder), (*types, rhs.type)))
            case ir.Let(binder, rhs, body):
                return self.pattern_let(binder, rhs, body, names, types)
            case ir.Assert(c, body):
                return Assert(self.expr(c, names, types), self.expr(body, names, types))
            case ir.Lam():
                raise _outside("function values: a lambda is accepted only as the body of build, sumbuild "
                               "or fold", span)
            case ir.App():
                raise _outside("application of a function value", span)
            case ir.FnRef(func):
                raise _outside(f"functions as values: (fn {show_name(func)})", span)
            case ir.Inj() | ir.Case():
                raise _outside("sum types: inl, inr and case are outside the first-order core", span)
        raise TypeError(f"not an expression: {e!r}")

    def loop(self, e: ir.Call, names, types, span) -> Term:
        elems = e.arg.elems
        if e.func in ("build", "sumbuild") and len(elems) == 2 and isinstance(elems[1], ir.Lam):
            size, lam = elems
            out: Term = Build(self.expr(size, names, types), lam.var,
                              self.expr(lam.body, (*names, lam.var), (*types, lam.var_type)))
            return comp(out, Func("sum")) if e.func == "sumbuild" else out
        if e.func == "fold" and len(elems) == 3 and isinstance(elems[0], ir.Lam):
            lam, init, vec = elems
            return Fold(lam.var, self.expr(lam.body, (*names, lam.var), (*types, lam.var_type)),
                        self.expr(init, names, types), self.expr(vec, names, types))
        if e.func == "map" and len(elems) == 2 and isinstance(elems[0], ir.Lam) and _is_vec(elems[1].type):
            return self.expr(self.map_as_build(e), names, types, True)
        raise _outside(f"function arguments: ({e.func} …) with a lambda in this position", span)

    def map_as_build(self, e: ir.Call) -> ir.Expr:
        """(map (lam (x : A) b) v)  ↦  (let (vs v) (build (size vs) (lam (i : Integer) (let (x (index i vs)) b)))):
        the ANF pass rewrites a map so, except one whose vector a rewritten map made (it is untyped there)."""
        (lam, v), t = e.arg.elems, e.arg.elems[1].type
        vs, i = self.fresh("v"), self.fresh("i")
        item = ir.Call("index", ir.Tuple((ir.Var(i, type=INTEGER), ir.Var(vs, type=t)), type=TTuple((INTEGER, t))),
                       type=t.elem)
        body = ir.Let(lam.var, item, lam.body, type=lam.body.type)
        size = ir.Call("size", ir.Var(vs, type=t), type=INTEGER)
        build = ir.Call("build", ir.Tuple((size, ir.Lam(i, INTEGER, body, type=TLam(INTEGER, body.type)))),
                        type=e.type)
        return ir.Let(vs, v, build, type=e.type, span=e.span)

    def pattern_let(self, binder: tuple[str, ...], rhs: ir.Expr, body: ir.Expr, names, types) -> Term:
        p = self.fresh("p")
        t = rhs.type
        names, types = (*names, p), (*types, t)
        m = len(binder)
        lets = []
        for k, x in enumerate(binder):
            get = ir.Get(k + 1, m, ir.Var(p, type=t), type=t.elems[k])
            lets.append((x, self.expr(get, names, types)))
            names, types = (*names, x), (*types, t.elems[k])
        out = self.expr(body, names, types)
        for x, r in reversed(lets):
            out = Let(x, r, out)
        return Let(p, self.expr(rhs, names[:-m - 1], types[:-m - 1]), out)


@deep
@gc_paused
def convert(e: ir.Expr, gamma: tuple[tuple[str, Type], ...], fresh: FreshNames | None = None,
            span: Span | None = None) -> Term:
    """C⟦e⟧Γ of a typed first-order expression (Γ a tuple of (name, type))."""
    fresh = fresh or FreshNames(all_names(e) | {n for n, _ in gamma})
    return Converter(e, fresh, span).expr(e, tuple(n for n, _ in gamma), tuple(t for _, t in gamma))


def to_cl(d: ir.Def, fresh: FreshNames | None = None) -> CLDef:
    """C⟦f(x̄) = e⟧ of a typed def."""
    params = tuple((p.name, p.type) for p in d.params)
    body = convert(d.body, params, fresh, d.span)
    if len(params) == 1:
        body = comp(Tup((I,)), body)
    return CLDef(d.name, d.arg_type, d.ret, params, body)
