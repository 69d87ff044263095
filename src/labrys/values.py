"""Run-time values (issue: Core §6) and the operations every backend shares.

=====================  ==========================================
``.ks`` type           Python value
=====================  ==========================================
Float / Integer / Bool ``float`` / ``int`` / ``bool``
String                 ``str``
Tuple                  ``tuple``
Tensor N Float         float64 ``ndarray`` with ``ndim == N``
other Tensor N T       object ``ndarray`` with ``ndim == N``
Lam                    a Python callable of one argument
Sum                    :class:`Inj`
``deltaVec n i x``     :class:`DeltaVec` (sparse; densified on demand)
=====================  ==========================================
"""
from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .errors import LabrysError
from .ir.types import FLOAT, TBase, TLam, TSum, TTensor, TTuple, Type


class PrimError(LabrysError):
    """A run-time error inside a primitive; the caller adds the source span.  Its
    ``str`` is the bare message, which callers put into positioned errors."""

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class Inj:
    left: bool
    value: Any


class Sparse(abc.ABC):
    """A tensor stored sparsely: ``dense()`` gives (and caches) its values.

    Note [Sparse cotangents]: reverse mode of ``index`` produces one-hot
    tensors, and a gradient is a sum of many of them.  :class:`DeltaVec` is
    one term; :class:`SparseSum` a persistent chain of terms over an
    optional dense base, so adding a term costs O(1) whoever holds the sum,
    and the tensor is materialised once, when something needs its values.
    ``like`` is a primal tensor of the same shape, so zeros are shaped
    correctly even for ragged ``Vec (Vec Float)``.
    """

    __slots__ = ()

    @abc.abstractmethod
    def dense(self) -> np.ndarray:
        """The tensor's values, materialised."""

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, ...]:
        """The tensor's size: one entry per dimension."""


def _zeros(shape: tuple[int, ...], elem: Type, like: Any, template: Any) -> np.ndarray:
    if elem == FLOAT:
        return np.zeros(shape)
    if like is not None:
        like = dense(like)
        return make_vec(elem, [zero_tangent_of(x) for x in like.flat], shape)
    return make_vec(elem, [zero_like(template)] * int(np.prod(shape)), shape)


def zeros_shaped(shape: tuple[int, ...], elem: Type, template: Any) -> np.ndarray:
    """A tensor of the given shape whose every element is the zero of ``template`` (of type elem)."""
    return _zeros(shape, elem, None, template)


@dataclass(frozen=True, slots=True, eq=False)
class DeltaVec(Sparse):
    """A tensor of size ``n`` that is ``value`` at ``index`` and zero elsewhere
    (``n`` and ``index`` are Integers, or N-tuples for a Tensor N)."""

    n: int | tuple[int, ...]
    index: int | tuple[int, ...]
    value: Any
    elem: Type
    like: Any = None

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n,) if isinstance(self.n, int) else tuple(self.n)

    def dense(self) -> np.ndarray:
        out = _zeros(self.shape, self.elem, self.like, self.value)
        out[self.index] = dense(self.value) if self.elem == FLOAT else self.value
        return out

    def terms(self):
        yield self


class SparseSum(Sparse):
    """``base + Σ terms`` where each term is a :class:`DeltaVec` (Note [Sparse cotangents])."""

    __slots__ = ("prev", "base", "term", "_dense")

    def __init__(self, prev: "SparseSum | None", base: Any, term: DeltaVec) -> None:
        self.prev, self.base, self.term, self._dense = prev, base, term, None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.term.shape

    @property
    def elem(self) -> Type:
        return self.term.elem

    def terms(self):
        chain, node = [], self
        while node is not None:
            chain.append(node.term)
            node = node.prev
        return reversed(chain)

    def root_base(self) -> Any:
        node = self
        while node.prev is not None:
            node = node.prev
        return node.base

    def dense(self) -> np.ndarray:
        if self._dense is None:
            base = self.root_base()
            t = self.term
            out = _zeros(t.shape, t.elem, t.like, t.value) if base is None else dense(base).copy()
            for term in self.terms():
                out[term.index] = _add_value(out[term.index], term.value)
            self._dense = out
        return self._dense


def _add_value(a: Any, b: Any) -> Any:
    """Addition of two tangent values of the same type (used when densifying)."""
    if isinstance(a, tuple):
        return tuple(_add_value(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) and a.dtype == object:
        b = dense(b)
        out = a.copy()
        for idx in np.ndindex(a.shape):
            out[idx] = _add_value(a[idx], b[idx])
        return out
    return dense(a) + dense(b)


def sparse_add(a: Any, b: Any) -> Any | None:
    """``a + b`` in O(1) when the right operand is one sparse term; None otherwise."""
    if isinstance(a, DeltaVec) and not isinstance(b, DeltaVec):
        a, b = b, a
    if not isinstance(b, DeltaVec):
        return None
    if isinstance(a, SparseSum):
        return SparseSum(a, None, b)
    if isinstance(a, DeltaVec):
        return SparseSum(SparseSum(None, None, a), None, b)
    return SparseSum(None, a, b)


def zero_tangent_of(x: Any) -> Any:
    """The zero tangent of a primal value (unit for Integers, Bools, Strings)."""
    if isinstance(x, (bool, np.bool_, str)) or isinstance(x, (int, np.integer)):
        return ()
    if isinstance(x, (float, np.floating)):
        return 0.0
    if isinstance(x, tuple):
        return tuple(zero_tangent_of(e) for e in x)
    x = dense(x)
    if isinstance(x, np.ndarray) and x.dtype != object:
        return np.zeros(x.shape)
    out = np.empty(x.shape, dtype=object)
    for idx in np.ndindex(x.shape):
        out[idx] = zero_tangent_of(x[idx])
    return out


def make_vec(elem: Type, items: list, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """A tensor of ``elem`` from a flat list of items in row-major order."""
    shape = (len(items),) if shape is None else shape
    if elem == FLOAT:
        return np.array(items, dtype=np.float64).reshape(shape)
    out = np.empty(len(items), dtype=object)
    for k, x in enumerate(items):
        out[k] = x
    return out.reshape(shape)


def dense(v: Any) -> Any:
    return v.dense() if isinstance(v, Sparse) else v


def zero_like(v: Any) -> Any:
    if isinstance(v, bool):
        return False
    if isinstance(v, (float, np.floating)):
        return 0.0
    if isinstance(v, int):
        return 0
    if isinstance(v, tuple):
        return tuple(zero_like(x) for x in v)
    if isinstance(v, Sparse):
        return zero_like(v.dense())
    if isinstance(v, np.ndarray):
        if v.dtype != object:
            return np.zeros_like(v)
        out = np.empty(v.shape, dtype=object)
        for idx in np.ndindex(v.shape):
            out[idx] = zero_like(v[idx])
        return out
    raise PrimError(f"no zero for a value of kind {type(v).__name__}")


def numel(v: Any) -> int:
    """Number of scalars in a value: the unit of the op-count meter."""
    if isinstance(v, np.ndarray):
        if v.dtype != object:
            return v.size
        return sum(numel(x) for x in v.flat)
    if isinstance(v, tuple):
        return sum(numel(x) for x in v) or 1
    if isinstance(v, DeltaVec):
        return numel(v.value)
    if isinstance(v, SparseSum):
        return numel(v.term.value)
    return 1


def from_python(value: Any, t: Type, what: str = "argument", strict: bool = False) -> Any:
    """Convert a Python/NumPy/JSON-like value to the representation of ``t``.

    ``strict`` refuses a Python int where a Float is expected (overload
    selection tries strictly first, so ``f(2)`` prefers ``f : Integer -> ...``)."""
    def bad() -> PrimError:
        return PrimError(f"{what}: expected a value of type {t}, got {_describe(value)}")

    match t:
        case TBase("Float"):
            ok = (float, np.floating) if strict else (int, float, np.integer, np.floating)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, ok):
                raise bad()
            return float(value)
        case TBase("Integer"):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise bad()
            if not -(1 << 63) <= int(value) < (1 << 63):
                raise PrimError(f"{what}: {value} does not fit in a 64-bit Integer")
            return int(value)
        case TBase("Bool"):
            if not isinstance(value, (bool, np.bool_)):
                raise bad()
            return bool(value)
        case TBase("String"):
            if not isinstance(value, str):
                raise bad()
            return value
        case TBase("BOG"):  # opaque: what a [suffwdpass f] returned, handed back to [sufrevpass f]
            return value
        case TTuple(elems):
            if not isinstance(value, (tuple, list)) or len(value) != len(elems):
                raise bad()
            return tuple(from_python(v, e, what, strict) for v, e in zip(value, elems))
        case TTensor(rank, elem):
            if isinstance(value, Sparse):
                value = value.dense()
            if elem == FLOAT:
                try:
                    arr = np.asarray(value, dtype=np.float64)
                except (TypeError, ValueError):
                    raise bad() from None
                if arr.ndim != rank:
                    raise bad()
                return arr
            if isinstance(value, np.ndarray) and value.dtype != object and rank == 1 and value.ndim == 1:
                value = value.tolist()
            if rank == 1:
                if not isinstance(value, (list, tuple, np.ndarray)):
                    raise bad()
                return make_vec(elem, [from_python(v, elem, what, strict) for v in value])
            arr = np.asarray(value, dtype=object)
            if arr.ndim < rank:
                raise bad()
            out = np.empty(arr.shape[:rank], dtype=object)
            for idx in np.ndindex(out.shape):
                out[idx] = from_python(arr[idx], elem, what, strict)
            return out
        case TSum(left, right):
            if isinstance(value, Inj):
                return Inj(value.left, from_python(value.value, left if value.left else right, what, strict))
            raise bad()
        case TLam():
            if not callable(value):
                raise bad()
            return value
    raise bad()


def _describe(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape} and dtype {v.dtype}"
    return f"{type(v).__name__} {v!r}"[:80]


def format_float(x: float) -> str:
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(x)
    return r if any(c in r for c in ".en") else r + ".0"


def format_value(v: Any, top: bool = True) -> str:
    """``print``'s rendering: strings bare at top level, quoted inside structures."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return format_float(v)
    if isinstance(v, str):
        return v if top else '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, tuple):
        return "(" + ", ".join(format_value(x, False) for x in v) + ")"
    if isinstance(v, Sparse):
        v = v.dense()
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return format_value(v[()], False)
        return "[" + ", ".join(format_value(x, False) for x in v) + "]"
    if isinstance(v, Inj):
        return f"({'inl' if v.left else 'inr'} {format_value(v.value, False)})"
    if callable(v):
        return "<function>"
    return str(v)


def to_python(v: Any) -> Any:
    """A value as plain Python/NumPy for API users (densifies sparse vectors)."""
    if isinstance(v, Sparse):
        return to_python(v.dense())
    if isinstance(v, tuple):
        return tuple(to_python(x) for x in v)
    if isinstance(v, np.ndarray) and v.dtype == object:
        out = np.empty(v.shape, dtype=object)
        for idx in np.ndindex(v.shape):
            out[idx] = to_python(v[idx])
        return list(out) if v.ndim == 1 else out
    if isinstance(v, np.floating):
        return float(v)
    return v


Fn = Callable[..., Any]
