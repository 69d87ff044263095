"""chadrev's translation Rev[Γ] (Vákár & Smeding, CHAD §2.3, §2.5, §7.3, §7.5, §10):

    Γ ⊢ t : σ   ↦   R1 Γ ⊢ Rev[Γ] t : Tuple (R1 σ) (R2 σ ⊸ R2 Γ)

The first component is the primal value, the second the transpose of t's
derivative with respect to the whole context Γ (its backpropagator), a snoc
list of cotangents (:mod:`.chad_types`).  One case per construct, in the
paper's order: variables, let, operations, unit and tuples, projections,
λ, application (§7.5), then map as a binder (§10, here ``build``) and the
[ext] rules of our language: conditionals, sums, arrays, loops, calls of
top-level functions and ``(fn f)``.  Every variable the rules introduce is
fresh; the primal of a source variable keeps its name.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V, tup
from ..ir.names import DerivedName, erase_types
from ..ir.types import TLam, TSum, TTuple
from ..types.primitives import lookup
from ..util.deep import deep
from .chad_common import ChadBase, hand_written, lget, plus, sized, zero, zero_like
from .chad_common import _nodes as context_nodes
from .chad_types import Context, r1, r2

TRANSLATION = "chadR"


class Rev(ChadBase):
    algorithm = "chadrev"

    def __init__(self, functions, fresh) -> None:
        super().__init__(functions, fresh, r2)

    def back(self, t, body) -> ir.Lam:
        """``lin v -> body(v)`` with v : R2 t."""
        v = self.fresh("v")
        self.linear.add(v)
        return ir.Lam(v, r2(t), body(V(v)))

    def coproj(self, g: Context, x: str, v: ir.Expr) -> ir.Expr:
        """coproj_{idx(x; Γ)} v: v at x's place in the snoc list, 0 elsewhere."""
        suffix = []
        while g is not None and g.name != x:
            suffix.append(g)
            g = g.prev
        if g is None:
            raise ValueError(x)
        out = tup(self.zero_context(g.prev), v)
        for node in reversed(suffix):
            out = tup(out, zero_like(node.name, node.type, r2(node.type)))
        return out

    def zero_context(self, g: Context | None) -> ir.Expr:
        """0 of R2 Γ̄, shaped like the context's primal where a part has sizes (one chadZeroLike
        of the snoc tuple of its variables: one zero for the unit laws, a shape for §9's lowering)."""
        gamma = shaped_context(self, g)
        return zero(self.ctx(g)) if gamma is None else C("chadZeroLike", gamma)

    def term(self, e: ir.Expr, g: Context | None) -> ir.Expr:
        go, ctx = self.term, self.ctx(g)
        match e:
            case ir.Var(x):
                return tup(V(x), self.back(e.type, lambda v: self.coproj(g, x, v)))
            case ir.Let(x, rhs, body) if isinstance(x, str):
                sub, g2 = self.scope(g, body, x, rhs.type)
                xd = self.fresh(x + "d")
                y, yd, u = self.fresh("y"), self.fresh("yd"), self.fresh("u")
                cot = self.back(e.type, lambda v: ir.Let(u, ir.App(V(yd), v), plus(
                    self.embed(sub, g, lget(1, g2.lin_type, V(u))), ir.App(V(xd), lget(2, g2.lin_type, V(u))))))
                return ir.Let((x, xd), go(rhs, g), ir.Let((y, yd), go(body, g2), tup(V(y), cot)))
            case ir.Call(f, _) if lookup(f) is not None:
                return self.primitive(e, g)
            case ir.Const():
                return tup(e, self.back(e.type, lambda v: zero(ctx)))
            case ir.Tuple(elems):
                return self.tuple(e, elems, g)
            case ir.Get(i, n, t):
                x, xd = self.fresh("x"), self.fresh("xd")
                parts = e.arg.type.elems
                cot = self.back(e.type, lambda v: ir.App(V(xd), tup(*(
                    v if k == i - 1 else zero_like(ir.Get(k + 1, n, V(x)), s, r2(s)) for k, s in enumerate(parts)))))
                return ir.Let((x, xd), go(t, g), tup(ir.Get(i, n, V(x)), cot))
            case ir.Lam(x, a, body):
                return self.lam_rule(e, x, a, body, g)
            case ir.App(f, a):
                fv, fd, av, ad, z, zd = (self.fresh(s) for s in ("f", "fd", "a", "ad", "z", "zd"))
                cot = self.back(e.type, lambda v: plus(ir.App(V(fd), C("chadCopow", V(av), v)),
                                                       ir.App(V(ad), ir.App(V(zd), v))))
                return ir.Let((fv, fd), go(f, g), ir.Let((av, ad), go(a, g), ir.Let(
                    (z, zd), ir.App(V(fv), V(av)), tup(V(z), cot))))
            case ir.If(c, t, f):
                cv, cd = self.fresh("c"), self.fresh("cd")
                return ir.Let((cv, cd), go(c, g), ir.If(V(cv), go(t, g), go(f, g)))
            case ir.Assert(c, body):
                cv, cd = self.fresh("c"), self.fresh("cd")
                return ir.Let((cv, cd), go(c, g), ir.Assert(V(cv), go(body, g)))
            case ir.Inj(left, t, a):
                x, xd = self.fresh("x"), self.fresh("xd")
                side = "chadLeft" if left else "chadRight"
                cot = self.back(e.type, lambda v: ir.App(V(xd), C(side, v)))
                return ir.Let((x, xd), go(a, g), tup(ir.Inj(left, r1(t), V(x)), cot))
            case ir.Case(s, lv, lb, rv, rb):
                p, pd = self.fresh("p"), self.fresh("pd")
                out = r2(s.type)
                branches = [self.branch(e, left, var, body, s.type, out, pd, g)
                            for left, var, body in ((True, lv, lb), (False, rv, rb))]
                return ir.Let((p, pd), go(s, g), ir.Case(V(p), lv, branches[0], rv, branches[1]))
            case ir.FnRef(f):
                return self.fn_value(e, f, g)
            case ir.Call(f, arg):
                return self.call(e, f, arg, g)
            case ir.Let():
                raise self.unsupported("a tuple pattern here (internal: removed before)", e)
        raise TypeError(f"not an expression: {e!r}")

    # --- tuples (§7.5): pairing becomes a sum of backpropagators -------------------------

    def tuple(self, e: ir.Expr, elems, g: Context | None) -> ir.Expr:
        if not elems:
            return tup(e, self.back(e.type, lambda v: zero(self.ctx(g))))
        names = [(self.fresh("x"), self.fresh("xd")) for _ in elems]
        t = r2(e.type)

        def cot(v):
            out = zero(self.ctx(g))
            for k, (_, xd) in enumerate(names):
                out = plus(out, ir.App(V(xd), lget(k + 1, t, v)))
            return out
        body = tup(tup(*(V(x) for x, _ in names)), self.back(e.type, cot))
        for (x, xd), a in reversed(list(zip(names, elems))):
            body = ir.Let((x, xd), self.term(a, g), body)
        return body

    # --- λ (§2.5, §7.5): the context's cotangent is a copower of the calls -----------------

    def lam_rule(self, e: ir.Lam, x: str, a, body: ir.Expr, g: Context | None) -> ir.Expr:
        sub, g2 = self.scope(g, body, x, a)
        y, x2, z, zd, p = (self.fresh(s) for s in ("y", x, "z", "zd", "p"))
        lam_t = e.type
        arg_back = self.back(lam_t.res, lambda v: lget(2, g2.lin_type, ir.App(V(zd), v)))
        primal = ir.Lam(x2, r1(a), ir.Let((z, zd), ir.App(V(y), V(x2)), tup(V(z), arg_back)))
        pair = TTuple((r1(a), r2(lam_t.res)))
        fold_body = self.embed(sub, g, lget(1, g2.lin_type, ir.App(ir.Get(2, 2, ir.App(V(y), ir.Get(1, 2, V(p)))),
                                                                   ir.Get(2, 2, V(p)))))
        cot = self.back(lam_t, lambda v: C("chadCopowFold", ir.Lam(p, pair, fold_body), v))
        return ir.Let(y, ir.Lam(x, r1(a), self.term(body, g2)), tup(primal, cot))

    # --- sums [ext] (Note [Sum cotangents]) --------------------------------------------------

    def branch(self, e, left: bool, var: str, body: ir.Expr, sum_t: TSum, out, pd: str, g):
        sub, g2 = self.scope(g, body, var, sum_t.left if left else sum_t.right)
        r, rd, u = self.fresh("r"), self.fresh("rd"), self.fresh("u")
        cot = self.back(e.type, lambda v: ir.Let(u, ir.App(V(rd), v), plus(
            self.embed(sub, g, lget(1, g2.lin_type, V(u))),
            ir.App(V(pd), ir.Inj(left, out, lget(2, g2.lin_type, V(u)))))))
        return ir.Let((r, rd), self.term(body, g2), tup(V(r), cot))

    # --- top-level functions [ext]: a closed λ, so no copower ------------------------------

    def call(self, e: ir.Call, f, arg: ir.Expr, g: Context | None) -> ir.Expr:
        if isinstance(f, DerivedName):
            raise self.unsupported(f"a call of the derived function {f}", e)
        a, ad, z, zd = (self.fresh(s) for s in ("a", "ad", "z", "zd"))
        written = hand_written(self.functions, f, arg.type, e.type, ("chadrev", "rev"), False)
        if written is not None:  # the user's [rev f], on dense cotangents
            cot = self.back(e.type, lambda v: ir.App(V(ad), ir.Call(written, tup(V(a), C("chadDense", V(z), v)))))
            return ir.Let((a, ad), self.term(arg, g), ir.Let(z, ir.Call(f, V(a), span=e.span), tup(V(z), cot)))
        cot = self.back(e.type, lambda v: ir.App(V(ad), ir.App(V(zd), v)))
        callee = ir.Call(DerivedName(TRANSLATION, erase_types(f)), V(a), span=e.span)
        return ir.Let((a, ad), self.term(arg, g), ir.Let((z, zd), callee, tup(V(z), cot)))

    def fn_value(self, e: ir.FnRef, f, g: Context | None) -> ir.Expr:
        if lookup(f) is not None or isinstance(f, DerivedName):
            raise self.unsupported(f"(fn {f}) of a primitive or derived function", e)
        x = self.fresh("x")
        primal = ir.Lam(x, r1(e.type.arg), ir.Call(DerivedName(TRANSLATION, erase_types(f)), V(x)))
        return tup(primal, self.back(e.type, lambda v: zero(self.ctx(g))))

    # --- operations (§7.3) and arrays (§10, [ext]) -------------------------------------------

    def primitive(self, e: ir.Call, g: Context | None) -> ir.Expr:
        from .chad_rev_ops import primitive_rule
        return primitive_rule(self, e, g)


def param_context(self: ChadBase, params) -> Context | None:
    g = None
    for p in params:
        g = self.extend(g, p.name, p.type)
    return g


def flatten(g: Context | None, u: ir.Expr, fresh) -> ir.Expr:
    """The snoc list u : R2 Γ of a def's parameters as its flat (co)tangent tuple."""
    parts, node, cur = [], g, u
    while node is not None:
        parts.append(lget(2, node.lin_type, cur))
        cur = lget(1, node.lin_type, cur)
        node = node.prev
    parts.reverse()
    if not parts:
        return ir.Tuple(())
    return parts[0] if len(parts) == 1 else tup(*parts)


@deep
def translate_def(d: ir.Def, functions, fresh) -> ir.Def:
    """[chadR f] (x : R1 S) = let <z, z'> = Rev[x] body in <z, lin v -> flat (z' • v)>."""
    tr = Rev(functions, fresh)
    g = param_context(tr, d.params)
    z, zd, u = fresh("z"), fresh("zd"), fresh("u")
    cot = tr.back(d.ret, lambda v: ir.Let(u, ir.App(V(zd), v), flatten(g, V(u), fresh)))
    body = ir.Let((z, zd), tr.term(d.body, g), tup(V(z), cot))
    params = tuple(ir.Param(p.name, r1(p.type), span=p.span) for p in d.params)
    ret = TTuple((r1(d.ret), TLam(r2(d.ret), r2(d.arg_type))))
    out = ir.Def(DerivedName(TRANSLATION, erase_types(d.name)), ret, params, body, span=d.span)
    return out, tr.linear


def shaped_context(tr, g: Context | None) -> ir.Expr | None:
    """Γ̄'s primal as a snoc tuple, if R2 Γ̄ has sizes and is its tangent type (else None)."""
    ctx = tr.ctx(g)
    if g is None or not sized(ctx):
        return None
    from .chad_rev_ops import context_primal
    like = zero_like(context_primal(g), _snoc_type(g), ctx)
    return like.arg if isinstance(like, ir.Call) and like.func == "chadZeroLike" else None


def _snoc_type(g: Context) -> TTuple:
    """The type of the context's primal as a snoc tuple (chad_rev_ops.context_primal)."""
    out = TTuple(())
    for node in reversed(context_nodes(g)):
        out = TTuple((out, node.type))
    return out
