"""chadfwd's translation Fwd[Γ] (Vákár & Smeding, CHAD §7.3, §7.4, §10):

    Γ ⊢ t : σ   ↦   F1 Γ ⊢ Fwd[Γ] t : Tuple (F1 σ) (F2 Γ ⊸ F2 σ)

The first component is the primal value, the second the derivative of t with
respect to the whole context Γ (a snoc list of tangents, :mod:`.chad_types`).
This is not dual numbers: the whole primal runs first and the tangent map
afterwards (§11.1).  One case per construct in the paper's order (variables,
let, operations, unit and tuples, projections, λ, application), then the
binder rule for arrays (§10) and the [ext] rules: conditionals, sums, loops,
top-level functions and ``(fn f)``.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V, tup
from ..ir.names import DerivedName, erase_types
from ..ir.types import FLOAT, TLam, TSum, TTuple
from ..opt.simplify import simplify
from ..types.checker import check_expr
from ..types.primitives import lookup
from ..types.tangent import is_constant_tangent
from ..util.deep import deep
from .chad_common import ChadBase, args_of_call, hand_written, lam_arg, lget, plus, zero
from .chad_types import Context, f1, f2

TRANSLATION = "chadF"


class Fwd(ChadBase):
    algorithm = "chadfwd"

    def __init__(self, functions, fresh) -> None:
        super().__init__(functions, fresh, f2)

    def tan(self, g: Context | None, body) -> ir.Lam:
        """``lin v -> body(v)`` with v : F2 Γ."""
        v = self.fresh("v")
        self.linear.add(v)
        return ir.Lam(v, self.ctx(g), body(V(v)))

    def proj(self, g: Context, x: str, v: ir.Expr) -> ir.Expr:
        """proj_{idx(x; Γ)} v."""
        node, cur = g, v
        while node is not None and node.name != x:
            cur = lget(1, node.lin_type, cur)
            node = node.prev
        if node is None:
            raise ValueError(x)
        return lget(2, node.lin_type, cur)

    def term(self, e: ir.Expr, g: Context | None) -> ir.Expr:
        go = self.term
        match e:
            case ir.Var(x):
                return tup(V(x), self.tan(g, lambda v: self.proj(g, x, v)))
            case ir.Let(x, rhs, body) if isinstance(x, str):
                sub, g2 = self.scope(g, body, x, rhs.type)
                xd, y, yd = self.fresh(x + "d"), self.fresh("y"), self.fresh("yd")
                t = self.tan(g, lambda v: ir.App(V(yd), tup(self.project(g, sub, v), ir.App(V(xd), v))))
                return ir.Let((x, xd), go(rhs, g), ir.Let((y, yd), go(body, g2), tup(V(y), t)))
            case ir.Call(f, _) if lookup(f) is not None:
                return self.primitive(e, g)
            case ir.Const():
                return tup(e, self.tan(g, lambda v: zero(f2(e.type))))
            case ir.Tuple(elems):
                names = [(self.fresh("x"), self.fresh("xd")) for _ in elems]
                body = tup(tup(*(V(x) for x, _ in names)),
                           self.tan(g, lambda v: tup(*(ir.App(V(xd), v) for _, xd in names))))
                for (x, xd), a in reversed(list(zip(names, elems))):
                    body = ir.Let((x, xd), go(a, g), body)
                return body
            case ir.Get(i, n, t):
                x, xd = self.fresh("x"), self.fresh("xd")
                whole = f2(t.type)
                return ir.Let((x, xd), go(t, g), tup(ir.Get(i, n, V(x)),
                                                     self.tan(g, lambda v: lget(i, whole, ir.App(V(xd), v)))))
            case ir.Lam(x, a, body):
                return self.lam_rule(e, x, a, body, g)
            case ir.App(f, a):
                fv, fd, av, ad, z, zd = (self.fresh(s) for s in ("f", "fd", "a", "ad", "z", "zd"))
                t = self.tan(g, lambda v: plus(C("chadApp", ir.App(V(fd), v), V(av)),
                                               ir.App(V(zd), ir.App(V(ad), v))))
                return ir.Let((fv, fd), go(f, g), ir.Let((av, ad), go(a, g), ir.Let(
                    (z, zd), ir.App(V(fv), V(av)), tup(V(z), t))))
            case ir.If(c, t, f):
                cv, cd = self.fresh("c"), self.fresh("cd")
                return ir.Let((cv, cd), go(c, g), ir.If(V(cv), go(t, g), go(f, g)))
            case ir.Assert(c, body):
                cv, cd = self.fresh("c"), self.fresh("cd")
                return ir.Let((cv, cd), go(c, g), ir.Assert(V(cv), go(body, g)))
            case ir.Inj(left, t, a):
                x, xd = self.fresh("x"), self.fresh("xd")
                return ir.Let((x, xd), go(a, g), tup(ir.Inj(left, f1(t), V(x)),
                                                     self.tan(g, lambda v: ir.Inj(left, f2(t), ir.App(V(xd), v)))))
            case ir.Case(s, lv, lb, rv, rb):
                p, pd = self.fresh("p"), self.fresh("pd")
                branches = [self.branch(left, var, body, s.type, pd, g)
                            for left, var, body in ((True, lv, lb), (False, rv, rb))]
                return ir.Let((p, pd), go(s, g), ir.Case(V(p), lv, branches[0], rv, branches[1]))
            case ir.FnRef(f):
                if lookup(f) is not None or isinstance(f, DerivedName):
                    raise self.unsupported(f"(fn {f}) of a primitive or derived function", e)
                x = self.fresh("x")
                primal = ir.Lam(x, f1(e.type.arg), ir.Call(DerivedName(TRANSLATION, erase_types(f)), V(x)))
                return tup(primal, self.tan(g, lambda v: zero(f2(e.type))))
            case ir.Call(f, arg):
                if isinstance(f, DerivedName):
                    raise self.unsupported(f"a call of the derived function {f}", e)
                a, ad, z, zd = (self.fresh(s) for s in ("a", "ad", "z", "zd"))
                written = hand_written(self.functions, f, arg.type, e.type, ("chadfwd", "fwd"), True)
                if written is not None:  # the user's [fwd f], on dense tangents
                    t = self.tan(g, lambda v: ir.Call(written, tup(V(a), C("chadDense", V(a), ir.App(V(ad), v)))))
                    return ir.Let((a, ad), go(arg, g), tup(ir.Call(f, V(a), span=e.span), t))
                callee = ir.Call(DerivedName(TRANSLATION, erase_types(f)), V(a), span=e.span)
                t = self.tan(g, lambda v: ir.App(V(zd), ir.App(V(ad), v)))
                return ir.Let((a, ad), go(arg, g), ir.Let((z, zd), callee, tup(V(z), t)))
        raise TypeError(f"not an expression: {e!r}")

    def lam_rule(self, e: ir.Lam, x: str, a, body: ir.Expr, g: Context | None) -> ir.Expr:
        """Fwd[Γ] (\\x -> t): the derivative in the argument, and in the context (a power)."""
        sub, g2 = self.scope(g, body, x, a)
        y, x2, x3, z, zd, u = (self.fresh(s) for s in ("y", x, x, "z", "zd", "u"))
        self.linear.add(u)
        arg_tan = ir.Lam(u, f2(a), ir.App(V(zd), tup(zero(self.ctx(sub)), V(u))))
        primal = ir.Lam(x2, f1(a), ir.Let((z, zd), ir.App(V(y), V(x2)), tup(V(z), arg_tan)))
        power = self.tan(g, lambda v: ir.Lam(x3, f1(a), ir.App(ir.Get(2, 2, ir.App(V(y), V(x3))),
                                                               tup(self.project(g, sub, v), zero(f2(a))))))
        return ir.Let(y, ir.Lam(x, f1(a), self.term(body, g2)), tup(primal, power))

    def branch(self, left: bool, var: str, body: ir.Expr, sum_t: TSum, pd: str, g):
        sub, g2 = self.scope(g, body, var, sum_t.left if left else sum_t.right)
        r, rd = self.fresh("r"), self.fresh("rd")
        side = "chadLeft" if left else "chadRight"
        t = self.tan(g, lambda v: ir.App(V(rd), tup(self.project(g, sub, v), C(side, ir.App(V(pd), v)))))
        return ir.Let((r, rd), self.term(body, g2), tup(V(r), t))

    def primitive(self, e: ir.Call, g: Context | None) -> ir.Expr:
        prim = lookup(e.func)
        name, args = prim.name, args_of_call(e)
        if name in LOOPS:
            return LOOPS[name](self, e, args, g)
        names = [(self.fresh("x"), self.fresh("xd")) for _ in args]
        xs = [a if isinstance(a, ir.Const) else V(x) for (x, _), a in zip(names, args)]  # literals stay known
        call = ir.Call(e.func, xs[0] if len(xs) == 1 and not isinstance(e.arg, ir.Tuple) else tup(*xs),
                       span=e.span)

        def wrap(body):
            for (x, xd), a in reversed(list(zip(names, args))):
                body = ir.Let((x, xd), self.term(a, g), body)
            return body
        if prim.nondiff or is_constant_tangent(e.type):
            return wrap(tup(call, self.tan(g, lambda v: zero(f2(e.type)))))
        if name == "index":
            return wrap(tup(call, self.tan(g, lambda v: C("chadIndex", xs[0], ir.App(V(names[1][1]), v)))))
        if name == "unzip":
            return wrap(tup(call, self.tan(g, lambda v: C("chadUnzip", ir.App(V(names[0][1]), v)))))
        if name == "constVec":
            return wrap(tup(call, self.tan(g, lambda v: C("constVec", xs[0], ir.App(V(names[1][1]), v)))))
        if name == "Vec_init" and e.type.rank == 1:
            return wrap(tup(call, self.tan(g, lambda v: C("Vec_init", *(ir.App(V(xd), v) for _, xd in names)))))
        arg_types = tuple(a.type for a in args)
        if "fwd" not in prim.rules or e.type != FLOAT or not all(a == FLOAT or is_constant_tangent(a)
                                                                 for a in arg_types):
            raise self.unsupported(f"'{name}' on {e.arg.type} (only scalar primitives, build, sumbuild, index, "
                                   "constVec, fold and ifold reach CHAD)", e)
        y = self.fresh("y")

        def tangent(v):
            ds = [self.fresh("dx") if a == FLOAT else None for a in arg_types]
            dargs = tuple(V(d) if d else ir.Tuple(()) for d in ds)
            env = {x: a for (x, _), a in zip(names, arg_types)} | {d: FLOAT for d in ds if d} | {y: e.type}
            out = simplify(check_expr(prim.rules["fwd"](tuple(xs), dargs, arg_types, V(y)), self.functions, env))
            for d, (_, xd) in reversed(list(zip(ds, names))):
                if d:
                    out = ir.Let(d, ir.App(V(xd), v), out)
            return out
        return wrap(ir.Let(y, call, tup(V(y), self.tan(g, tangent))))


# --- loops: the binder rule of §10 and the [ext] fold --------------------------------------


def _body(tr: Fwd, lam: ir.Lam, g):
    sub, g2 = tr.scope(g, lam.body, lam.var, lam.var_type)
    return sub, ir.Lam(lam.var, f1(lam.var_type), tr.term(lam.body, g2))


def _indexed(tr: Fwd, e, args, g, loop: str, tangent_loop: str):
    n, f = args
    lam = lam_arg(f, loop, e, tr.algorithm)
    nv, nd, y, i, j = (tr.fresh(s) for s in ("n", "nd", "y", "i", "i"))
    sub, body = _body(tr, lam, g)
    primal = ir.Call(loop, tup(V(nv), ir.Lam(i, n.type, ir.Get(1, 2, ir.App(V(y), V(i))))), span=e.span)
    t = tr.tan(g, lambda v: C(tangent_loop, V(nv), ir.Lam(j, n.type, ir.App(
        ir.Get(2, 2, ir.App(V(y), V(j))), tup(tr.project(g, sub, v), zero(f2(n.type)))))))
    return ir.Let((nv, nd), tr.term(n, g), ir.Let(y, body, tup(primal, t)))


def _fold(tr: Fwd, e, args, g):
    f, acc0, xs = args
    lam = lam_arg(f, "fold", e, tr.algorithm)
    a0, a0d, xv, xd, y, z, zt = (tr.fresh(s) for s in ("a0", "a0d", "xs", "xsd", "y", "z", "zt"))
    sub, body = _body(tr, lam, g)
    t = tr.tan(g, lambda v: ir.App(V(zt), tup(tr.project(g, sub, v), tup(ir.App(V(a0d), v), ir.App(V(xd), v)))))
    loop = ir.Let((z, zt), C("chadFoldF", V(y), V(a0), V(xv)), tup(V(z), t))
    return ir.Let((a0, a0d), tr.term(acc0, g), ir.Let((xv, xd), tr.term(xs, g), ir.Let(y, body, loop)))


def _ifold(tr: Fwd, e, args, g):
    n, f, acc0 = args
    lam = lam_arg(f, "ifold", e, tr.algorithm)
    nv, nd, a0, a0d, y, z, zt = (tr.fresh(s) for s in ("n", "nd", "a0", "a0d", "y", "z", "zt"))
    sub, body = _body(tr, lam, g)
    t = tr.tan(g, lambda v: ir.App(V(zt), tup(tr.project(g, sub, v), ir.App(V(a0d), v))))
    loop = ir.Let((z, zt), C("chadIFoldF", V(nv), V(y), V(a0)), tup(V(z), t))
    return ir.Let((nv, nd), tr.term(n, g), ir.Let((a0, a0d), tr.term(acc0, g), ir.Let(y, body, loop)))


LOOPS = {"build": lambda tr, e, a, g: _indexed(tr, e, a, g, "build", "build"),
         "sumbuild": lambda tr, e, a, g: _indexed(tr, e, a, g, "sumbuild", "chadSumBuild"),
         "fold": _fold, "ifold": _ifold}


@deep
def translate_def(d: ir.Def, functions, fresh) -> ir.Def:
    """[chadF f] (x : F1 S) = let <z, z'> = Fwd[x] body in <z, lin dx -> z' • snoc(dx)>."""
    tr = Fwd(functions, fresh)
    g = None
    for p in d.params:
        g = tr.extend(g, p.name, p.type)
    z, zd, dx = fresh("z"), fresh("zd"), fresh("dx")
    ds = f2(d.arg_type)
    if len(d.params) == 1:
        snoc = tup(ir.Tuple(()), V(dx))
    else:
        snoc = ir.Tuple(())
        for k in range(len(d.params)):
            snoc = tup(snoc, lget(k + 1, ds, V(dx)))
    body = ir.Let((z, zd), tr.term(d.body, g), tup(V(z), ir.Lam(dx, ds, ir.App(V(zd), snoc))))
    params = tuple(ir.Param(p.name, f1(p.type), span=p.span) for p in d.params)
    ret = TTuple((f1(d.ret), TLam(ds, f2(d.ret))))
    tr.linear.add(dx)
    out = ir.Def(DerivedName(TRANSLATION, erase_types(d.name)), ret, params, body, span=d.span)
    return out, tr.linear
