"""Scalar mathematics on Float (LANGUAGE.md §5), with IEEE results where
Python's ``math`` would raise (``log 0.0`` is ``-inf``, ``exp 1000.0`` is ``inf``)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..ir.types import BOOL, FLOAT, INTEGER, TTensor, TTuple, Type
from ..values import PrimError, dense
from .arith import wrap64
from .registry import args_of, primitive, spread


def _ieee(f: Callable[..., float], ufunc: Callable[..., Any]) -> Callable[..., float]:
    """``f`` from ``math`` (fast), falling back to NumPy's IEEE result where it raises."""
    def g(*xs: float) -> float:
        try:
            return f(*xs)
        except (OverflowError, ValueError):
            with np.errstate(all="ignore"):
                return float(ufunc(*map(np.float64, xs)))
    return g


def _log(x: float) -> float:
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _lgamma(x: float) -> float:
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


_UNARY = {
    "exp": _ieee(math.exp, np.exp), "log": _log, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "tanh": math.tanh, "sinh": _ieee(math.sinh, np.sinh), "cosh": _ieee(math.cosh, np.cosh), "sqrt": _sqrt,
    "erf": math.erf, "lgamma": _lgamma,
}
_UFUNC = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
          "sinh": np.sinh, "cosh": np.cosh, "sqrt": np.sqrt}


def _unary_type(t: Type) -> Type | None:
    return t if t == FLOAT or (isinstance(t, TTensor) and t.elem == FLOAT) else None


def _unary_impl(scalar: Callable[[float], float], name: str):
    ufunc = _UFUNC.get(name) or np.vectorize(scalar, otypes=[np.float64])

    def on_tensor(v):
        with np.errstate(all="ignore"):
            return ufunc(dense(v))
    return lambda t: scalar if t == FLOAT else on_tensor


for _name, _f in _UNARY.items():
    primitive(_name, _unary_type, _unary_impl(_f, _name),
              f"{_name} of a Float; elementwise on a Tensor N Float.")

primitive("abs", lambda t: t if t in (FLOAT, INTEGER) else None,
          lambda t: (lambda x: wrap64(abs(x))) if t == INTEGER else abs,
          "Absolute value of a Float or Integer.", cost=lambda r, a: 1)


def _pow_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return FLOAT if ab in ((FLOAT, FLOAT), (FLOAT, INTEGER)) else None


primitive("pow", _pow_type, lambda t: spread(_ieee(math.pow, np.power)), "x to the power y (y a Float or an Integer).",
          cost=lambda r, a: 1)


def _extremum(name: str, pick2: Callable, pick_arr: Callable) -> None:
    vec = TTensor(1, FLOAT)

    def typeof(t: Type) -> Type | None:
        ab = args_of(t, 2)
        if ab and ab[0] == ab[1] and ab[0] in (FLOAT, INTEGER):
            return ab[0]
        return FLOAT if t == vec else None

    def impl(t: Type):
        if t == vec:
            def of_vec(v):
                v = dense(v)
                if v.size == 0:
                    raise PrimError(f"{name} of an empty vector")
                return float(pick_arr(v))
            return of_vec
        return spread(pick2)

    primitive(name, typeof, impl, f"{name} of two Floats (or Integers), or the {name} element of a Vec Float.",
              cost=lambda r, a: a.size if isinstance(a, np.ndarray) else 1)


def _max2(a, b):
    return a if a >= b or a != a else b


def _min2(a, b):
    return a if a <= b or a != a else b


_extremum("max", _max2, np.max)
_extremum("min", _min2, np.min)


def _imax(v):
    v = dense(v)
    if v.size == 0:
        raise PrimError("imax of an empty vector")
    return int(np.argmax(v))


primitive("imax", lambda t: INTEGER if t == TTensor(1, FLOAT) else None, lambda t: _imax,
          "Index of the largest element of a Vec Float (the first, on ties).", cost=lambda r, a: a.size)
primitive("to_float", lambda t: FLOAT if t == INTEGER else None, lambda t: float,
          "Integer to Float.")
primitive("bool_to_float", lambda t: FLOAT if t == BOOL else None, lambda t: lambda b: 1.0 if b else 0.0,
          "1.0 for true, 0.0 for false.")
primitive("pi", lambda t: FLOAT if t == TTuple(()) else None, lambda t: lambda _: math.pi,
          "The constant π (called with no arguments: (pi)).")
