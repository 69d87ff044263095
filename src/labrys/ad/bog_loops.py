"""The loops of BOG AD (:mod:`.bog`): ``build``/``sumbuild`` (Fig. 24, Fig. 26's
build with its environment) and ``fold``.

    Γ ⊢ build n (λi. e) : Tensor N T  ↦  forward: the Tensor N of (result, BOG) pairs, one
                                         per index i (an Integer, or a tuple of N of them)
                                         reverse: Σᵢ ∇r⟦e⟧ ∂t[i] bᵢ   (ts_sumbuild over the same i)
    Γ ⊢ fold (λt. e) a v : A        ↦   forward: the fold; a, v and what the λ captures kept
                                      reverse: RFold (Fig. 15) with the step's split as its
                                               reverse step

Note [Fold in split mode]
~~~~~~~~~~~~~~~~~~~~~~~~~
The forward pass runs the fold as it is and keeps its initial accumulator,
its vector and what its λ captures (references: O(1)).  The reverse pass is
the run-time loop ``rfold`` that Knossos ``rev`` uses (Fig. 15 with the
guide's fixes): it replays the steps keeping each accumulator, then walks
them backwards, calling the reverse step — the step's own BOG forward pass
followed by its reverse pass, in one λ.  Each step's primal thus runs three
times (fold, replay, reverse step): a constant factor, not per-step BOGs kept
from the forward pass; the captured variables' cotangents are summed over
the steps.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.types import FLOAT, INTEGER, TBogOf, TTensor, TTuple
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
    step_rev = ir.Lam(pair, pair_t, body)
    czero = ir.Tuple(tuple(s.zero(b, V(x), s.types[x]) for x in keep))
    d_a, d_v, d_c = s.fresh("da"), s.fresh("dv"), s.fresh("dc")
    b.cur.append(((d_a, d_v, d_c), C("rfold", step, step_rev, acc0, v, dv, czero)))
    s.give(b, acc0, V(d_a))
    s.give(b, v, V(d_v))
    for k, x in enumerate(keep):
        s.give(b, V(x), ir.Get(k + 1, len(keep), V(d_c)))
