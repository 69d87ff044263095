"""Vector and tensor primitives: index, size, constVec, deltaVec (sparse),
unzip, dup, elim (docs/reference.md §4–5), and the helpers of derivative code
(ts_delta, matvec_T, outer).  Loops are in :mod:`labrys.prelude.loops`."""
from __future__ import annotations

import itertools
import math
import os
from typing import Any, Callable

import numpy as np

from ..ir.build import C, V, get, if_, lam, tup
from ..ir.nodes import Expr, const
from ..ir.types import FLOAT, INTEGER, TTensor, TTuple, Type
from ..memory import check_allocation
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import tangent_type, zero_tangent
from ..values import DeltaVec, PrimError, dense, make_vec, numel, zero_like, zeros_shaped


def _rank_of_size(t: Type) -> int | None:
    if t == INTEGER:
        return 1
    if isinstance(t, TTuple) and t.elems and all(e == INTEGER for e in t.elems):
        return len(t.elems)
    return None


def _shape(n: Any, name: str) -> tuple[int, ...]:
    """The shape a size ``n`` asks for; a negative size, or (except for
    ``sumbuild``, which allocates nothing) a tensor of more elements than the
    machine has memory for, is a user error (positioned by the caller)."""
    shape = (n,) if isinstance(n, int) else tuple(n)
    if any(k < 0 for k in shape):
        raise PrimError(f"{name}: negative size {n}")
    if name != "sumbuild" and math.prod(shape) > max_elements():
        raise PrimError(f"{name}: size {n} is too large to allocate ({math.prod(shape)} elements; "
                        f"this machine has memory for at most {max_elements()} Floats)")
    if name != "sumbuild":
        check_allocation(math.prod(shape), f"({name} {n} ...)")  # Note [Memory limit]
    return shape


def max_elements() -> int:
    """How many 8-byte numbers fit in the machine's physical memory."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 8
    except (ValueError, OSError, AttributeError):  # not POSIX: 2**40 bytes
        return 1 << 37


def _indices(shape: tuple[int, ...]):
    if len(shape) == 1:
        return range(shape[0])
    return itertools.product(*(range(k) for k in shape))


# --- index / size -----------------------------------------------------------

def _index_impl(t: Type) -> Callable:
    def index(i, v):
        if isinstance(v, DeltaVec):
            _check_bounds((i,) if isinstance(i, int) else tuple(i), v.shape)
            return v.value if i == v.index else zero_like(v.value)
        v = dense(v)
        idx = (i,) if isinstance(i, int) else tuple(i)
        if len(idx) != v.ndim:
            raise PrimError(f"index: {len(idx)} indices for a tensor of rank {v.ndim}")
        _check_bounds(idx, v.shape)
        x = v[idx]
        return float(x) if v.dtype != object else x
    return spread(index)


def _check_bounds(idx: tuple[int, ...], shape: tuple[int, ...]) -> None:
    for i, n in zip(idx, shape):
        if not 0 <= i < n:
            what = f"index {i}" if len(shape) == 1 else f"index {idx}"
            size = n if len(shape) == 1 else "x".join(map(str, shape))
            raise PrimError(f"{what} out of range for a tensor of size {size}")


def _index_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    if ab and isinstance(ab[1], TTensor) and ab[0] == _index_type_of(ab[1].rank):
        return ab[1].elem
    return None


def _index_type_of(rank: int) -> Type:
    return INTEGER if rank == 1 else TTuple((INTEGER,) * rank)


def _lower_index(xs: list[str], types: list[Type], result: Type) -> str:
    i, v = xs
    if types[1].rank == 1:
        return f"{v}[_checkindex({i}, {v}.shape[0])]"
    return f"{v}[{', '.join(f'_checkindex({i}[{k}], {v}.shape[{k}])' for k in range(types[1].rank))}]"


primitive("index", _index_type, _index_impl, "(index i v): element i (0-based) of v; i is an N-tuple for a Tensor N.",
          cost=lambda r, a: 1, structural=True, numba=_lower_index, fwd=lambda a, d, t, y: C("index", a[0], d[1]),
          rev=lambda a, r, t, y: (zero_tangent(a[0], t[0]), C("ts_delta", a[1], a[0], r)))


def _ts_delta_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    if abc and isinstance(abc[0], TTensor) and abc[1] == _index_type_of(abc[0].rank) \
            and abc[2] == tangent_type(abc[0].elem):
        return tangent_type(abc[0])
    return None


def _ts_delta_impl(t: Type) -> Callable:
    elem = t.elems[2]

    def ts_delta(v, i, x):
        shape = v.shape
        _check_bounds((i,) if isinstance(i, int) else tuple(i), shape)
        return DeltaVec(shape[0] if len(shape) == 1 else tuple(shape), i, x, elem, like=v)
    return spread(ts_delta)


primitive("ts_delta", _ts_delta_type, _ts_delta_impl,
          "(ts_delta v i x): the tangent of v that is x at index i and zero elsewhere, stored sparsely "
          "(reverse mode of index; shaped like v, so ragged vectors work).",
          cost=lambda r, a: numel(r), fwd=lambda a, d, t, y: C("ts_delta", a[0], a[1], d[2]),
          rev=lambda a, r, t, y: (zero_tangent(a[0], t[0]), zero_tangent(a[1], t[1]), C("index", a[1], r)))


def _size_impl(t: Type) -> Callable:
    def size(v):
        shape = v.shape
        return shape[0] if len(shape) == 1 else tuple(shape)
    return size


primitive("size", lambda t: _index_type_of(t.rank) if isinstance(t, TTensor) else None, _size_impl,
          "Length of a vector (an N-tuple for a Tensor N).", cost=lambda r, a: 1, nondiff=True, structural=True,
          numba=lambda xs, types, res: f"{xs[0]}.shape[0]" if types[0].rank == 1 else f"{xs[0]}.shape")


# --- constVec / deltaVec / unzip / dup / elim ------------------------------

def _const_vec_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    rank = _rank_of_size(ab[0]) if ab else None
    return TTensor(rank, ab[1]) if rank else None


def _const_vec_impl(t: Type) -> Callable:
    elem = t.elems[1]

    def const_vec(n, x):
        shape = _shape(n, "constVec")
        if elem == FLOAT:
            return np.full(shape, x, dtype=np.float64)
        return make_vec(elem, [x] * int(np.prod(shape)), shape)
    return spread(const_vec)


primitive("constVec", _const_vec_type, _const_vec_impl,
          "(constVec n x): n copies of x (n an N-tuple: a Tensor N).", structural=True,
          numba=lambda xs, types, res: f"_np.full({xs[0]}, {xs[1]})" if types == [INTEGER, FLOAT] else
          f"_constrows({xs[0]}, {xs[1]})" if types == [INTEGER, TTensor(1, FLOAT)] else None,
          fwd=lambda a, d, t, y: C("constVec", a[0], d[1]),
          rev=lambda a, r, t, y: (zero_tangent(a[0], t[0]), C("sum", r)))


def _delta_vec_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    rank = _rank_of_size(abc[0]) if abc else None
    return TTensor(rank, abc[2]) if rank and abc[1] == abc[0] else None


def _delta_vec_impl(t: Type) -> Callable:
    elem = t.elems[2]

    def delta_vec(n, i, x):
        shape = _shape(n, "deltaVec")
        idx = (i,) if isinstance(i, int) else tuple(i)
        if not all(0 <= k < m for k, m in zip(idx, shape)):   # Note [deltaVec outside its size]
            return zeros_shaped(shape, elem, x)
        return DeltaVec(n, i, x, elem)
    return spread(delta_vec)


# Note [deltaVec outside its size]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The Knossos runtime's deltaVec n i x is the tensor whose element j is
# (if (eq i j) x 0): an index outside 0..n-1 (or outside the shape, for a
# Tensor N) equals no position, so the result is all zeros.  Knossos
# programs test exactly that, so labrys follows it on every backend, where
# index on the same tensor is an error.  ts_delta, which only AD generates
# from an index that has just been checked, keeps its bounds check.


def _inside(n: Expr, i: Expr, size_type: Type) -> Expr:
    """IR for 'index i is inside size n' (n and i Integers or N-tuples)."""
    if size_type == INTEGER:
        return C("and", C("gte", i, const(0)), C("lt", i, n))
    k = len(size_type.elems)
    test = _inside(get(k, k, n), get(k, k, i), INTEGER)
    for j in range(k - 1, 0, -1):
        test = C("and", _inside(get(j, k, n), get(j, k, i), INTEGER), test)
    return test


primitive("deltaVec", _delta_vec_type, _delta_vec_impl,
          "(deltaVec n i x): size-n tensor with x at i and zero elsewhere, stored sparsely; "
          "all zeros when i is outside n (as in Knossos).",
          cost=lambda r, a: numel(r), fwd=lambda a, d, t, y: C("deltaVec", a[0], a[1], d[2]),
          rev=lambda a, r, t, y: (zero_tangent(a[0], t[0]), zero_tangent(a[1], t[1]),
                                  if_(_inside(a[0], a[1], t[0]), C("index", a[1], r), zero_tangent(a[2], t[2]))))


def _unzip_type(t: Type) -> Type | None:
    if isinstance(t, TTensor) and t.rank == 1 and isinstance(t.elem, TTuple):
        return TTuple(tuple(TTensor(1, e) for e in t.elem.elems))
    return None


def _unzip_impl(t: Type) -> Callable:
    elems = t.elem.elems

    def unzip(v):
        v = dense(v)
        return tuple(make_vec(e, [x[k] for x in v]) for k, e in enumerate(elems))
    return unzip


def _zip(parts: tuple[Expr, ...], n: Expr, t: TTensor) -> Expr:
    """IR for the inverse of unzip: build n (lam (i) (tuple (index i p1) ...))."""
    return C("build", n, lam("i$z", INTEGER, tup(*(C("index", V("i$z"), p) for p in parts))))


primitive("unzip", _unzip_type, _unzip_impl, "A vector of tuples as a tuple of vectors.", structural=True,
          fwd=lambda a, d, t, y: C("unzip", d[0]),
          rev=lambda a, r, t, y: (_zip(tuple(get(k + 1, len(t[0].elem.elems), r) for k in range(len(t[0].elem.elems))),
                                    C("size", a[0]), t[0]),))
primitive("dup", lambda t: TTuple((t, t)), lambda t: lambda x: (x, x), "(dup x) is (tuple x x).",
          cost=lambda r, a: 1, structural=True, numba=lambda xs, types, res: f"({xs[0]}, {xs[0]})",
          fwd=lambda a, d, t, y: tup(d[0], d[0]),
          rev=lambda a, r, t, y: (C("ts_add", get(1, 2, r), get(2, 2, r)),))
primitive("elim", lambda t: TTuple(()), lambda t: lambda x: (), "(elim x) discards x; returns (tuple).",
          cost=lambda r, a: 1, nondiff=True, structural=True, numba=lambda xs, types, res: "()")


# --- helpers of derivative code: matrix-vector products' transposes -------------

def _matrix_vec_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    vec = TTensor(1, FLOAT)
    if ab and ab[0] in (TTensor(2, FLOAT), TTensor(1, vec)) and ab[1] == vec:
        return ab[0]
    return None


def _rows(m: Any) -> np.ndarray:
    return np.array([dense(r) for r in m]) if m.dtype == object else m


def outer_like(matrix: Type, u: Expr, v: Expr) -> Expr:
    """IR for u vᵀ as a value of the matrix type (Tensor 2 Float or Vec (Vec Float))."""
    if matrix == TTensor(2, FLOAT):
        return C("outer", u, v)
    return C("build", C("size", u), lam("i$o", INTEGER, C("mul", C("index", V("i$o"), u), v)))


primitive("matvec_T", lambda t: TTensor(1, FLOAT) if _matrix_vec_type(t) else None,
          lambda t: spread(lambda m, r: _rows(m).T @ dense(r)),
          "(matvec_T M r): the transpose of M times r (reverse mode of matrix-vector mul).",
          numba=lambda xs, types, res: f"_matvec_t({xs[0]}, {xs[1]})",
          cost=lambda r, a: numel(a[0]),
          fwd=lambda a, d, t, y: C("add", C("matvec_T", d[0], a[1]), C("matvec_T", a[0], d[1])),
          rev=lambda a, r, t, y: (outer_like(t[0], a[1], r), C("mul", a[0], r)))


def _outer_type(t: Type) -> Type | None:
    vec = TTensor(1, FLOAT)
    return TTensor(2, FLOAT) if args_of(t, 2) == (vec, vec) else None


primitive("outer", _outer_type, lambda t: spread(lambda u, v: np.outer(dense(u), dense(v))),
          "(outer u v): the matrix u vᵀ (a Tensor 2 Float).", numba=lambda xs, types, res: f"_outer({xs[0]}, {xs[1]})",
          fwd=lambda a, d, t, y: C("add", C("outer", d[0], a[1]), C("outer", a[0], d[1])),
          rev=lambda a, r, t, y: (C("mul", r, a[1]), C("matvec_T", r, a[0])))
