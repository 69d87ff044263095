"""The loops of BOG AD (:mod:`.bog`): ``build``/``sumbuild`` (Fig. 24, Fig. 26's
build with its environment) and ``fold``.

    Γ ⊢ build n (λi. e) : Tensor N T  ↦  forward: the Tensor N of (result, BOG) pairs, one
                                         per index i (an Integer, or a tuple of N of them)
                                         reverse: Σᵢ ∇r⟦e⟧ ∂t[i] bᵢ   (ts_sumbuild over the same i)
    Γ ⊢ fold (λt. e) a v : A        ↦   forward: the fold; a, v and what the λ captures kept
                                      reverse: RFold (Fig. 15) with the step's split as its
                                               reverse step
    Γ ⊢ ccl n a (λks. e) true : A   ↦   forward: the same (the fold over the indices n-1 … 0)
                                      reverse: Fig. 19, a fold in primal order carrying
                                               (state, ∂state, ∂captured): no tape

Note [Fold in split mode]
~~~~~~~~~~~~~~~~~~~~~~~~~
The forward pass runs the fold as it is and keeps its initial accumulator,
its vector and what its λ captures (references: O(1)).  The reverse pass is
the run-time loop ``rfold`` that Knossos ``rev`` uses (Fig. 15, corrected:
the figure returns s for ds and recurses once per step): it replays the steps keeping each accumulator, then walks
them backwards, calling the reverse step — the step's own BOG forward pass
followed by its reverse pass, in one λ.  Each step's primal thus runs three
times (fold, replay, reverse step): a constant factor, not per-step BOGs kept
from the forward pass; the captured variables' cotangents are summed over
the steps.

Note [ccl in O(1) memory]
~~~~~~~~~~~~~~~~~~~~~~~~~
``ccl`` (Fig. 18) reaches split mode as a fold over its indices (the AD
desugaring, :func:`labrys.opt.anf._iterate_as_fold`), whose index vector the
desugaring marks ``cclCommutes`` when the program writes ``(ccl n s0 f true)``
and ``cclTape`` otherwise.  Fig. 19's reverse keeps only the initial state
and replays the primal from it, applying each step's reverse map to the
running cotangent as it goes: the reverse maps are applied in *primal*
order, not reversed, so the result is the gradient only when they commute
(the condition stated under Fig. 19) — including their contributions to the captured variables,
``(∂s, ∂c) ↦ (J_k ∂s, ∂c + K_k ∂s)``: the step ``s + k·c`` commutes,
``s · c`` does not.  labrys cannot prove that, so it is the program's
assertion; without it a ccl gets the tape of its n states (RFold, as for
``fold`` and ``nTimes``, Fig. 17).  ``show`` says which each ccl got and why
(in the title of the reverse pass).  With two corrections to the figure: the step
gets its index (the figure's ``revf$f s`` drops it), and the replay is a loop
(a ``fold`` carrying state, its cotangent and the captured variables'
summed cotangents), not a recursion.

Note [ccl's numerical check]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The assertion can be false, and then the replay's result is silently not the
gradient.  So the reverse pass checks it at every call, where it has the real
values: on the ccl's first ``min(n, 3)`` steps (from the real initial state,
with the real captured values and the real incoming cotangent), it runs both
Fig. 19's replay and the tape's reverse (RFold, Fig. 17) and compares their
cotangents of the initial state and the captured variables as one vector:
``‖a − b‖ ≤ 10⁻⁶ · √(‖a‖² + ‖b‖²)``, a norm-wise relative test that the two
orders' rounding cannot fail (an element-wise one would, where a cotangent
cancels to nearly zero).  A gap is a run-time error at the ccl
(``cclCheck``), on every backend (compiled code raises, and the call is re-run
on ``python`` to report it, Note [Compiled fallback]).  The check costs a
constant: three steps twice and a tape of three states, whatever n; steps
that commute on those three but not later are not caught — it tests the
assertion, it does not prove it.  Without the assertion a ccl keeps the tape
(always right), so the O(1)-memory reverse's result is used only when the
program asserts commutativity *and* the check passes.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.types import FLOAT, INTEGER, TBogOf, TTensor, TTuple
from ..prelude.loops import CCL_CHECK_STEPS
from ..types.tangent import tangent_type
from .suf import unsupported


def _scalars(t: TTuple) -> bool:
    return all(e in (FLOAT, INTEGER) for e in t.elems)


def build(s, b, binder, rhs: ir.Call, f: str, arg: ir.Tuple) -> None:
    """build/sumbuild: the forward pass keeps each iteration's BOG; the reverse sums
    the λ's ∂s over them."""
    n, lam_ = arg.elems
    if not isinstance(lam_, ir.Lam):
        raise unsupported(f"'{f}' without a literal lambda", rhs)
    i, index_t = lam_.var, lam_.var_type  # Integer, or a tuple of Integers over a Tensor N
    s.types[i] = index_t
    rank = len(index_t.elems) if isinstance(index_t, TTuple) else 1
    consumed = sorted(s.fv(lam_))
    inner = s.block(lam_.body, b, (i,))
    pairs = s.fresh("vb")
    boxed = not _scalars(inner.bog_type)  # Note [Opaque BOGs]: one op per iteration, not its size
    box = (lambda x: C("bogPack", x)) if boxed else (lambda x: x)
    b.emit((pairs, C("build", n, ir.Lam(i, index_t, s.forward(inner, box)))))
    item = ir.Lam(i, index_t, ir.Get(1, 2, C("index", V(i), V(pairs))))
    b.emit((binder, C(f, C("size", V(pairs)), item)))
    keep = s.differentiable(consumed)
    if not keep:
        return
    pair_t = TTuple((inner.tail.type, TBogOf(inner.bog_type) if boxed else inner.bog_type))
    s.types[pairs] = pair_t
    b.store(pairs, TTensor(rank, pair_t))
    for x in keep:
        s.keep(b, x)
    dv = s.atom_cot(b, binder)
    dt_i = C("index", V(i), dv) if f == "build" else dv
    bog_i = ir.Get(2, 2, C("index", V(i), V(pairs)))
    if boxed:
        bog_i = C("bogOpen", bog_i, s.witness(inner.bog_type))
    body = s.reverse(inner, dt_i, bog_i, keep)
    like = ir.Tuple(tuple(V(x) for x in keep))
    b.cur.append((tuple(s.cot(x) for x in keep),
                  C("ts_sumbuild", C("size", V(pairs)), ir.Lam(i, index_t, body), like)))


def fold(s, b, binder, rhs: ir.Call, f: str, arg: ir.Tuple) -> None:
    """fold (λt. e) a v (Note [Fold in split mode])."""
    step, acc0, v = arg.elems
    if not isinstance(step, ir.Lam):
        raise unsupported("'fold' without a literal lambda", rhs)
    t, t_type = step.var, step.var_type
    s.types[t] = t_type
    captured = sorted(s.fv(step))
    inner = s.block(step.body, b, (t,))
    b.emit((binder, rhs))
    for x in captured + [a.name for a in (acc0, v) if isinstance(a, ir.Var)]:
        s.keep(b, x)  # the reverse pass replays the steps
    keep = s.differentiable(captured)
    if s.constant_type(acc0.type) and s.constant_type(v.type) and not keep:
        return
    dv = s.atom_cot(b, binder)
    where = _ccl_commutes(s, v, rhs)
    if where:
        return _replay(s, b, step, inner, acc0, v, dv, keep, where[1] or rhs.span)
    czero = ir.Tuple(tuple(s.zero(b, V(x), s.types[x]) for x in keep))
    d_a, d_v, d_c = s.fresh("da"), s.fresh("dv"), s.fresh("dc")
    b.cur.append(((d_a, d_v, d_c), C("rfold", step, _reverse_step(s, step, inner, keep), acc0, v, dv, czero)))
    s.give(b, acc0, V(d_a))
    s.give(b, v, V(d_v))
    for k, x in enumerate(keep):
        s.give(b, V(x), ir.Get(k + 1, len(keep), V(d_c)))


def _reverse_step(s, step: ir.Lam, inner, keep: list[str]) -> ir.Lam:
    """RFold's reverse step: ((acc, elem), ∂acc') ↦ (∂acc, ∂elem, ∂captured), the step's
    split (its forward bindings, then its reverse) in one λ."""
    t, t_type = step.var, step.var_type
    d_acc = s.fresh("dacc")
    s.types[d_acc] = tangent_type(t_type.elems[0])
    grads = s.reverse(inner, V(d_acc), None, [t] + keep, unpack=False)
    got = s.fresh("g")
    dt_step = ir.Get(1, 1 + len(keep), V(got))
    result = ir.Tuple((ir.Get(1, 2, dt_step), ir.Get(2, 2, dt_step),
                       ir.Tuple(tuple(ir.Get(k + 2, 1 + len(keep), V(got)) for k in range(len(keep))))))
    pair = s.fresh("tdr")
    pair_t = TTuple((t_type, tangent_type(t_type.elems[0])))
    body = ir.Let((t, d_acc), V(pair), s.forward_bindings(inner, ir.Let(got, grads, result)))
    return ir.Lam(pair, pair_t, body)


def _ccl_commutes(s, v: ir.Expr, rhs: ir.Call) -> tuple | None:
    """Is this fold a ccl whose steps the program asserts commute (then ``(True, the
    ccl's span)``)?  Says which reverse a ccl gets, and why, in ``s.notes`` (``show``)."""
    mark = s.ccl.get(s.alias.get(v.name, v.name)) if isinstance(v, ir.Var) else None
    if mark is None:
        return False
    commutes, span = mark
    where = f" at {span.line}:{span.col}" if span is not None else ""
    s.notes.append(f"ccl{where}: " + (
        "Fig. 19's O(1)-memory reverse (replays the primal; the program asserts that the steps commute, "
        f"checked at every call against the tape on the first {CCL_CHECK_STEPS} steps)"
        if commutes else
        "the tape of its n states (Fig. 17); Fig. 19's O(1)-memory reverse is right only for steps that "
        "commute: assert it with (ccl n s0 f true)"))
    return mark if commutes else None


def _replay(s, b, step: ir.Lam, inner, acc0: ir.Expr, v: ir.Expr, dv: ir.Expr, keep: list[str],
            span) -> None:
    """Fig. 19 (corrected: the step gets its index, the replay is a loop): the reverse
    replays the steps in primal order from the kept initial state, applying each
    step's reverse map to the running cotangent — a ``fold`` over the same indices
    carrying (state, ∂state, ∂captured): no tape."""
    t, t_type = step.var, step.var_type
    acc_t, elem_t = t_type.elems
    d_acc = s.fresh("dacc")
    s.types[d_acc] = tangent_type(acc_t)
    grads = s.reverse(inner, V(d_acc), None, [t] + keep, unpack=False)
    got, st, acc, dc, elem = (s.fresh(x) for x in ("g", "st", "acc", "dc", "k"))
    width = 1 + len(keep)
    dc_t = TTuple(tuple(tangent_type(s.types[x]) for x in keep))
    summed = ir.Tuple(tuple(C("ts_add", ir.Get(k + 1, len(keep), V(dc)), ir.Get(k + 2, width, V(got)))
                            for k in range(len(keep))))
    result = ir.Tuple((inner.tail, ir.Get(1, 2, ir.Get(1, width, V(got))), summed))
    carried = s.fresh("carry")
    state_t = TTuple((TTuple((acc_t, tangent_type(acc_t), dc_t)), elem_t))
    body = ir.Let((st, elem), V(carried),
                  ir.Let((acc, d_acc, dc), V(st),
                         ir.Let(t, ir.Tuple((V(acc), V(elem))),
                                s.forward_bindings(inner, ir.Let(got, grads, result)))))
    czero = ir.Tuple(tuple(s.zero(b, V(x), s.types[x]) for x in keep))
    replay = ir.Lam(carried, state_t, body)
    _check(s, b, step, inner, acc0, v, dv, keep, replay, czero, span)
    end, d_a, d_c = s.fresh("s"), s.fresh("da"), s.fresh("dc")
    b.cur.append(((end, d_a, d_c), C("fold", replay, ir.Tuple((acc0, dv, czero)), v)))
    s.give(b, acc0, V(d_a))
    for k, x in enumerate(keep):
        s.give(b, V(x), ir.Get(k + 1, len(keep), V(d_c)))


def _check(s, b, step: ir.Lam, inner, acc0: ir.Expr, v: ir.Expr, dv: ir.Expr, keep: list[str],
           replay: ir.Lam, czero: ir.Tuple, span) -> None:
    """Note [ccl's numerical check]: both reverses on the first few steps, compared."""
    k, j, few = s.fresh("k"), s.fresh("j"), s.fresh("few")
    steps = ir.Const(CCL_CHECK_STEPS, INTEGER)
    b.cur.append((k, ir.If(C("lt", C("size", v), steps), C("size", v), steps)))
    b.cur.append((few, C("build", V(k), ir.Lam(j, INTEGER, C("index", V(j), v)))))
    end, da1, dc1 = s.fresh("s"), s.fresh("da"), s.fresh("dc")
    b.cur.append(((end, da1, dc1), C("fold", replay, ir.Tuple((acc0, dv, czero)), V(few))))
    da2, dv2, dc2 = s.fresh("da"), s.fresh("dv"), s.fresh("dc")
    b.cur.append(((da2, dv2, dc2), C("rfold", step, _reverse_step(s, step, inner, keep), acc0, V(few), dv, czero)))
    one, two, gap = s.fresh("r"), s.fresh("t"), s.fresh("gap")
    b.cur.append((one, ir.Tuple((V(da1), V(dc1)))))
    b.cur.append((two, ir.Tuple((V(da2), V(dc2)))))
    b.cur.append((gap, C("ts_add", V(one), C("ts_neg", V(two)))))
    size2 = C("add", C("ts_dot", V(one), V(one)), C("ts_dot", V(two), V(two)))
    check = ir.Call("cclCheck", ir.Tuple((C("ts_dot", V(gap), V(gap)), size2)), span=span)
    b.cur.append((s.fresh("ok"), ir.Assert(check, ir.Tuple(()), span=span)))
