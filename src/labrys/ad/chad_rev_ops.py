"""chadrev's rules for calls of primitives (Vákár & Smeding, CHAD §7.3 and §10; for
our arrays and loops, rules made by the paper's recipe):

    Rev[Γ] op(t1..tk) = let <xi, xi'> = Rev[Γ] ti in
                        <op(x1..xk), lin v -> let u = DopT(x1..xk; v) in Σ xi' • (proj_i u)>

``DopT`` is the primitive's ``rev`` rule from its table entry (one cotangent per
argument).  Integer/Bool results and ``nondiff`` primitives have the zero
backpropagator.  ``build n (\\i -> e)`` is the binder rule of §10 over 0..n-1
(the element cotangent of the index is (Tuple)), ``sumbuild`` its sum,
``index`` transposes to a one-hot, ``constVec`` to a sum, and ``fold``/``ifold``
run their step's backpropagators in an explicit loop (:mod:`.chad_loops`).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V, tup
from ..ir.types import FLOAT, INTEGER, TTuple
from ..opt.simplify import simplify
from ..types.checker import check_expr
from ..types.primitives import lookup
from ..types.tangent import is_constant_tangent
from .chad_common import _nodes as context_nodes
from .chad_common import args_of_call, is_zero, lam_arg, lget, plus, zero
from .chad_types import r1, r2


def bind_args(tr, args, g):
    """``let <xi, xi'> = Rev[Γ] ti`` for each argument: the names and a wrapper."""
    names = [(tr.fresh("x"), tr.fresh("xd")) for _ in args]

    def wrap(body: ir.Expr) -> ir.Expr:
        for (x, xd), a in reversed(list(zip(names, args))):
            body = ir.Let((x, xd), tr.term(a, g), body)
        return body
    return names, wrap


def _call(e: ir.Call, xs) -> ir.Call:
    return ir.Call(e.func, xs[0] if len(xs) == 1 and not isinstance(e.arg, ir.Tuple) else tup(*xs), span=e.span)


def primitive_rule(tr, e: ir.Call, g) -> ir.Expr:
    prim = lookup(e.func)
    name = prim.name
    args = args_of_call(e)
    ctx = tr.ctx(g)
    if name in LOOPS:
        return LOOPS[name](tr, e, args, g)
    names, wrap = bind_args(tr, args, g)
    xs = [a if isinstance(a, ir.Const) else V(x) for (x, _), a in zip(names, args)]  # literals stay known
    if prim.nondiff or is_constant_tangent(e.type):
        return wrap(tup(_call(e, xs), tr.back(e.type, lambda v: zero(ctx))))
    if name == "index":
        (i, _), (xv, xd) = names
        return wrap(tup(_call(e, xs), tr.back(e.type, lambda w: ir.App(V(xd), C("chadOneHot", V(xv), V(i), w)))))
    if name == "unzip":
        return wrap(tup(_call(e, xs), tr.back(e.type, lambda w: ir.App(V(names[0][1]), C("chadZip", w)))))
    if name == "constVec":
        (_, xd) = names[1]
        return wrap(tup(_call(e, xs), tr.back(e.type, lambda w: ir.App(V(xd), C("chadSumVec", w)))))
    if name == "Vec_init" and e.type.rank == 1:
        def cot(w):
            out = zero(ctx)
            for k, (_, xd) in enumerate(names):
                out = plus(out, ir.App(V(xd), C("chadIndex", ir.Const(k, INTEGER), w)))
            return out
        return wrap(tup(_call(e, xs), tr.back(e.type, cot)))
    arg_types = tuple(a.type for a in args)
    if "rev" not in prim.rules or e.type != FLOAT or not all(a == FLOAT or is_constant_tangent(a)
                                                             for a in arg_types):
        raise tr.unsupported(f"'{name}' on {e.arg.type} (only scalar primitives, build, sumbuild, index, "
                             "constVec, fold and ifold reach CHAD)", e)
    y, u = tr.fresh("y"), tr.fresh("u")

    def cot(v):
        cots = prim.rules["rev"](tuple(xs), v, arg_types, V(y))
        env = {x: a for (x, _), a in zip(names, arg_types)} | {v.name: FLOAT, y: e.type}
        out, binds = zero(ctx), []
        for k, ((_, xd), a) in enumerate(zip(names, arg_types)):
            if a == FLOAT:
                uk, cot_k = f"{u}_{k + 1}", simplify(check_expr(cots[k], tr.functions, env))  # as the others do
                if not is_zero(cot_k):
                    binds.append((uk, cot_k))
                    out = plus(out, ir.App(V(xd), V(uk)))
        for b, rhs in reversed(binds):
            out = ir.Let(b, rhs, out)
        return out
    return wrap(ir.Let(y, _call(e, xs), tup(V(y), tr.back(e.type, cot))))


# --- loops: the binder rule of §10 and the [ext] fold ------------------------------------------


def _body(tr, lam: ir.Lam, g):
    """y = \\i -> Rev[Γ, i] e, and the extended context."""
    sub, g2 = tr.scope(g, lam.body, lam.var, lam.var_type)
    return sub, g2, ir.Lam(lam.var, r1(lam.var_type), tr.term(lam.body, g2))


def _primal_of(tr, y: str, var_t) -> ir.Lam:
    i = tr.fresh("i")
    return ir.Lam(i, r1(var_t), ir.Get(1, 2, ir.App(V(y), V(i))))


def _sum(tr, g, n: ir.Expr, f: ir.Lam) -> ir.Expr:
    """Σ_i f i in R2 Γ̄, carrying Γ̄'s primal where its zero has sizes (Note [Zeros shaped like the
    context] in chad_lower.py: the dynamic run time ignores it)."""
    from .chad_rev import shaped_context
    gamma = shaped_context(tr, g)
    return C("chadSumBuild", n, f) if gamma is None else C("chadSumBuild", n, f, gamma)


def _build(tr, e, args, g):
    n, f = args
    lam = lam_arg(f, "build", e, tr.algorithm)
    sub, g2, body = _body(tr, lam, g)
    nv, nd, y, i, w = (tr.fresh(s) for s in ("n", "nd", "y", "i", "w"))
    tr.linear.add(w)
    each = tr.embed(sub, g, lget(1, g2.lin_type, ir.App(ir.Get(2, 2, ir.App(V(y), V(i))), C("chadIndex", V(i), V(w)))))
    cot = ir.Lam(w, r2(e.type), _sum(tr, g, V(nv), ir.Lam(i, n.type, each)))
    primal = ir.Call("build", tup(V(nv), _primal_of(tr, y, n.type)), span=e.span)
    return ir.Let((nv, nd), tr.term(n, g), ir.Let(y, body, tup(primal, cot)))


def _sumbuild(tr, e, args, g):
    n, f = args
    lam = lam_arg(f, "sumbuild", e, tr.algorithm)
    sub, g2, body = _body(tr, lam, g)
    nv, nd, y, i, w = (tr.fresh(s) for s in ("n", "nd", "y", "i", "w"))
    tr.linear.add(w)
    each = tr.embed(sub, g, lget(1, g2.lin_type, ir.App(ir.Get(2, 2, ir.App(V(y), V(i))), V(w))))
    cot = ir.Lam(w, r2(e.type), _sum(tr, g, V(nv), ir.Lam(i, n.type, each)))
    primal = ir.Call("sumbuild", tup(V(nv), _primal_of(tr, y, n.type)), span=e.span)
    return ir.Let((nv, nd), tr.term(n, g), ir.Let(y, body, tup(primal, cot)))


def context_primal(sub) -> ir.Expr:
    """The primal of the step's context Γ̄' as the snoc tuple its cotangent has: the loop's zero
    context cotangent is shaped like it (the dynamic run time ignores it; §9's lowering needs it,
    Note [Zeros shaped like the context] in chad_lower.py)."""
    out: ir.Expr = ir.Tuple(())
    for node in reversed(context_nodes(sub)):
        out = ir.Tuple((out, V(node.name)))
    return out


def _fold(tr, e, args, g):
    f, acc0, xs = args
    lam = lam_arg(f, "fold", e, tr.algorithm)
    sub, _, body = _body(tr, lam, g)
    a0, a0d, xv, xd, y, z, zd, w, r = (tr.fresh(s) for s in ("a0", "a0d", "xs", "xsd", "y", "z", "zd", "w", "r"))
    tr.linear.add(w)
    rt = TTuple((tr.ctx(sub), TTuple((r2(acc0.type), r2(xs.type)))))
    inner = rt.elems[1]
    cot = ir.Lam(w, r2(e.type), ir.Let(r, ir.App(V(zd), V(w)), plus(tr.embed(sub, g, lget(1, rt, V(r))), plus(
        ir.App(V(a0d), lget(1, inner, lget(2, rt, V(r)))), ir.App(V(xd), lget(2, inner, lget(2, rt, V(r))))))))
    loop = ir.Let((z, zd), C("chadFoldR", V(y), V(a0), V(xv), context_primal(sub)), tup(V(z), cot))
    return ir.Let((a0, a0d), tr.term(acc0, g), ir.Let((xv, xd), tr.term(xs, g), ir.Let(y, body, loop)))


def _ifold(tr, e, args, g):
    n, f, acc0 = args
    lam = lam_arg(f, "ifold", e, tr.algorithm)
    sub, _, body = _body(tr, lam, g)
    nv, nd, a0, a0d, y, z, zd, w, r = (tr.fresh(s) for s in ("n", "nd", "a0", "a0d", "y", "z", "zd", "w", "r"))
    tr.linear.add(w)
    rt = TTuple((tr.ctx(sub), r2(acc0.type)))
    cot = ir.Lam(w, r2(e.type), ir.Let(r, ir.App(V(zd), V(w)), plus(
        tr.embed(sub, g, lget(1, rt, V(r))), ir.App(V(a0d), lget(2, rt, V(r))))))
    loop = ir.Let((z, zd), C("chadIFoldR", V(nv), V(y), V(a0), context_primal(sub)), tup(V(z), cot))
    return ir.Let((nv, nd), tr.term(n, g), ir.Let((a0, a0d), tr.term(acc0, g), ir.Let(y, body, loop)))


LOOPS = {"build": _build, "sumbuild": _sumbuild, "fold": _fold, "ifold": _ifold}
