"""``buildFromSparse`` and ``buildFromSparseTupled``: tensors assembled from a
list of (index, value) pairs, as in the Knossos runtime.

    (buildFromSparse shp m (lam (i : I) (tuple idx val)))

``shp : Tensor N S`` is the shape of the result (``(constVec n (tuple))`` for
a vector of Floats, or a vector of per-element shapes for a ragged vector of
vectors), ``m`` the number of pairs (an Integer, or an N-tuple to range over
a tensor of pairs), and the function gives pair ``i``.  The result ``: Tensor N T``
(with ``shape T = S``) is zero where no pair lands and the sum of the values
where several do.  ``buildFromSparseTupled`` takes a tuple of shapes and a
function returning a tuple of pairs, and builds a tuple of tensors.

Note [Derivatives of buildFromSparse]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The result is linear in the values, but the values come out of a function
argument, which derivative rules (written over atoms) cannot differentiate.
No algorithm differentiates through these two primitives yet: a derivative
request is a positioned error naming them.  Knossos's own test programs use
them only in code that is run, not differentiated.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir.types import FLOAT, INTEGER, TLam, TTensor, TTuple, Type
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import shape_type
from ..values import PrimError, dense, make_vec
from .arith import is_data
from .tangents import add_fn
from .vectors import _indices, _rank_of_size, _shape


def _index_type(rank: int) -> Type:
    return INTEGER if rank == 1 else TTuple((INTEGER,) * rank)


def _target(shp: Type, pair: Type) -> Type | None:
    """The result type for one shape template and one (index, value) pair type."""
    if not (isinstance(shp, TTensor) and isinstance(pair, TTuple) and len(pair.elems) == 2):
        return None
    idx, val = pair.elems
    if idx != _index_type(shp.rank) or not is_data(val):
        return None
    try:
        ok = shape_type(val) == shp.elem
    except ValueError:
        return None
    return TTensor(shp.rank, val) if ok else None


def _signature(t: Type) -> tuple[Type, Type, Type] | None:
    """(shape template, pair type, index-range type) of a call's argument type."""
    abc = args_of(t, 3)
    if abc is None:
        return None
    shp, m, f = abc
    if _rank_of_size(m) is None or not isinstance(f, TLam) or f.arg != m:
        return None
    return shp, f.res, m


def _sparse_type(t: Type) -> Type | None:
    sig = _signature(t)
    return _target(sig[0], sig[1]) if sig else None


def _sparse_tupled_type(t: Type) -> Type | None:
    sig = _signature(t)
    if sig is None:
        return None
    shp, pairs, _ = sig
    if not (isinstance(shp, TTuple) and isinstance(pairs, TTuple) and len(shp.elems) == len(pairs.elems)):
        return None
    parts = [_target(s, p) for s, p in zip(shp.elems, pairs.elems)]
    return None if not parts or None in parts else TTuple(tuple(parts))


def zero_of_shape(t: Type) -> Callable[[Any], Any]:
    """The zero of type t whose shape is the given shape value."""
    if t == FLOAT:
        return lambda s: 0.0
    if isinstance(t, TTuple):
        fs = [zero_of_shape(e) for e in t.elems]
        return lambda s: tuple(f(x) for f, x in zip(fs, s))
    if isinstance(t, TTensor):
        inner = zero_of_shape(t.elem)
        if t.elem == FLOAT:
            return lambda s: np.zeros(dense(s).shape)
        return lambda s: make_vec(t.elem, [inner(x) for x in dense(s).flat], dense(s).shape)
    return lambda s: 0 if t == INTEGER else False


class _Scatter:
    """A result tensor being filled by (index, value) pairs."""

    def __init__(self, target: TTensor, shp: Any) -> None:
        shp = dense(shp)
        self.out = zero_of_shape(target)(shp)
        if target.elem == FLOAT:
            self.out = np.array(self.out, dtype=np.float64)
        self.add = add_fn(target.elem)
        self.scalar = target.elem == FLOAT

    def put(self, idx: Any, value: Any) -> None:
        key = (idx,) if isinstance(idx, int) else tuple(idx)
        if len(key) != self.out.ndim or not all(0 <= k < n for k, n in zip(key, self.out.shape)):
            raise PrimError(f"buildFromSparse: index {idx} outside the result's shape "
                            f"{'x'.join(map(str, self.out.shape))}")
        if self.scalar:
            self.out[key] += value
            return
        old = self.out[key]
        if getattr(dense(old), "shape", None) != getattr(dense(value), "shape", None):
            raise PrimError(f"buildFromSparse: a value of shape {_shape_of(value)} at index {idx}, "
                            f"where the result's shape has {_shape_of(old)}")
        self.out[key] = self.add(old, value)


def _shape_of(v: Any) -> str:
    shape = getattr(dense(v), "shape", None)
    return "()" if not shape else "x".join(map(str, shape))


def _sparse_impl(t: Type) -> Callable:
    target = _sparse_type(t)

    def build_from_sparse(shp, m, f):
        acc = _Scatter(target, shp)
        for i in _indices(_shape(m, "buildFromSparse")):
            idx, value = f(i)
            acc.put(idx, value)
        return acc.out
    return spread(build_from_sparse)


def _sparse_tupled_impl(t: Type) -> Callable:
    targets = _sparse_tupled_type(t).elems

    def build_from_sparse_tupled(shps, m, f):
        accs = [_Scatter(tt, s) for tt, s in zip(targets, shps)]
        for i in _indices(_shape(m, "buildFromSparseTupled")):
            for acc, (idx, value) in zip(accs, f(i)):
                acc.put(idx, value)
        return tuple(acc.out for acc in accs)
    return spread(build_from_sparse_tupled)


primitive("buildFromSparse", _sparse_type, _sparse_impl,
          "(buildFromSparse shp m (lam (i : I) (tuple idx val))): the tensor of shape shp that is the sum of "
          "the m values val at their indices idx, zero elsewhere (Knossos).")
primitive("buildFromSparseTupled", _sparse_tupled_type, _sparse_tupled_impl,
          "(buildFromSparseTupled (tuple shp1 ...) m (lam (i : I) (tuple (tuple idx1 val1) ...))): "
          "a tuple of tensors, each built as buildFromSparse builds one (Knossos).")
