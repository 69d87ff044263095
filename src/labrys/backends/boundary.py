"""The compiled backend's fast boundary: Python/NumPy arguments straight to the
compiled code, results straight back, for functions whose types map to NumPy.

Note [Cheap boundaries]
~~~~~~~~~~~~~~~~~~~~~~~
The general path converts every argument to the run-time representation
(:func:`labrys.values.from_python`: a nested ``Vec`` becomes an object array of
rows), then to the machine one (the rows stacked again) and the result back —
each a copy and a Python loop over rows, 20 ms per call for ADBench GMM's
1000 × 10 points.  When every parameter and the result are *plain* — Float,
Integer, Bool, a ``Vec``/``Tensor`` whose elements are eventually Float
(one N-D float64 array, ``array_rank``), or tuples of these — a call needs
none of that: a C-contiguous float64 array of the right rank is passed as it
is (no copy; a result that is part of an argument, e.g. ``(index 0 m)``, is a
view of it), another array or nested list goes through ``np.ascontiguousarray``,
and the compiled code's N-D result is returned as an ndarray shaped like the
value it stands for.  The converters are made once per signature.  Anything
the fast path does not take (a ragged nested list, a string, a run-time error
in the compiled code) returns :data:`SLOW`, and the caller takes the general
path, which accepts or reports it exactly as before.

Arguments (not results) may also be a ``Vec Integer`` (a 1-D array or list of
ints, as int64), a ``Vec (Tuple)`` (the tangent of a ``Vec Integer``: only its
length is data) and a nested vector of flat tuples (lists of lists of tuples,
ragged or not: flat columns and offsets, Note [Nested struct of arrays] in
numba_nested.py), each checked as the general path would (an Integer column
of ints, a Float column of numbers, a Bool column of bools): ADBench hand's
model and its tangent's zeros take this path, not the general one's
conversion of every value (85% of a forward Jacobian column's time).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..context import current
from ..ir.types import BOOL, FLOAT, INTEGER, TTensor, TTuple, Type
from .numba_nested import fast_nested
from .numba_source import array_rank
from .numba_types import UNITS, soa_rank

SLOW = object()          # "take the general path"
_FAILURES = (ArithmeticError, LookupError, AssertionError, ValueError, TypeError, MemoryError)


class _NotPlain(Exception):
    pass


def plain(t: Type, argument: bool = False) -> bool:
    """A type whose values the fast boundary passes as NumPy values (as an argument: more)."""
    if t in (FLOAT, INTEGER, BOOL):
        return True
    if isinstance(t, TTensor):
        return array_rank(t) is not None or argument and (t == UNITS or t == TTensor(1, INTEGER) or bool(soa_rank(t)))
    return isinstance(t, TTuple) and all(plain(e, argument) for e in t.elems)


def argument(t: Type) -> Callable[[Any], Any]:
    """Python value → machine value of type t; raises _NotPlain for anything unusual."""
    if t == FLOAT:
        def real(x: Any) -> float:
            if type(x) is float:
                return x
            if isinstance(x, (int, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)):
                return float(x)
            raise _NotPlain
        return real
    if t == INTEGER:
        def integer(x: Any) -> int:
            if type(x) is int or isinstance(x, np.integer):
                return int(x)
            raise _NotPlain
        return integer
    if t == BOOL:
        def boolean(x: Any) -> bool:
            if isinstance(x, (bool, np.bool_)):
                return bool(x)
            raise _NotPlain
        return boolean
    if t == UNITS:
        def units(x: Any) -> tuple:
            if not isinstance(x, (list, tuple, np.ndarray)) or any(u != () for u in x):
                raise _NotPlain
            return (len(x),)
        return units
    if t == TTensor(1, INTEGER):
        def integers(x: Any) -> np.ndarray:
            if isinstance(x, (str, bytes)):
                raise _NotPlain
            a = np.asarray(x)
            if a.ndim != 1 or a.dtype.kind not in "iu" or a.size == 0:
                raise _NotPlain
            return a.astype(np.int64)
        return integers
    if soa_rank(t):
        convert = fast_nested(t)

        def nested(x: Any) -> tuple:
            out = convert(x)
            if out is None:
                raise _NotPlain
            return out
        return nested
    if isinstance(t, TTensor):
        rank = array_rank(t)

        def array(x: Any) -> np.ndarray:
            if type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == rank and x.flags.c_contiguous:
                return x   # no copy
            if isinstance(x, (str, bytes)) or (isinstance(x, np.ndarray) and x.dtype == object):
                raise _NotPlain
            try:
                a = np.ascontiguousarray(x, dtype=np.float64)
            except (TypeError, ValueError):
                raise _NotPlain from None
            if a.ndim != rank or (a.size == 0 and rank > 1):
                raise _NotPlain
            return a
        return array
    parts = [argument(e) for e in t.elems]

    def tup(x: Any) -> tuple:
        if not isinstance(x, (tuple, list)) or len(x) != len(parts):
            raise _NotPlain
        return tuple(f(v) for f, v in zip(parts, x))
    if len(parts) == 2 and t.elems == (FLOAT, FLOAT):   # a pair of Floats, as scalar gradients take it
        def pair(x: Any) -> tuple:
            if type(x) is tuple and len(x) == 2 and type(x[0]) is float and type(x[1]) is float:
                return x
            return tup(x)
        return pair
    return tup


def fast_entry(params: tuple[Type, ...], ret: Type, compiled: Callable, backend: str) -> Callable | None:
    """``call(args)``: the compiled function on one Python value per parameter, or SLOW."""
    if not (all(plain(t, argument=True) for t in params) and plain(ret)):
        return None
    convert = [argument(t) for t in params]
    n = len(convert)

    def call(args: tuple) -> Any:
        if len(args) != n:
            return SLOW
        try:
            machine = [c(a) for c, a in zip(convert, args)]
        except _NotPlain:
            return SLOW
        ctx = current()
        ctx.unmetered[backend] = ctx.unmetered.get(backend, 0) + 1
        try:
            return compiled(*machine)
        except _FAILURES:   # the general path reports it where it happened
            return SLOW
    return call
