"""Operations on tangents, used by derivative code: ``ts_add`` (a value plus a
tangent), ``ts_neg``, ``ts_scale``, ``ts_dot``, ``ts_zero``, and the addition
every accumulation shares (sparse-aware, Note [Sparse cotangents])."""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..ir.build import C
from ..ir.types import FLOAT, INTEGER, TBase, TTensor, TTuple, Type
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import tangent_type
from ..values import PrimError, Sparse, dense, make_vec, numel, sparse_add
from .arith import Op2, _scale, is_data, is_float_struct, lift1, lift2, wrap64


def add_fn(t: Type) -> Op2:
    """``a + b`` on values of numeric type ``t``; understands sparse vectors."""
    if isinstance(t, TTensor):
        plain = lift2("add", t, _scalar_add, np.add)

        def add(a, b):  # Note [Sparse cotangents]: a sparse term is added in O(1)
            if isinstance(a, Sparse) or isinstance(b, Sparse):
                if a.shape != b.shape:
                    raise PrimError(f"add: tensor sizes differ ({a.shape} and {b.shape})")
                quick = sparse_add(a, b)
                if quick is not None:
                    return quick
            return plain(a, b)
        return add
    if isinstance(t, TTuple):
        fs = [add_fn(e) for e in t.elems]
        return lambda a, b: tuple(f(x, y) for f, x, y in zip(fs, a, b))
    return _scalar_add(t)


def _scalar_add(t: Type) -> Op2:
    """Integers wrap around at 64 bits on every backend (docs/reference.md §5)."""
    return (lambda a, b: wrap64(a + b)) if t == INTEGER else operator.add


def ts_add_fn(t: Type) -> Op2:
    """``x + dx`` for ``x : t`` and ``dx : dT(t)`` (Integer, Bool, String parts unchanged)."""
    if tangent_type(t) == t:
        return add_fn(t)
    match t:
        case TBase():
            return lambda a, _: a
        case TTuple(elems):
            fs = [ts_add_fn(e) for e in elems]
            return lambda a, b: tuple(f(x, y) for f, x, y in zip(fs, a, b))
        case TTensor(_, elem):
            inner = ts_add_fn(elem)
            return lambda a, b: make_vec(elem, [inner(x, y) for x, y in zip(a.flat, dense(b).flat)], a.shape)
    raise TypeError(t)


def _ts_add_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    if ab is None or not is_data(ab[0]):
        return None
    return ab[0] if ab[1] == tangent_type(ab[0]) else None


def _same2(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return ab[0] if ab and ab[0] == ab[1] and is_float_struct(ab[0]) else None


def _ts_scale_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return ab[1] if ab and ab[0] == FLOAT and is_float_struct(ab[1]) else None


def _dot(t: Type) -> Op2:
    if t == FLOAT:
        return operator.mul
    if isinstance(t, TTensor) and t.elem == FLOAT:
        return lambda a, b: float(np.vdot(dense(a), dense(b)))
    if isinstance(t, TTensor):
        inner = _dot(t.elem)
        return lambda a, b: float(sum(inner(x, y) for x, y in zip(dense(a).flat, dense(b).flat)))
    fs = [_dot(e) for e in t.elems]
    return lambda a, b: float(sum(f(x, y) for f, x, y in zip(fs, a, b)))


primitive("ts_add", _ts_add_type, lambda t: spread(ts_add_fn(t.elems[0])),
          "(ts_add x dx): a value plus a tangent (Integer parts unchanged); sparse-aware.", elementwise="add",
          fwd=lambda a, d, t, y: C("ts_add", d[0], d[1]), rev=lambda a, r, t, y: (r, r))
primitive("ts_neg", lambda t: t if is_float_struct(t) else None,
          lambda t: lift1(t, operator.neg, np.negative), "Negation of a tangent.", elementwise="neg",
          fwd=lambda a, d, t, y: C("ts_neg", d[0]), rev=lambda a, r, t, y: (C("ts_neg", r),))
primitive("ts_scale", _ts_scale_type, lambda t: spread(_scale(t.elems[1])), "Float times a tangent.",
          elementwise="mul",
          fwd=lambda a, d, t, y: C("ts_add", C("ts_scale", d[0], a[1]), C("ts_scale", a[0], d[1])),
          rev=lambda a, r, t, y: (C("ts_dot", r, a[1]), C("ts_scale", a[0], r)))
primitive("ts_dot", lambda t: FLOAT if _same2(t) is not None else None, lambda t: spread(_dot(t.elems[0])),
          "Inner product of two tangents.", cost=lambda r, a: numel(a),
          fwd=lambda a, d, t, y: C("add", C("ts_dot", d[0], a[1]), C("ts_dot", a[0], d[1])),
          rev=lambda a, r, t, y: (C("ts_scale", r, a[1]), C("ts_scale", r, a[0])))
primitive("ts_zero", lambda t: tangent_type(t) if is_data(t) else None,
          lambda t: zero_tangent_fn(t), "(ts_zero x): the zero tangent shaped like x.", nondiff=True)


def zero_tangent_fn(t: Type) -> Callable[[Any], Any]:
    match t:
        case TTuple(elems):
            fs = [zero_tangent_fn(e) for e in elems]
            return lambda v: tuple(f(x) for f, x in zip(fs, v))
        case TTensor(_, TBase("Float")):
            return lambda v: np.zeros(dense(v).shape)
        case TTensor(_, elem):
            inner = zero_tangent_fn(elem)
            return lambda v: make_vec(tangent_type(elem), [inner(x) for x in dense(v).flat], dense(v).shape)
    return (lambda v: 0.0) if t == FLOAT else (lambda v: ())
