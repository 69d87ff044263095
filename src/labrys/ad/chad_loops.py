"""CHAD's loops and its last step, as run-time primitives (Vákár & Smeding, CHAD §7,
and a rule for fold made by the paper's recipe: the paper has no fold): explicit iterations, never host recursion
proportional to the number of steps (pitfall 12).

    (chadFoldR y a0 xs γ) : Tuple A (Lam dA (Tuple dΓ (Tuple dA (Vec dB))))
        y : Lam (Tuple A B) (Tuple A (Lam dA (Tuple dΓ (Tuple dA dB))))  -- Rev[Γ, p] of the step
    (chadFoldF y a0 xs) : Tuple A (Lam (Tuple dΓ (Tuple dA (Vec dB))) dA)
        y : Lam (Tuple A B) (Tuple A (Lam (Tuple dΓ (Tuple dA dB)) dA))  -- Fwd[Γ, p] of the step
    chadIFoldR / chadIFoldF: the same for (ifold n step a0), whose index has (co)tangent (Tuple).
    γ, the primal of the step's context (shaped like dΓ), is not used here: §9's lowering
    makes the zero of dΓ from it (chad_lower.py).

The primal loop keeps each step's (co)tangent map; the reverse loop runs them
newest first, adding the context cotangents and handing the accumulator's on;
the forward loop runs them oldest first.  ``chadDense x w`` (the wrapper's last
step) replaces every symbolic zero in the cotangent ``w`` by a real zero shaped
like the primal ``x``; ``chadZip``/``chadUnzip`` are unzip's transpose and tangent.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.types import FLOAT, INTEGER, UNIT, TLam, TSum, TTensor, TTuple, Type
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import tangent_type
from ..values import Inj, PrimError, Sparse, dense, make_vec, numel, zero_tangent_of
from .chad_runtime import ZERO, plus_fn, zero_of


def _item(x: Any) -> Any:
    return float(x) if isinstance(x, np.floating) else x


def _pair(u: Any, t: TTuple) -> tuple:
    """A pair-typed linear value opened (the symbolic zero becomes a pair of zeros)."""
    return (zero_of(t.elems[0]), zero_of(t.elems[1])) if u is ZERO else u


def _step_rev(y: Type, a: Type, b: Type) -> tuple[Type, Type, Type] | None:
    """(dA, dΓ, dB) when y : Lam (Tuple A B) (Tuple A (Lam dA (Tuple dΓ (Tuple dA dB))))."""
    if not (isinstance(y, TLam) and y.arg == TTuple((a, b)) and isinstance(y.res, TTuple)
            and len(y.res.elems) == 2 and y.res.elems[0] == a and isinstance(y.res.elems[1], TLam)):
        return None
    back = y.res.elems[1]
    ok = isinstance(back.res, TTuple) and len(back.res.elems) == 2 and isinstance(back.res.elems[1], TTuple) \
        and len(back.res.elems[1].elems) == 2 and back.res.elems[1].elems[0] == back.arg
    return (back.arg, back.res.elems[0], back.res.elems[1].elems[1]) if ok else None


def _step_fwd(y: Type, a: Type, b: Type) -> tuple[Type, Type, Type] | None:
    """(dA, dΓ, dB) when y : Lam (Tuple A B) (Tuple A (Lam (Tuple dΓ (Tuple dA dB)) dA))."""
    if not (isinstance(y, TLam) and y.arg == TTuple((a, b)) and isinstance(y.res, TTuple)
            and len(y.res.elems) == 2 and y.res.elems[0] == a and isinstance(y.res.elems[1], TLam)):
        return None
    tan = y.res.elems[1]
    ok = isinstance(tan.arg, TTuple) and len(tan.arg.elems) == 2 and isinstance(tan.arg.elems[1], TTuple) \
        and len(tan.arg.elems[1].elems) == 2 and tan.arg.elems[1].elems[0] == tan.res
    return (tan.res, tan.arg.elems[0], tan.arg.elems[1].elems[1]) if ok else None


def _foldr_type(t: Type) -> Type | None:
    abc = args_of(t, 4)
    if abc is None or not isinstance(abc[2], TTensor) or abc[2].rank != 1:
        return None
    step = _step_rev(abc[0], abc[1], abc[2].elem)
    if step is None:
        return None
    da, dg, db = step
    return TTuple((abc[1], TLam(da, TTuple((dg, TTuple((da, TTensor(1, db))))))))


def _ifoldr_type(t: Type) -> Type | None:
    abc = args_of(t, 4)
    if abc is None or abc[0] != INTEGER:
        return None
    step = _step_rev(abc[1], abc[2], INTEGER)
    if step is None or step[2] != UNIT:
        return None
    da, dg, _ = step
    return TTuple((abc[2], TLam(da, TTuple((dg, da)))))


def _reverse_loop(step: TLam, y, a0, items):
    """The primal loop, and the reverse loop as a closure (both explicit iterations)."""
    u_t = step.res.elems[1].res
    dg, dp = u_t.elems
    plus_g, zero_g = plus_fn(dg), zero_of(dg)
    backs, acc = [], a0
    for x in items:
        acc, b = y((acc, x))
        backs.append(b)

    def back(w):
        g, wxs = zero_g, [None] * len(backs)
        for k in range(len(backs) - 1, -1, -1):
            ug, up = _pair(backs[k](w), u_t)
            w, wxs[k] = _pair(up, dp)
            g = plus_g(g, ug)
        return g, w, wxs
    return acc, back


def _foldr_impl(t: Type):
    db = t.elems[0].res.elems[1].res.elems[1].elems[1]

    def foldr(y, a0, xs, _context):
        acc, back = _reverse_loop(t.elems[0], y, a0, [_item(x) for x in dense(xs).flat])

        def cotangent(w):
            g, wa, wxs = back(w)
            return g, (wa, make_vec(db, wxs))
        return acc, cotangent
    return spread(foldr)


def _ifoldr_impl(t: Type):
    def ifoldr(n, y, a0, _context):
        acc, back = _reverse_loop(t.elems[1], y, a0, range(n))

        def cotangent(w):
            g, wa, _ = back(w)
            return g, wa
        return acc, cotangent
    return spread(ifoldr)


primitive("chadFoldR", _foldr_type, _foldr_impl,
          "(chadFoldR y a0 xs γ): CHAD reverse of (fold step a0 xs) from y = Rev of the step: the result and "
          "its backpropagator, run as a loop newest step first (γ: the step's context, for §9's lowering).",
          cost=lambda r, a: 0, nondiff=True)
primitive("chadIFoldR", _ifoldr_type, _ifoldr_impl,
          "(chadIFoldR n y a0 γ): CHAD reverse of (ifold n step a0), as chadFoldR.", cost=lambda r, a: 0,
          nondiff=True)


def _foldf_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    if abc is None or not isinstance(abc[2], TTensor) or abc[2].rank != 1:
        return None
    step = _step_fwd(abc[0], abc[1], abc[2].elem)
    if step is None:
        return None
    da, dg, db = step
    return TTuple((abc[1], TLam(TTuple((dg, TTuple((da, TTensor(1, db))))), da)))


def _ifoldf_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    if abc is None or abc[0] != INTEGER:
        return None
    step = _step_fwd(abc[1], abc[2], INTEGER)
    if step is None or step[2] != UNIT:
        return None
    da, dg, _ = step
    return TTuple((abc[2], TLam(TTuple((dg, da)), da)))


def _forward_loop(y, a0, items):
    tans, acc = [], a0
    for x in items:
        acc, tan = y((acc, x))
        tans.append(tan)
    return acc, tans


def _foldf_impl(t: Type):
    arg_t = t.elems[0].res.elems[1].arg
    dg_t, dp_t = arg_t.elems
    db = dp_t.elems[1]
    zero_b = zero_of(db)

    def foldf(y, a0, xs):
        acc, tans = _forward_loop(y, a0, [_item(x) for x in dense(xs).flat])

        def tangent(v):
            vg, (ta, dxs) = _pair(v, TTuple((dg_t, TTuple((dp_t.elems[0], TTensor(1, db))))))
            dxs = None if dxs is ZERO else dense(dxs)
            if dxs is not None and dxs.shape[:1] != (len(tans),):
                raise PrimError(f"chadFoldF: a tangent of {dxs.shape[0]} elements for a fold over {len(tans)}")
            for k, tan in enumerate(tans):
                ta = tan((vg, (ta, zero_b if dxs is None else _item(dxs[k]))))
            return ta
        return acc, tangent
    return spread(foldf)


def _ifoldf_impl(t: Type):
    dg_t, da_t = t.elems[1].res.elems[1].arg.elems[0], t.elems[1].res.elems[1].res

    def ifoldf(n, y, a0):
        acc, tans = _forward_loop(y, a0, range(n))

        def tangent(v):
            vg, ta = _pair(v, TTuple((dg_t, da_t)))
            for tan in tans:
                ta = tan((vg, (ta, ())))
            return ta
        return acc, tangent
    return spread(ifoldf)


primitive("chadFoldF", _foldf_type, _foldf_impl,
          "(chadFoldF y a0 xs): CHAD forward of (fold step a0 xs) from y = Fwd of the step: the result and "
          "its tangent map, run as a loop.", cost=lambda r, a: 0, nondiff=True)
primitive("chadIFoldF", _ifoldf_type, _ifoldf_impl,
          "(chadIFoldF n y a0): CHAD forward of (ifold n step a0), as chadFoldF.", cost=lambda r, a: 0,
          nondiff=True)


# --- the wrapper's last step -------------------------------------------------------------


def densify(x: Any, w: Any, t: Type) -> Any:
    """The cotangent w of the primal x : t with every symbolic zero materialised."""
    if w is ZERO:
        return zero_tangent_of(x) if not isinstance(t, TSum) else Inj(x.left, densify(x.value, ZERO,
                                                                                      t.left if x.left else t.right))
    match t:
        case TTuple(elems):
            return tuple(densify(a, b, e) for a, b, e in zip(x, w, elems))
        case TTensor(_, elem):
            if elem == FLOAT:
                return np.asarray(dense(w), dtype=np.float64) if isinstance(w, Sparse) else w
            xs, ws = dense(x), dense(w)
            return make_vec(tangent_type(elem), [densify(a, b, elem) for a, b in zip(xs.flat, ws.flat)], xs.shape)
        case TSum(a, b):
            return Inj(w.left, densify(x.value, w.value, a if w.left else b))
    return w


def _dense_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    try:
        return ab[1] if ab and tangent_type(ab[0]) == ab[1] else None
    except ValueError:
        return None


primitive("chadDense", _dense_type, lambda t: spread(lambda x, w: densify(x, w, t.elems[0])),
          "(chadDense x w): the cotangent w of x with every symbolic zero of CHAD materialised.",
          cost=lambda r, a: 1, nondiff=True)


# --- unzip's (co)tangents ------------------------------------------------------------------


def _zip_type(t: Type) -> Type | None:
    if isinstance(t, TTuple) and len(t.elems) == 2 and all(isinstance(e, TTensor) and e.rank == 1
                                                           for e in t.elems):
        return TTensor(1, TTuple((t.elems[0].elem, t.elems[1].elem)))
    return None


def _zip_impl(t: Type):
    za, zb = zero_of(t.elems[0].elem), zero_of(t.elems[1].elem)
    out_t = TTuple((t.elems[0].elem, t.elems[1].elem))

    def zip_(w):
        if w is ZERO:
            return ZERO
        a, b = w
        if a is ZERO and b is ZERO:
            return ZERO
        a = None if a is ZERO else [_scalar(x) for x in dense(a).flat]
        b = None if b is ZERO else [_scalar(x) for x in dense(b).flat]
        n = len(a if a is not None else b)
        return make_vec(out_t, [(za if a is None else a[k], zb if b is None else b[k]) for k in range(n)])
    return zip_


def _scalar(x: Any) -> Any:
    return float(x) if isinstance(x, np.floating) else x


primitive("chadZip", _zip_type, _zip_impl, "(chadZip w): a pair of cotangent vectors as a vector of pairs "
          "(unzip transposed).", cost=lambda r, a: 1 if r is ZERO else numel(r), nondiff=True)


def _unzip_type(t: Type) -> Type | None:
    if isinstance(t, TTensor) and t.rank == 1 and isinstance(t.elem, TTuple) and len(t.elem.elems) == 2:
        return TTuple(tuple(TTensor(1, e) for e in t.elem.elems))
    return None


def _unzip_impl(t: Type):
    a_t, b_t = t.elem.elems
    za, zb = zero_of(a_t), zero_of(b_t)

    def unzip(v):
        if v is ZERO:
            return ZERO
        items = [(za, zb) if x is ZERO else x for x in dense(v).flat]
        return make_vec(a_t, [x[0] for x in items]), make_vec(b_t, [x[1] for x in items])
    return unzip


primitive("chadUnzip", _unzip_type, _unzip_impl, "(chadUnzip v): unzip of a tangent vector of pairs (0 for 0).",
          cost=lambda r, a: 1 if a is ZERO else numel(a), nondiff=True)
