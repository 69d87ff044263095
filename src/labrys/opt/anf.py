"""A-normal form (Ellis et al. §5.1) and renaming apart.

    Γ ⊢ e : τ   ↦   Γ ⊢ anf(e) : τ, where every argument of a call, tuple,
                    projection or injection is a variable or a constant.

Lambda bodies and ``if`` branches are normalised in place: nothing is
floated out of them (their code may depend on the binder or may not run).
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import is_atom
from ..ir.traverse import FreshNames, all_names, children, map_bottom_up, rebuild
from ..ir.types import INTEGER, TTuple
from ..types.primitives import lookup
from ..util.deep import deep


class _Anf:
    def __init__(self, fresh: FreshNames, bind_tail: bool = False) -> None:
        self.fresh, self.bind_tail = fresh, bind_tail

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
        body = self.atom(e, out) if self.bind_tail else self.flat(e, out)
        for binder, rhs in reversed(out):
            body = ir.Let(binder, rhs, body, type=body.type)
        return body


@deep
def anf(e: ir.Expr, fresh: FreshNames | None = None, bind_tail: bool = False) -> ir.Expr:
    """``bind_tail``: also let-bind every scope's result, so each ends in an atom."""
    return _Anf(fresh or FreshNames(all_names(e)), bind_tail).expr(e)


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


# Note [Loop-invariant hoisting]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# In (build n (lam i (let (row (index i m)) (sumbuild k (lam j (let (r2 (index
# i m)) ...)))))) the inner index does not mention j.  Left inside, its
# reverse sends one nested one-hot into all of m per inner iteration; hoisted,
# the inner loop accumulates into one row.  Lets at the head of a loop body
# whose right-hand side mentions neither the loop variable nor anything bound
# after it move in front of the loop.  (A hoisted computation runs even when
# the loop runs zero times; in A-normal form these are cheap lookups.)

LOOPS = ("build", "sumbuild", "fold", "map", "map2")


def _invariant_prefix(lam: ir.Lam) -> tuple[list, ir.Lam]:
    """Split the lambda body's head let-chain into hoistable bindings and the rest."""
    hoisted, kept, varying = [], [], {lam.var}
    body = lam.body
    while isinstance(body, ir.Let):
        from ..ir.traverse import free_vars

        if free_vars(body.rhs) & varying or isinstance(body.rhs, (ir.Lam, ir.Assert)):
            kept.append((body.binder, body.rhs))
            varying.update(body.names)
        else:
            hoisted.append((body.binder, body.rhs))
        body = body.body
    for binder, rhs in reversed(kept):
        body = ir.Let(binder, rhs, body, type=body.type)
    return hoisted, ir.Lam(lam.var, lam.var_type, body, type=lam.type, span=lam.span)


def _hoist_call(e: ir.Expr) -> tuple[list, ir.Expr]:
    """Bindings hoisted out of a loop call's lambda, and the call without them."""
    if not (isinstance(e, ir.Call) and e.func in LOOPS and isinstance(e.arg, ir.Tuple)):
        return [], e
    args = list(e.arg.elems)
    k = 1 if e.func in ("build", "sumbuild") else 0
    if not isinstance(args[k], ir.Lam):
        return [], e
    hoisted, args[k] = _invariant_prefix(args[k])
    return hoisted, ir.Call(e.func, ir.Tuple(tuple(args), type=e.arg.type), type=e.type, span=e.span)


def _hoist(e: ir.Expr) -> ir.Expr:
    out, node = [], e
    while isinstance(node, ir.Let):
        hoisted, rhs = _hoist_call(_hoist(node.rhs))
        out.extend(hoisted)
        out.append((node.binder, rhs))
        node = node.body
    kids = children(node)
    tail = rebuild(node, [_hoist(c) for c, _ in kids]) if kids else node
    hoisted, tail = _hoist_call(tail)
    out.extend(hoisted)
    for binder, rhs in reversed(out):
        tail = ir.Let(binder, rhs, tail, type=tail.type)
    return tail


@deep
def hoist_loop_invariants(e: ir.Expr) -> ir.Expr:
    """Move loop-invariant lets out of loop bodies (input in ANF, renamed apart)."""
    return _hoist(e)


def _desugar(e: ir.Expr, fresh: FreshNames, ts_sumbuild: bool) -> ir.Expr:
    kids = children(e)
    if kids:
        e = rebuild(e, [_desugar(c, fresh, ts_sumbuild) for c, _ in kids])
    if isinstance(e, ir.Call) and e.func == "map" and isinstance(e.arg, ir.Tuple):
        f, v = e.arg.elems
        rank = getattr(v.type, "rank", None)
        # for AD, a map over a Tensor N too (Note [Loop linear maps over tensors]); compiled code keeps rank 1
        if isinstance(f, ir.Lam) and (rank == 1 or rank and ts_sumbuild):
            i, vs = fresh("i"), fresh("v")
            body = ir.Let(f.var, ir.Call("index", ir.Tuple((ir.Var(i), ir.Var(vs)))), f.body)
            size = ir.Call("size", ir.Var(vs))
            index = INTEGER if rank == 1 else TTuple((INTEGER,) * rank)
            return ir.Let(vs, v, ir.Call("build", ir.Tuple((size, ir.Lam(i, index, body)))))
    if ts_sumbuild and isinstance(e, ir.Call) and e.func in ("nTimes", "ccl") and isinstance(e.arg, ir.Tuple) \
            and isinstance(e.arg.elems[2], ir.Lam):
        return _iterate_as_fold(e.func, *e.arg.elems[:3], fresh, *e.arg.elems[3:], span=e.span)
    if ts_sumbuild and isinstance(e, ir.Call) and e.func == "ifold" and isinstance(e.arg, ir.Tuple) \
            and isinstance(e.arg.elems[1], ir.Lam):
        # (ifold n f acc0) = (fold f acc0 (build n (lam (i : Integer) i))): f already takes (acc, i)
        n, f, acc0 = e.arg.elems
        i = fresh("i")
        indices = ir.Call("build", ir.Tuple((n, ir.Lam(i, INTEGER, ir.Var(i)))))
        return ir.Call("fold", ir.Tuple((f, acc0, indices)))
    if isinstance(e, ir.Call) and e.func == "map2" and isinstance(e.arg, ir.Tuple):
        f, u, v = e.arg.elems
        rank = getattr(u.type, "rank", None)
        if isinstance(f, ir.Lam) and (rank == 1 or rank and ts_sumbuild):
            i, us, vs = fresh("i"), fresh("u"), fresh("v")
            pair = ir.Tuple(tuple(ir.Call("index", ir.Tuple((ir.Var(i), ir.Var(w)))) for w in (us, vs)))
            size = ir.Call("size", ir.Var(us))
            index = INTEGER if rank == 1 else TTuple((INTEGER,) * rank)
            same = ir.Call("eq", ir.Tuple((size, ir.Call("size", ir.Var(vs)))))
            body = ir.Call("build", ir.Tuple((size, ir.Lam(i, index, ir.Let(f.var, pair, f.body)))))
            return ir.Let(us, u, ir.Let(vs, v, ir.Assert(same, body)))
    if ts_sumbuild and isinstance(e, ir.Call) and e.func == "ts_sumbuild" and isinstance(e.arg, ir.Tuple) \
            and e.arg.elems[0].type == INTEGER:
        n, f, like = e.arg.elems
        k = fresh("n")
        empty = ir.Call("eq", ir.Tuple((ir.Var(k), ir.Const(0, INTEGER))))
        return ir.Let(k, n, ir.If(empty, ir.Call("ts_zero", like),
                                  ir.Call("sumbuild", ir.Tuple((ir.Var(k), f)))))
    return e


def _iterate_as_fold(kind: str, n: ir.Expr, s0: ir.Expr, f: ir.Lam, fresh: FreshNames,
                     commutes: ir.Expr | None = None, span=None) -> ir.Expr:
    """(nTimes n s0 (lam (s : T) e))  ↦  (fold (lam (acc_i : (Tuple T Integer)) (let (s acc) e)) s0 (build n i))
    and (ccl n s0 (lam (ks : (Tuple Integer T)) e)) the same over the indices n-1 … 0 with ks = (k, acc):
    the AD of fold (its RFold tape, Figs 16–17's revr) then serves both (Ellis et al. Figs 16–19)."""
    k, acc_i, i = fresh("n"), fresh("acc_i"), fresh("i")
    t = f.var_type if kind == "nTimes" else f.var_type.elems[1]
    pair = ir.Var(acc_i)
    acc, index = ir.Get(1, 2, pair), ir.Get(2, 2, pair)
    value = acc if kind == "nTimes" else ir.Tuple((index, acc))
    step = ir.Lam(acc_i, TTuple((t, INTEGER)), ir.Let(f.var, value, f.body))
    one = ir.Const(1, INTEGER)
    item = ir.Var(i) if kind == "nTimes" else \
        ir.Call("sub", ir.Tuple((ir.Call("sub", ir.Tuple((ir.Var(k), one))), ir.Var(i))))
    indices = ir.Call("build", ir.Tuple((ir.Var(k), ir.Lam(i, INTEGER, item))))
    if commutes is not None:  # (ccl n s0 f true): Fig. 19's O(1)-memory reverse is allowed (split mode)
        if not (isinstance(commutes, ir.Const) and isinstance(commutes.value, bool)):
            raise LabrysError("ccl's 4th argument (the steps commute) must be the literal true or false",
                              commutes.span)
    if kind == "ccl":  # split mode's choice of reverse: Note [ccl in O(1) memory] in labrys.ad.bog_loops
        mark = "cclCommutes" if commutes is not None and commutes.value else "cclTape"
        indices = ir.Call(mark, indices, span=span)
    ok = ir.Call("gte", ir.Tuple((ir.Var(k), ir.Const(0, INTEGER))))
    return ir.Let(k, n, ir.Assert(ok, ir.Call("fold", ir.Tuple((step, s0, indices)))))


@deep
def desugar_map(e: ir.Expr, fresh: FreshNames) -> ir.Expr:
    """(map (lam (x : A) e) v)  ↦  (let (vs v) (build (size vs) (lam (i : Integer) (let (x (index i vs)) e))))
    for a vector v, and map2 alike (its lambda's argument is the pair of elements);
    the result is untyped where rewritten (re-check it)."""
    return _desugar(e, fresh, False)


@deep
def desugar_for_ad(e: ir.Expr, fresh: FreshNames) -> ir.Expr:
    """As :func:`desugar_map`, ``(ifold n f acc0)`` as a fold over the indices, and
    ``(ts_sumbuild n f like)`` (reverse-mode code's
    loops) as ``(if (eq n 0) (ts_zero like) (sumbuild n f))``, so derivative code can
    be differentiated again by rules every algorithm already has."""
    return _desugar(e, fresh, True)


# Note [Spread arguments]
# ~~~~~~~~~~~~~~~~~~~~~~~
# Every primitive takes one argument, a tuple when it is called with several, so
# (add x_y) with x_y : (Tuple Float Float) is (add x y).  The derivative rules
# are written per argument (Note [Derivative rules]), so before AD such a call
# is rewritten to (add (get$1$2 x_y) (get$2$2 x_y)).  Whether a primitive spreads
# its tuple is what its evaluator at that type does: (neg p) on a pair does not.

@deep
def spread_arguments(e: ir.Expr, fresh: FreshNames) -> ir.Expr:
    """Typed ``e`` with the tuple argument of every spreading primitive call written out."""

    def spread(x: ir.Expr) -> ir.Expr:
        if not isinstance(x, ir.Call) or isinstance(x.arg, ir.Tuple) or not isinstance(x.arg.type, TTuple):
            return x
        prim = lookup(x.func)
        if prim is None or not getattr(prim.impl(x.arg.type), "spreads", False):
            return x
        t = x.arg.type
        atom = x.arg if is_atom(x.arg) else ir.Var(fresh("t"), type=t)
        parts = tuple(ir.Get(k + 1, len(t.elems), atom, type=s) for k, s in enumerate(t.elems))
        call = ir.Call(x.func, ir.Tuple(parts, type=t), type=x.type, span=x.span)
        return call if atom is x.arg else ir.Let(atom.name, x.arg, call, type=x.type, span=x.span)
    return map_bottom_up(e, spread)
