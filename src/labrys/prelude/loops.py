"""Loops: build, sumbuild, sum, fold, map, and the loops of derivative code
(ts_sumbuild, rfold).

``sum`` and ``sumbuild`` accumulate into one owned buffer in place, and a
sparse term costs the size of its value, so summing n one-hot contributions
costs O(n), not O(n²) (Note [Sparse cotangents]).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..context import count
from ..ir.build import C
from ..ir.types import BOOL, FLOAT, INTEGER, TLam, TTensor, TTuple, Type
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import tangent_type
from ..values import DeltaVec, PrimError, Sparse, SparseSum, dense, make_vec, numel
from .arith import is_numeric
from .tangents import add_fn
from .vectors import _indices, _rank_of_size, _shape

# --- build / sumbuild -------------------------------------------------------

def _builder_type(t: Type) -> tuple[int, Type] | None:
    """(rank, element type) of a ``(n, lam)`` argument, if well-formed."""
    ab = args_of(t, 2)
    if ab is None:
        return None
    n, f = ab
    rank = _rank_of_size(n)
    if rank is None or not isinstance(f, TLam) or f.arg != n:
        return None
    return rank, f.res


def _build_type(t: Type) -> Type | None:
    rf = _builder_type(t)
    return TTensor(rf[0], rf[1]) if rf else None


def _build_impl(t: Type) -> Callable:
    rank, elem = _builder_type(t)

    def build(n, f):
        shape = _shape(n, "build")
        return make_vec(elem, [f(i) for i in _indices(shape)], shape)
    return spread(build)


primitive("build", _build_type, _build_impl,
          "(build n (lam (i : Integer) e)): the vector [e(0), ..., e(n-1)]; with n an N-tuple, an N-D tensor.",
          structural=True)


def accumulator(t: Type) -> Callable[[Any, Any], Any]:
    """``acc, x ↦ acc + x`` that may update ``acc`` in place (the caller owns it):
    a sparse ``x`` costs the size of its terms (Note [Sparse cotangents])."""
    if isinstance(t, TTensor):
        inner = accumulator(t.elem) if t.elem != FLOAT else None

        def acc_add(acc, x):
            if isinstance(x, Sparse):
                if x.shape != acc.shape:
                    raise PrimError(f"sum: tensor sizes differ ({acc.shape} and {x.shape})")
                base = x.root_base() if isinstance(x, SparseSum) else None
                if base is not None:
                    acc = acc_add(acc, base)
                for term in x.terms():
                    if inner is None:
                        acc[term.index] += term.value
                    else:
                        acc[term.index] = inner(owned(dense(acc[term.index])), term.value)
                return acc
            if x.shape != acc.shape:
                raise PrimError(f"sum: tensor sizes differ ({acc.shape} and {x.shape})")
            if inner is None:
                acc += x
                return acc
            for idx in np.ndindex(acc.shape):
                acc[idx] = inner(owned(dense(acc[idx])), x[idx])
            return acc
        return acc_add
    if isinstance(t, TTuple):
        fs = [accumulator(e) for e in t.elems]
        return lambda acc, x: tuple(f(a, b) for f, a, b in zip(fs, acc, x))
    return add_fn(t)


def owned(x: Any) -> Any:
    """A copy of ``x`` that an accumulator may update in place."""
    if isinstance(x, Sparse):
        x = x.dense()
        return x.copy() if isinstance(x, np.ndarray) else x
    if isinstance(x, np.ndarray):
        return x.astype(np.float64, copy=True) if x.dtype != object else x.copy()
    if isinstance(x, tuple):
        return tuple(owned(e) for e in x)
    return x


def _sum_items(items, elem: Type, what: str) -> Any:
    acc_add, acc, first = accumulator(elem), None, True
    for x in items:
        count(numel(x))
        if first:
            acc, first = owned(dense(x)), False
        else:
            acc = acc_add(acc, x)
    if first:
        return _empty_sum(elem, what)
    return acc


def _empty_sum(elem: Type, what: str) -> Any:
    zero = _scalar_zero(elem)
    if zero is None:
        raise PrimError(f"{what} of no elements of type {elem} (its size is unknown)")
    return zero


def _scalar_zero(t: Type) -> Any:
    if isinstance(t, TTuple):
        parts = [_scalar_zero(e) for e in t.elems]
        return None if any(p is None for p in parts) else tuple(parts)
    if t == INTEGER:
        return 0
    if isinstance(t, TTensor):
        return None
    return 0.0


def _sumbuild_type(t: Type) -> Type | None:
    rf = _builder_type(t)
    return rf[1] if rf and is_numeric(rf[1]) else None


def _sumbuild_impl(t: Type) -> Callable:
    _, elem = _builder_type(t)

    def sumbuild(n, f):
        return _sum_items((f(i) for i in _indices(_shape(n, "sumbuild"))), elem, "sumbuild")
    return spread(sumbuild)


def _ts_sumbuild_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    if abc is None:
        return None
    res = _sumbuild_type(TTuple(abc[:2]))
    return res if res is not None and res == tangent_type(abc[2]) else None


def _ts_sumbuild_impl(t: Type) -> Callable:
    _, elem = _builder_type(TTuple(t.elems[:2]))
    zero = zero_tangent_fn_of(t.elems[2])

    def ts_sumbuild(n, f, like):
        shape = _shape(n, "sumbuild")
        if not all(shape):
            return zero(like)
        return _sum_items((f(i) for i in _indices(shape)), elem, "sumbuild")
    return spread(ts_sumbuild)


def zero_tangent_fn_of(t: Type) -> Callable:
    from .tangents import zero_tangent_fn
    return zero_tangent_fn(t)


primitive("ts_sumbuild", _ts_sumbuild_type, _ts_sumbuild_impl,
          "(ts_sumbuild n (lam (i : Integer) e) x): sumbuild of tangents shaped like x; the zero "
          "tangent of x when n is 0 (reverse mode of loops; differentiated as an if and a sumbuild).",
          cost=lambda r, a: 0)

primitive("sumbuild", _sumbuild_type, _sumbuild_impl,
          "(sumbuild n (lam (i : Integer) e)): the sum of e(0) ... e(n-1), without building a vector.",
          cost=lambda r, a: 0)


def _sum_type(t: Type) -> Type | None:
    return t.elem if isinstance(t, TTensor) and is_numeric(t.elem) else None


def _sum_impl(t: Type) -> Callable:
    def total(v):
        if isinstance(v, DeltaVec):
            return v.value
        v = dense(v)
        if v.dtype != object:
            return float(v.sum())
        return _sum_items(v.flat, t.elem, "sum")
    return total


primitive("sum", _sum_type, _sum_impl, "Sum of the elements of a vector (of numbers, vectors or tuples).",
          cost=lambda r, a: numel(a) if not isinstance(a, np.ndarray) or a.dtype != object else 0,
          fwd=lambda a, d, t, y: C("sum", d[0]), rev=lambda a, r, t, y: (C("constVec", C("size", a[0]), r),))


# --- fold / map -------------------------------------------------------------

def _fold_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    if abc is None:
        return None
    f, acc, v = abc
    ok = (isinstance(f, TLam) and isinstance(v, TTensor) and v.rank == 1
          and f.arg == TTuple((acc, v.elem)) and f.res == acc)
    return acc if ok else None


def _fold(f, acc, v):
    for x in dense(v):
        acc = f((acc, float(x) if isinstance(x, np.floating) else x))
    return acc


primitive("fold", _fold_type, lambda t: spread(_fold),
          "(fold (lam (acc_x : Tuple A B) e) acc0 v): left fold over v : Vec B.", cost=lambda r, a: 0,
          structural=True)


# --- nTimes / ccl (Ellis et al. Figs 16–19): loops with a known step ---------------

def _ntimes_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    if abc is None:
        return None
    n, s, f = abc
    return s if n == INTEGER and isinstance(f, TLam) and f.arg == s and f.res == s else None


def _ntimes(n, s, f):
    if n < 0:
        raise PrimError(f"nTimes: the count {n} is negative")
    for _ in range(n):
        s = f(s)
    return s


def _ccl_type(t: Type) -> Type | None:
    abc = args_of(t, 3) or args_of(t, 4)
    if abc is None or (len(abc) == 4 and abc[3] != BOOL):  # the 4th: the steps commute (a literal)
        return None
    n, s, f = abc[:3]
    ok = n == INTEGER and isinstance(f, TLam) and f.arg == TTuple((INTEGER, s)) and f.res == s
    return s if ok else None


def _ccl(n, s, f, commutes=False):
    if n < 0:
        raise PrimError(f"ccl: the count {n} is negative")
    for k in range(n - 1, -1, -1):  # ccl n s f = ccl (n-1) (f (n-1, s)) f
        s = f((k, s))
    return s


primitive("nTimes", _ntimes_type, lambda t: spread(_ntimes),
          "(nTimes n s0 (lam (s : T) e)): the step applied n times to s0 (n ≥ 0; Ellis et al. Fig. 16).",
          cost=lambda r, a: 0, structural=True)
primitive("ccl", _ccl_type, lambda t: spread(_ccl),
          "(ccl n s0 (lam (ks : Tuple Integer T) e) [true]): the step applied with k = n-1 down to 0, "
          "ccl 0 s f = s, ccl n s f = ccl (n-1) (f (tuple (n-1) s)) f (Ellis et al. Fig. 18); an optional "
          "literal 4th argument true asserts that the steps' reverse maps commute, so split mode may use "
          "Fig. 19's O(1)-memory reverse.",
          cost=lambda r, a: 0, structural=True)
primitive("cclCommutes", lambda t: t if t == TTensor(1, INTEGER) else None, lambda t: lambda v: v,
          "(cclCommutes v): v, the indices of a ccl whose steps the program asserts commute (made by "
          "the AD desugaring of (ccl n s0 f true); split mode reverses it in O(1) memory, Fig. 19).",
          cost=lambda r, a: 0, nondiff=True, structural=True, numba=lambda xs, types, res: xs[0])
primitive("cclTape", lambda t: t if t == TTensor(1, INTEGER) else None, lambda t: lambda v: v,
          "(cclTape v): v, the indices of a ccl not asserted to commute (made by the AD desugaring "
          "of ccl; split mode reverses it with the tape of its states, Fig. 17).",
          cost=lambda r, a: 0, nondiff=True, structural=True, numba=lambda xs, types, res: xs[0])


# Note [ccl's numerical check] in labrys.ad.bog_loops: ‖a − b‖² against ‖a‖² + ‖b‖² of the two
# reverses' cotangents on a ccl's first steps; a relative gap above 1e-6 means the steps do not commute
CCL_CHECK_STEPS, CCL_CHECK_TOLERANCE = 3, 1e-6


def _ccl_check(gap2: float, size2: float) -> bool:
    if gap2 <= CCL_CHECK_TOLERANCE ** 2 * size2 or size2 != size2:  # NaN cotangents: nothing to compare
        return True
    raise PrimError(f"(ccl n s0 f true) asserts that the steps' reverse maps commute, but they do not: on the "
                    f"first {CCL_CHECK_STEPS} steps of this call, Fig. 19's O(1)-memory reverse and the tape of "
                    f"the states (Fig. 17) give cotangents {(gap2 / size2) ** 0.5:.3g} apart (relative); drop the "
                    "assertion (the tape is right for any steps)")


primitive("cclCheck", lambda t: BOOL if t == TTuple((FLOAT, FLOAT)) else None, lambda t: spread(_ccl_check),
          "(cclCheck gap2 size2): split mode's check of (ccl n s0 f true) on its first steps: true if the "
          "squared gap between the replayed and the taped reverse's cotangents is within 1e-6² of their "
          "squared size, else a run-time error at the ccl (docs/split.md).",
          cost=lambda r, a: 0, nondiff=True, impure=True,
          numba=lambda xs, types, res: f"({xs[0]} <= {CCL_CHECK_TOLERANCE ** 2!r} * {xs[1]} or {xs[1]} != {xs[1]})")

def _map_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    if ab and isinstance(ab[0], TLam) and isinstance(ab[1], TTensor) and ab[0].arg == ab[1].elem:
        return TTensor(ab[1].rank, ab[0].res)
    return None


def _map_impl(t: Type) -> Callable:
    res = t.elems[0].res

    def map_(f, v):
        v = dense(v)
        items = [f(float(x) if v.dtype != object else x) for x in v.flat]
        return make_vec(res, items, v.shape)
    return spread(map_)


primitive("map", _map_type, _map_impl, "(map (lam (x : A) e) v): e applied to every element, any rank.",
          structural=True)


def _map2_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    if not abc:
        return None
    f, u, v = abc
    ok = isinstance(f, TLam) and isinstance(u, TTensor) and isinstance(v, TTensor) and u.rank == v.rank \
        and f.arg == TTuple((u.elem, v.elem))
    return TTensor(u.rank, f.res) if ok else None


def _map2_impl(t: Type) -> Callable:
    res = t.elems[0].res

    def map2(f, u, v):
        u, v = dense(u), dense(v)
        if u.shape != v.shape:
            raise PrimError(f"map2: the tensors have different sizes {u.shape} and {v.shape}")
        def item(a, x):
            return float(x) if a.dtype != object else x
        items = [f((item(u, x), item(v, y))) for x, y in zip(u.flat, v.flat)]
        return make_vec(res, items, u.shape)
    return spread(map2)


primitive("map2", _map2_type, _map2_impl,
          "(map2 (lam (xy : Tuple A B) e) u v): e applied to each pair of elements of u and v (same size), any rank.",
          structural=True)


# --- RFold (Ellis et al. Fig. 15): the reverse sweep of fold, as one loop ----------

def _rfold_type(t: Type) -> Type | None:
    """(rfold step step_rev acc0 v dacc czero) : (Tuple dA (Vec dB) C)."""
    args = args_of(t, 6)
    if args is None:
        return None
    step, step_rev, acc, v, dacc, czero = args
    ok = (isinstance(step, TLam) and isinstance(v, TTensor) and v.rank == 1
          and step.arg == TTuple((acc, v.elem)) and step.res == acc and isinstance(step_rev, TLam)
          and step_rev.arg == TTuple((step.arg, dacc)) and isinstance(step_rev.res, TTuple)
          and len(step_rev.res.elems) == 3 and step_rev.res.elems[0] == dacc and step_rev.res.elems[2] == czero)
    return TTuple((dacc, TTensor(1, step_rev.res.elems[1]), czero)) if ok else None


def _rfold_impl(t: Type) -> Callable:
    step_t, step_rev_t, _, v_t, _, c_t = t.elems
    dx_t = step_rev_t.res.elems[1]
    add_c = accumulator(c_t)

    def rfold(step, step_rev, acc, v, dacc, czero):
        xs = [float(x) if isinstance(x, np.floating) else x for x in dense(v)]
        states = []
        for x in xs:  # forward sweep, keeping every accumulator (Fig. 15's acc_i)
            states.append(acc)
            acc = step((acc, x))
        dxs, c = [None] * len(xs), owned(czero)
        for i in reversed(range(len(xs))):
            dacc, dxs[i], dc = step_rev(((states[i], xs[i]), dacc))
            c = add_c(c, dc)
        return dacc, make_vec(dx_t, dxs), c
    return spread(rfold)


primitive("rfold", _rfold_type, _rfold_impl,
          "(rfold step step_rev acc0 v dacc czero): reverse mode of (fold step acc0 v) (RFold, Ellis et al. "
          "Fig. 15): the cotangents of acc0 and v, and the captured variables' summed contributions.",
          cost=lambda r, a: 0)
