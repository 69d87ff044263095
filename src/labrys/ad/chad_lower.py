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
    chadZeroLike x         ts_zero x (the zero of a context variable's cotangent, shaped like it)
    chadPlus a b           add (Float), ts_add (tuples and tensors of reals), (tuple) (unit)
    chadOpen t             t (no symbolic zero exists once the def is lowered)
    chadApp f a            (f a)
    chadIndex i w          index i w
    chadOneHot xs i w      deltaVec (size xs) i w (a vector of reals: sparse in every backend,
                           one write per term in a compiled loop)
    chadSumVec w           sum w
    chadSumBuild n f [γ]   sumbuild n f at Float and tuples of Floats; elsewhere ts_sumbuild n f γ,
                           γ the context's primal the translation carries, or a primal value its body
                           names (Note [Zeros shaped like the context]); the parts of its body that are
                           zeros are taken out of the loop (Note [Zeros out of a Σ])
    chadIFoldF n y a0      ifold over (primal, tangent): the primal step recomputed in the tangent loop
    chadFoldF y a0 xs      the same over the elements of xs (their tangent's size asserted)
    chadIFoldR n y a0 γ    the primal loop, and as backpropagator rfold (Ellis et al.'s RFold) whose
    chadFoldR y a0 xs γ    context accumulator starts at ts_zero γ, γ the step's context's primal
    chadDense x w          w (the wrapper's last step: every zero is already concrete)

Note [Zeros shaped like the context]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The run time's zero is size-free (Note [Symbolic zero]); a first-order zero of a
``Vec`` needs the size of the primal it is the (co)tangent of.  Three places say it:
the reverse loops carry the primal of their step's context, γ (the translation
adds it, chad_rev_ops.context_primal; the dynamic run time ignores it), so their
accumulator is ``ts_zero γ``; a Σ is shaped like a primal found in its body
(:class:`Shapes`: a one-hot ``ts_delta xs i w`` is shaped like xs, a tuple by its
parts, a let-bound name or an applied let-bound λ by its definition — looking into
a build's per-element backpropagator ``y i`` —, an rfold's result by its
accumulator's ``ts_zero γ``), and becomes ``ts_sumbuild n f like``, which is that
zero when n is 0; and a ``0`` in one branch of an ``if`` is shaped like the same
position of the other branch.  A shape is used only if every variable in it is in
scope at the use (names are unique; the binders crossed to find it are excluded)
and its tangent type is the zero's type; otherwise the zero stays symbolic and the
def keeps the dynamic run time (Note [All or nothing]).

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
from ..ir.traverse import map_bottom_up, nodes
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
    """A linear type ts_add adds: Float, (Tuple), and tuples and tensors of them at any depth
    (vectors of tuples among them: a record's cotangent, an Integer field's unit included).
    A copower !A ⊗ W has the type of such a vector, Vec (Tuple A W), but its + is
    concatenation: it never reaches a lowered def, since copowers come only from chadCopow
    (no lowering) or from a translation with a function-typed parameter or result (never
    lowered, ad/chad.py's _not_first_order), and Note [All or nothing] keeps such a def whole."""
    if isinstance(t, TTensor):
        return reals(t.elem)
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
        if f == "chadZeroLike":
            return self.zero_like(x.arg, t)
        if f == "chadPlus":
            if t == UNIT:
                return ir.Tuple((), type=UNIT)
            if t == FLOAT:
                return ir.Call("add", x.arg, type=t, span=x.span)
            if reals(t) and _holds_records(t) and len(args) == 2:  # Note [Zeros of vectors of records]
                return self.spelt_add(args[0], args[1], t, x.span)
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
            return ir.Call("sumbuild", ir.Tuple(args[:2]), type=t, span=x.span)
        if f == "chadIFoldF":
            return self.ifold_forward(*args, t)
        if f == "chadFoldF":
            return self.fold_forward(*args, t)
        if f in ("chadIFoldR", "chadFoldR") and _tangent(args[-1].type) == _context_cotangent(t):
            return self.fold_reverse(f == "chadIFoldR", args, t)
        if f == "chadDense":
            return args[1]
        return x

    def spelt_add(self, a: ir.Expr, b: ir.Expr, t: Type, span) -> ir.Expr:
        """a + b in t, a vector of tuples as a build of the elements' sums (sizes checked)."""
        if not _holds_records(t) or not (isinstance(t, TTuple) or isinstance(t, TTensor) and t.rank == 1):
            return ir.Call("ts_add", ir.Tuple((a, b)), type=t, span=span)
        ga, gb = self.fresh("a"), self.fresh("b")
        if isinstance(t, TTuple):
            n = len(t.elems)
            body = ir.Tuple(tuple(self.spelt_add(ir.Get(k + 1, n, V(ga)), ir.Get(k + 1, n, V(gb)), e, span)
                                  for k, e in enumerate(t.elems)))
        else:
            i = self.fresh("i")
            each = self.spelt_add(C("index", V(i), V(ga)), C("index", V(i), V(gb)), t.elem, span)
            body = ir.Assert(C("eq", C("size", V(ga)), C("size", V(gb))),
                             C("build", C("size", V(ga)), ir.Lam(i, INTEGER, each)), span=span or self.span)
        return ir.Let(ga, a, ir.Let(gb, b, body))

    def zero_like(self, x: ir.Expr, t: Type) -> ir.Expr:
        """ts_zero x, x named (a call whose argument is a tuple literal reads as several arguments)."""
        if sizeless(t):
            return literal_zero(t)
        if isinstance(x, ir.Var):
            return ir.Call("ts_zero", x, type=t)
        g = self.fresh("g")
        return ir.Let(g, x, ir.Call("ts_zero", ir.Var(g, type=x.type), type=t), type=t)

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


@deep
def lower_body(e: ir.Expr, fresh, span=None) -> ir.Expr:
    """The rewrite of every linear former that has a first-order lowering (e typed); span: the
    def's, for the errors of the lowered code."""
    return spell_out_zeros(map_bottom_up(e, _Lowering(fresh, span).rewrite), fresh)


def _holds_records(t: Type) -> bool:
    """A vector of non-empty tuples somewhere in t (Note [Zeros of vectors of records])."""
    if isinstance(t, TTuple):
        return any(_holds_records(e) for e in t.elems)
    if isinstance(t, TTensor):
        return bool(isinstance(t.elem, TTuple) and t.elem.elems) or _holds_records(t.elem)
    return False


def _spelt_zero(x: ir.Expr, t: Type, fresh) -> ir.Expr:
    """Note [Zeros of vectors of records]: the zero tangent of x : t, a vector of tuples as a build."""
    if not _holds_records(t) or not (isinstance(t, TTuple) or isinstance(t, TTensor) and t.rank == 1):
        return ir.Call("ts_zero", x, type=_tangent(t))
    g = fresh("g")
    if isinstance(t, TTuple):
        body = ir.Tuple(tuple(_spelt_zero(ir.Get(k + 1, len(t.elems), V(g), type=e), e, fresh)
                              for k, e in enumerate(t.elems)))
    else:
        i = fresh("i")
        body = C("build", C("size", V(g)), ir.Lam(i, INTEGER, _spelt_zero(C("index", V(i), V(g)), t.elem, fresh)))
    return ir.Let(g, x, body)


@deep
def spell_out_zeros(e: ir.Expr, fresh) -> ir.Expr:
    """Note [Zeros of vectors of records]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    ``ts_zero x`` whose x holds a vector of tuples (a record with an Integer field, ADBench
    hand's skinning weights ``Vec (Vec (Tuple Integer Float))``) is written out: a tuple of
    its parts' zeros, and a vector's as ``build (size v) (lam i <zero of (index i v)>)``.
    The same value; the compiled backend builds vectors of tuples as structs of arrays but
    has no ``ts_zero`` of one (e typed)."""
    def rewrite(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Call) and x.func == "ts_zero" and x.arg.type is not None \
                and not isinstance(x.arg, ir.Tuple) and _holds_records(x.arg.type):
            return _spelt_zero(x.arg, x.arg.type, fresh)
        return x
    return map_bottom_up(e, rewrite)


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


