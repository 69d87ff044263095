"""§9's lowering of CHAD's output to first-order code (Vákár & Smeding, CHAD:
combinatory homomorphic automatic differentiation, §9): the run-time primitives
of the linear layer replaced by plain IR where the types allow, so that the
derivative runs on every backend, the compiled one included.

    Γ ⊢ t : τ  (CHAD's term, linear formers as chad* primitives)
      ↦  Γ ⊢ lower(t) : τ   (the same value; no chad* primitive left), or t unchanged

One case per linear former, in Fig. 5's order (0, +, the opened tuple, the
power applied, the linear ops of arrays, Σ, the loops, the wrapper's last step):

    chadZero T             the literal zero of T when T holds no vector, sum or function
                           (0.0, (tuple), tuples of them)
    chadPlus a b           add (Float), ts_add (tuples and tensors of reals), (tuple) (unit)
    chadOpen t             t (no symbolic zero exists once the def is lowered)
    chadApp f a            (f a)
    chadIndex i w          index i w
    chadOneHot xs i w      deltaVec (size xs) i w (a vector of reals: sparse in every backend,
                           one write per term in a compiled loop)
    chadSumVec w           sum w
    chadSumBuild n f       sumbuild n f (at Float and tuples of Floats, whose zero needs no size)
    chadIFoldF n y a0      ifold over (primal, tangent): the primal step recomputed in the tangent loop
    chadFoldF y a0 xs      the same over the elements of xs
    chadDense x w          w (the wrapper's last step: every zero is already concrete)

Note [All or nothing]
~~~~~~~~~~~~~~~~~~~~~
The run time's symbolic zero (Note [Symbolic zero]) may reach any linear value
the dynamic primitives touch: a tuple-typed cotangent may be the one value
``ZERO``, which ``get$i$n`` cannot open.  So a def is lowered only as a whole:
if any chad* primitive is left after the rewrite (a copower, a tagged sum
cotangent, a vector zero whose size the term does not give, a reverse loop),
the def keeps the dynamic run time and runs on the python backend (with the
compiled backend's note).  Values also cross defs: ``[chadR f]`` calls
``[chadR g]`` and applies its backpropagator, so f is lowered only when every
CHAD translation it calls is lowered too (a translation of a mutually recursive
function, still being made, counts as not lowered; self-recursion is fine).
Replacing a symbolic zero by a concrete one never changes a value, so the
lowered and the dynamic code agree wherever both run.

Note [Forward loops recompute the primal]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``chadIFoldF n y a0`` keeps, at run time, one tangent map per step.  A
first-order loop cannot hold a vector of closures cheaply, so the lowering
runs the primal loop for the result and, in the tangent map, one loop over
(primal accumulator, tangent accumulator) pairs that calls the step's
translation y again: the primal step twice, no storage, the same order of
additions as the dynamic version (oldest step first).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.names import DerivedName
from ..ir.traverse import free_vars, map_bottom_up, nodes
from ..ir.types import FLOAT, INTEGER, UNIT, TLam, TTensor, TTuple, Type
from ..types.primitives import lookup
from ..types.tangent import tangent_type
from ..util.deep import deep


def sizeless(t: Type) -> bool:
    """A linear type whose zero is a literal: Float, (Tuple) and tuples of them."""
    if t == FLOAT or t == UNIT:
        return True
    return isinstance(t, TTuple) and all(sizeless(e) for e in t.elems)


def reals(t: Type) -> bool:
    """A linear type ts_add adds: Float, (Tuple), tensors of reals and tuples of them."""
    if isinstance(t, TTensor):
        return t.elem == FLOAT or isinstance(t.elem, TTensor) and reals(t.elem)
    if isinstance(t, TTuple):
        return all(reals(e) for e in t.elems)
    return t == FLOAT or t == UNIT


def literal_zero(t: Type) -> ir.Expr:
    if t == FLOAT:
        return ir.Const(0.0, FLOAT, type=FLOAT)
    return ir.Tuple(tuple(literal_zero(e) for e in t.elems), type=t)


def _tangent(t: Type) -> Type | None:
    try:
        return tangent_type(t) if t is not None else None
    except ValueError:
        return None


def _context_cotangent(t: Type) -> Type | None:
    """dΓ of a reverse loop's result type Tuple A (Lam dA (Tuple dΓ …))."""
    back = t.elems[1] if isinstance(t, TTuple) and len(t.elems) == 2 else None
    if isinstance(back, TLam) and isinstance(back.res, TTuple) and back.res.elems:
        return back.res.elems[0]
    return None


def is_runtime(e: ir.Expr) -> bool:
    """A call of one of the dynamic run time's primitives (chad_runtime, chad_loops)."""
    return isinstance(e, ir.Call) and isinstance(e.func, str) and e.func.startswith("chad") \
        and lookup(e.func) is not None


def _args(e: ir.Call) -> tuple[ir.Expr, ...]:
    return e.arg.elems if isinstance(e.arg, ir.Tuple) else (e.arg,)


class _Lowering:
    def __init__(self, fresh, span) -> None:
        self.fresh, self.span = fresh, span

    def rewrite(self, x: ir.Expr) -> ir.Expr:
        if not is_runtime(x) or x.type is None:
            return x
        args, t, f = _args(x), x.type, x.func
        if f == "chadZero":
            return literal_zero(t) if sizeless(t) else x
        if f == "chadPlus":
            if t == UNIT:
                return ir.Tuple((), type=UNIT)
            if t == FLOAT:
                return ir.Call("add", x.arg, type=t, span=x.span)
            return ir.Call("ts_add", x.arg, type=t, span=x.span) if reals(t) else x
        if f in ("chadOpen",):
            return args[0]
        if f == "chadApp":
            return self.apply(args[0], args[1], t)
        if f == "chadIndex":
            return ir.Call("index", x.arg, type=t, span=x.span)
        if f == "chadOneHot" and _tangent(args[0].type) == t:
            return ir.Call("ts_delta", x.arg, type=t, span=x.span)
        if f == "chadSumVec" and args[0].type == TTensor(1, FLOAT):
            return ir.Call("sum", args[0], type=t, span=x.span)
        if f == "chadSumBuild" and sizeless(t) and args[0].type == INTEGER:
            return ir.Call("sumbuild", x.arg, type=t, span=x.span)
        if f == "chadIFoldF":
            return self.ifold_forward(*args, t)
        if f == "chadFoldF":
            return self.fold_forward(*args, t)
        if f in ("chadIFoldR", "chadFoldR") and _tangent(args[-1].type) == _context_cotangent(t):
            return self.fold_reverse(f == "chadIFoldR", args, t)
        if f == "chadDense":
            return args[1]
        return x

    def apply(self, fn: ir.Expr, arg: ir.Expr, t: Type) -> ir.Expr:
        """(fn arg), fn named first (.ks applies only variables)."""
        if isinstance(fn, ir.Var):
            return ir.App(fn, arg, type=t)
        h = self.fresh("h")
        return ir.Let(h, fn, ir.App(ir.Var(h, type=fn.type), arg, type=t), type=t)

    def ifold_forward(self, n: ir.Expr, y: ir.Expr, a0: ir.Expr, t: Type) -> ir.Expr:
        """Note [Forward loops recompute the primal]: chadIFoldF n y a0 as two ifolds."""
        a_t, tan_t = t.elems
        da_t = tan_t.res
        ny, yy, a00, p, v, q, r = (self.fresh(s) for s in ("n", "y", "a0", "p", "v", "q", "r"))
        step_arg = TTuple((a_t, INTEGER))
        primal = ir.Call("ifold", ir.Tuple((V(ny), ir.Lam(p, step_arg, ir.Get(1, 2, ir.App(V(yy), V(p)))), V(a00))))
        pair_t = TTuple((a_t, da_t))
        qt = TTuple((pair_t, INTEGER))
        acc = ir.Get(1, 2, V(q))
        r_app = ir.App(V(yy), ir.Tuple((ir.Get(1, 2, acc), ir.Get(2, 2, V(q)))))
        tan_arg = ir.Tuple((ir.Get(1, 2, V(v)), ir.Tuple((ir.Get(2, 2, acc), ir.Tuple(())))))
        step = ir.Let(r, r_app, ir.Tuple((ir.Get(1, 2, V(r)), self.apply(ir.Get(2, 2, V(r)), tan_arg, da_t))))
        loop = ir.Call("ifold", ir.Tuple((V(ny), ir.Lam(q, qt, step), ir.Tuple((V(a00), ir.Get(2, 2, V(v)))))))
        tangent = ir.Lam(v, tan_t.arg, ir.Get(2, 2, loop))
        return ir.Let(ny, n, ir.Let(yy, y, ir.Let(a00, a0, ir.Tuple((primal, tangent)))))

    def fold_reverse(self, indexed: bool, args: tuple[ir.Expr, ...], t: Type) -> ir.Expr:
        """Note [Zeros shaped like the context]: chadIFoldR n y a0 γ / chadFoldR y a0 xs γ as the
        primal loop and, in the backpropagator, rfold (Ellis et al.'s RFold) over the states."""
        a_t, back_t = t.elems
        da_t = back_t.arg
        yy, a00, xx, cz, q, u, w, r, i = (self.fresh(s) for s in ("y", "a0", "xs", "cz", "q", "u", "w", "r", "i"))
        if indexed:
            n, y, a0, gamma = args
            b_t = INTEGER
            xs = ir.Call("build", ir.Tuple((n, ir.Lam(i, INTEGER, V(i)))))
        else:
            y, a0, xs, gamma = args
            b_t = xs.type.elem
        step_t = TTuple((a_t, b_t))

        def step() -> ir.Lam:  # one per use: binders stay unique
            p = self.fresh("p")
            return ir.Lam(p, step_t, ir.Get(1, 2, ir.App(V(yy), V(p))))
        back = self.apply(ir.Get(2, 2, ir.App(V(yy), ir.Get(1, 2, V(q)))), ir.Get(2, 2, V(q)), None)
        inner = ir.Get(2, 2, V(u))  # (Tuple dA dB), dB = (Tuple) for ifold's index
        element = ir.Const(0, INTEGER) if indexed else ir.Get(2, 2, inner)  # ifold: the index's cotangent
        step_rev = ir.Lam(q, TTuple((step_t, da_t)), ir.Let(u, back, ir.Tuple((
            ir.Get(1, 2, inner), element, ir.Get(1, 2, V(u))))))
        sweep = ir.Call("rfold", ir.Tuple((step(), step_rev, V(a00), V(xx), V(w), V(cz))))
        result = ir.Tuple((ir.Get(3, 3, V(r)), ir.Get(1, 3, V(r)))) if indexed else \
            ir.Tuple((ir.Get(3, 3, V(r)), ir.Tuple((ir.Get(1, 3, V(r)), ir.Get(2, 3, V(r))))))
        backprop = ir.Lam(w, da_t, ir.Let(r, sweep, result))
        primal = ir.Call("fold", ir.Tuple((step(), V(a00), V(xx))))
        g = self.fresh("g")  # named: a call whose argument is a tuple literal reads as several arguments
        zero = ir.Let(g, gamma, C("ts_zero", V(g)))
        return ir.Let(yy, y, ir.Let(a00, a0, ir.Let(xx, xs, ir.Let(cz, zero, ir.Tuple((primal, backprop))))))

    def fold_forward(self, y: ir.Expr, a0: ir.Expr, xs: ir.Expr, t: Type) -> ir.Expr:
        """chadFoldF y a0 xs: the primal fold, and the tangent loop over indices of xs."""
        a_t, tan_t = t.elems
        da_t = tan_t.res
        b_t = xs.type.elem
        yy, a00, xx, p, v, q, r, k = (self.fresh(s) for s in ("y", "a0", "xs", "p", "v", "q", "r", "k"))
        primal = ir.Call("fold", ir.Tuple((ir.Lam(p, TTuple((a_t, b_t)), ir.Get(1, 2, ir.App(V(yy), V(p)))),
                                           V(a00), V(xx))))
        qt = TTuple((TTuple((a_t, da_t)), INTEGER))
        acc = ir.Get(1, 2, V(q))
        r_app = ir.App(V(yy), ir.Tuple((ir.Get(1, 2, acc), C("index", V(k), V(xx)))))
        dxs = ir.Get(2, 2, ir.Get(2, 2, V(v)))
        tan_arg = ir.Tuple((ir.Get(1, 2, V(v)), ir.Tuple((ir.Get(2, 2, acc), C("index", V(k), dxs)))))
        step = ir.Let(k, ir.Get(2, 2, V(q)), ir.Let(r, r_app, ir.Tuple((
            ir.Get(1, 2, V(r)), self.apply(ir.Get(2, 2, V(r)), tan_arg, da_t)))))
        size = C("size", V(xx))
        loop = ir.Call("ifold", ir.Tuple((size, ir.Lam(q, qt, step),
                                          ir.Tuple((V(a00), ir.Get(1, 2, ir.Get(2, 2, V(v))))))))
        same = C("eq", C("size", dxs), C("size", V(xx)))  # a tangent of another size: the caller's mistake
        tangent = ir.Lam(v, tan_t.arg, ir.Assert(same, ir.Get(2, 2, loop), span=self.span))
        return ir.Let(yy, y, ir.Let(a00, a0, ir.Let(xx, xs, ir.Tuple((primal, tangent)))))


_MAX_SHAPE_DEPTH = 64


class Shapes:
    """Note [Zeros shaped like the context]: a primal expression whose zero tangent is the zero
    of a lowered linear term (its sizes read from primal values), or None if the term does not
    say its shape.  ``env`` maps the def's uniquely let-bound names to their right-hand sides,
    so a Σ of the per-element backpropagators of a build, ``Σ_i get (h (index i w))`` with
    ``h = get$2$2 (y i)``, is shaped like the result of y's backpropagator."""

    def __init__(self, body: ir.Expr, fresh) -> None:
        self.fresh = fresh
        counts: dict[str, int] = {}
        self.env: dict[str, ir.Expr] = {}
        for x in nodes(body):
            for name in _binders(x):
                counts[name] = counts.get(name, 0) + 1
            if isinstance(x, ir.Let) and isinstance(x.binder, str):
                self.env[x.binder] = x.rhs
            elif isinstance(x, ir.Let):
                for k, name in enumerate(x.binder):
                    self.env[name] = (k + 1, len(x.binder), x.rhs)
        self.env = {k: v for k, v in self.env.items() if counts.get(k) == 1}

    def like(self, e: ir.Expr, bound: set[str], depth: int = 0) -> ir.Expr | None:
        """The shape of e, free of ``bound`` (variables not in scope where it is used)."""
        if depth > _MAX_SHAPE_DEPTH or e.type is None:
            return None
        if e.type == FLOAT:
            return ir.Const(0.0, FLOAT, type=FLOAT)
        if e.type == UNIT:
            return ir.Tuple((), type=UNIT)
        match e:
            case ir.Call("ts_delta", ir.Tuple((xs, _, _))):
                return self.expand(xs, bound, depth + 1)
            case ir.Call("ts_zero", x):
                return self.expand(x, bound, depth + 1)
            case ir.Call("ts_add", ir.Tuple((a, b))):
                return self.like(a, bound, depth + 1) or self.like(b, bound, depth + 1)
            case ir.Call("ts_sumbuild", ir.Tuple((_, _, like))):
                return self.expand(like, bound, depth + 1)
            case ir.Tuple(elems):  # a part without a shape is a hole: a projection may not need it
                parts = [self.like(x, bound, depth + 1) or _hole() for x in elems]
                return ir.Tuple(tuple(parts), type=TTuple(tuple(p.type for p in parts)))
            case ir.Var(name) if name in self.env:
                rhs = self.rhs(name, e.type)
                return self.like(rhs, bound | _all_binders(rhs), depth + 1)
            case ir.Let(_, _, body):
                return self.like(body, bound | set(_binders(e)), depth + 1)
            case ir.If(_, a, b):
                return self.like(a, bound, depth + 1) or self.like(b, bound, depth + 1)
            case ir.Get(i, n, x):
                return self.component(x, i, n, e.type, bound, depth + 1)
            case ir.App(f, _):
                found = self.function(f, bound, depth + 1)
                return None if found is None else self.like(found[0].body, found[1], depth + 1)
        return None

    def fill(self, e: ir.Expr, other: ir.Expr, bound: set[str], depth: int = 0) -> ir.Expr:
        """e with each ``chadZero`` of a sized type in a tail position replaced by a concrete zero
        shaped like the same position of ``other`` (the other branch of an if, same type)."""
        if depth > _MAX_SHAPE_DEPTH:
            return e
        while isinstance(other, ir.Let):
            bound = bound | set(_binders(other))
            other = other.body
        match e:
            case ir.Call("chadZero") if e.type is not None and not sizeless(e.type):
                like = self.like(other, bound)
                if like is None or _HOLE in free_vars(like) or _tangent(like.type) != e.type:
                    return e
                g = ir.Var(self.fresh("shape"), type=like.type)
                return ir.Let(g.name, like, ir.Call("ts_zero", g, type=e.type), type=e.type)
            case ir.Tuple(elems) if isinstance(other, ir.Tuple) and len(other.elems) == len(elems):
                return ir.Tuple(tuple(self.fill(a, b, bound, depth + 1) for a, b in zip(elems, other.elems)),
                                type=e.type, span=e.span)
            case ir.Lam(var, t, body) if isinstance(other, ir.Lam):
                return ir.Lam(var, t, self.fill(body, other.body, bound | {other.var}, depth + 1),
                              type=e.type, span=e.span)
            case ir.Let(binder, rhs, body):
                return ir.Let(binder, rhs, self.fill(body, other, bound, depth + 1), type=e.type, span=e.span)
        return e

    def rhs(self, name: str, t: Type) -> ir.Expr:
        rhs = self.env[name]
        if isinstance(rhs, tuple):  # component k of a tuple-pattern let
            k, n, whole = rhs
            return ir.Get(k, n, whole, type=t)
        return rhs

    def component(self, x: ir.Expr, i: int, n: int, t: Type, bound: set[str], depth: int) -> ir.Expr | None:
        """The shape of ``get$i$n x`` (of type t)."""
        if depth > _MAX_SHAPE_DEPTH:
            return None
        match x:
            case ir.Tuple(elems):
                return self.like(elems[i - 1], bound, depth + 1)
            case ir.Var(name) if name in self.env:
                rhs = self.rhs(name, x.type)
                return self.component(rhs, i, n, t, bound | _all_binders(rhs), depth + 1)
            case ir.Let(_, _, body):
                return self.component(body, i, n, t, bound | set(_binders(x)), depth + 1)
            case ir.Call("rfold", ir.Tuple((_, _, _, _, dacc, czero))):  # (dacc, dv, c): c starts at czero
                return self.like(dacc, bound, depth + 1) if i == 1 else \
                    self.like(czero, bound, depth + 1) if i == 3 else None
            case ir.App(f, _):
                found = self.function(f, bound, depth + 1)
                return None if found is None else self.component(found[0].body, i, n, t, found[1], depth + 1)
        if x.type is None:
            return None
        whole = self.like(x, bound, depth + 1)
        if whole is None:
            return None
        return whole.elems[i - 1] if isinstance(whole, ir.Tuple) else ir.Get(i, n, whole, type=t)

    def expand(self, x: ir.Expr, bound: set[str], depth: int) -> ir.Expr | None:
        """x itself if it is in scope, else with the names out of scope replaced by their
        definitions (a primal expression; None if that does not bring it in scope)."""
        if not (free_vars(x) & bound) and _HOLE not in free_vars(x):
            return x
        if depth > _MAX_SHAPE_DEPTH:
            return None
        match x:
            case ir.Var(name) if name in self.env:
                return self.expand(self.rhs(name, x.type), bound, depth + 1)
            case ir.Tuple(elems):
                parts = [self.expand(e, bound, depth + 1) or _hole() for e in elems]
                return ir.Tuple(tuple(parts), type=x.type)
            case ir.Get(i, n, y):
                inner = self.expand(y, bound, depth + 1)
                return None if inner is None else ir.Get(i, n, inner, type=x.type)
        return None

    def function(self, f: ir.Expr, bound: set[str], depth: int) -> tuple[ir.Lam, set[str]] | None:
        """The λ that f evaluates to, with the binders crossed to reach it added to ``bound``."""
        value = self.value(f, bound, depth)
        if value is None or not isinstance(value[0], ir.Lam):
            return None
        lam, crossed = value
        return lam, crossed | {lam.var}

    def value(self, e: ir.Expr, bound: set[str], depth: int) -> tuple[ir.Expr, set[str]] | None:
        """The literal (λ or tuple) e evaluates to, looking through names, lets, projections and
        applications of known λs; every binder inside what is looked into is added to ``bound``."""
        if depth > _MAX_SHAPE_DEPTH:
            return None
        match e:
            case ir.Var(name) if name in self.env:
                rhs = self.rhs(name, e.type)
                return self.value(rhs, bound | _all_binders(rhs), depth + 1)
            case ir.Lam() | ir.Tuple():
                return e, bound
            case ir.If(_, a, b):  # the branches' (co)tangents have one shape: either says it
                return self.value(a, bound, depth + 1) or self.value(b, bound, depth + 1)
            case ir.Let():
                return self.value(e.body, bound | set(_binders(e)), depth + 1)
            case ir.Get(i, _, x):
                whole = self.value(x, bound, depth + 1)
                if whole is None or not isinstance(whole[0], ir.Tuple):
                    return None
                return self.value(whole[0].elems[i - 1], whole[1], depth + 1)
            case ir.App(f, _):
                found = self.function(f, bound, depth + 1)
                return None if found is None else self.value(found[0].body, found[1], depth + 1)
        return None


_HOLE = "?hole"  # not a name of the language: a part of a shape that is not known


def _hole() -> ir.Expr:
    return ir.Var(_HOLE)


def _binders(x: ir.Expr) -> tuple[str, ...]:
    if isinstance(x, ir.Let):
        return (x.binder,) if isinstance(x.binder, str) else tuple(x.binder)
    if isinstance(x, ir.Lam):
        return (x.var,)
    if isinstance(x, ir.Case):
        return (x.left_var, x.right_var)
    return ()


def _all_binders(e: ir.Expr) -> set[str]:
    return {name for x in nodes(e) for name in _binders(x)}


@deep
def shape_sums(e: ir.Expr, fresh) -> ir.Expr:
    """The Σs left by the first rewrite whose zero is shaped like a primal value: ts_sumbuild."""
    shapes = Shapes(e, fresh)

    def rewrite(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.If) and x.type is not None:  # a zero in one branch, shaped like the other
            return ir.If(x.cond, shapes.fill(x.then, x.orelse, set()), shapes.fill(x.orelse, x.then, set()),
                         type=x.type, span=x.span)
        if isinstance(x, ir.Call) and x.func == "chadSumBuild" and x.type is not None:
            n, f = _args(x)
            if n.type == INTEGER and isinstance(f, ir.Lam):
                like = shapes.like(f.body, {f.var})
                if like is not None and _HOLE not in free_vars(like) and _tangent(like.type) == x.type:
                    return ir.Call("ts_sumbuild", ir.Tuple((n, f, like)), type=x.type, span=x.span)
        return x
    return map_bottom_up(e, rewrite)


@deep
def lower_body(e: ir.Expr, fresh, span=None) -> ir.Expr:
    """The rewrite of every linear former that has a first-order lowering (e typed); span: the
    def's, for the errors of the lowered code."""
    return map_bottom_up(e, _Lowering(fresh, span).rewrite)


@deep
def guard_lowered_calls(e: ir.Expr, fresh, lowered, forward: bool) -> ir.Expr:
    """Note [All or nothing], at the border: in a def that keeps the dynamic run time, the
    linear map of a *lowered* translation it calls, ``[chadF g] a`` / ``[chadR g] a``, is
    applied only to a dense argument (``chadDense``: shaped like a, or like g's primal result),
    since a lowered def cannot open a symbolic zero.  ``lowered(call)`` says which calls
    go to lowered translations (e typed)."""
    def rewrite(x: ir.Expr) -> ir.Expr:
        if not (isinstance(x, ir.Call) and isinstance(x.func, DerivedName) and isinstance(x.type, TTuple)
                and len(x.type.elems) == 2 and isinstance(x.type.elems[1], TLam) and lowered(x)):
            return x
        primal_t, map_t = x.type.elems
        a, p, v, h = (fresh(s) for s in ("a", "p", "v", "h"))
        shape, shape_t = (V(a), x.arg.type) if forward else (ir.Get(1, 2, V(p)), primal_t)
        if _tangent(shape_t) != map_t.arg:
            return x
        dense = C("chadDense", shape, V(v))
        wrapped = ir.Lam(v, map_t.arg, ir.Let(h, ir.Get(2, 2, V(p)), ir.App(V(h), dense)))
        call = ir.Call(x.func, V(a), span=x.span)
        return ir.Let(a, x.arg, ir.Let(p, call, ir.Tuple((ir.Get(1, 2, V(p)), wrapped))), type=x.type)
    return map_bottom_up(e, rewrite)


def runtime_left(e: ir.Expr) -> ir.Call | None:
    """The first dynamic run-time primitive left in e (None: e is fully lowered)."""
    for x in nodes(e):
        if is_runtime(x):
            return x
    return None


def translations_called(e: ir.Expr, translations: tuple[str, ...]) -> list[ir.Call]:
    """The calls of CHAD translations ([chadR g], [chadF g]) in e."""
    return [x for x in nodes(e) if isinstance(x, ir.Call) and isinstance(x.func, DerivedName)
            and x.func.derivation in translations]


def is_lowered(d: ir.Def) -> bool:
    return runtime_left(d.body) is None


__all__ = ["lower_body", "runtime_left", "translations_called", "is_lowered", "sizeless", "TLam"]
