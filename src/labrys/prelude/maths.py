"""Scalar mathematics on Float (LANGUAGE.md §5), with IEEE results where
Python's ``math`` would raise (``log 0.0`` is ``-inf``, ``exp 1000.0`` is ``inf``)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..ir.types import BOOL, FLOAT, INTEGER, TTensor, TTuple, Type
from ..values import PrimError, dense
from .registry import args_of, primitive, spread


def _ieee(f: Callable[..., float]) -> Callable[..., float]:
    def g(*xs: float) -> float:
        try:
            return f(*xs)
        except OverflowError:
            return math.inf
        except ValueError:
            with np.errstate(all="ignore"):
                return float(getattr(np, f.__name__, lambda *a: math.nan)(*xs))
    g.__name__ = f.__name__
    return g


def _log(x: float) -> float:
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except OverflowError:
        return math.inf if x > 0 or float(y).is_integer() and y % 2 == 0 else -math.inf
    except ValueError:
        return math.inf if x == 0 else math.nan


def _lgamma(x: float) -> float:
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


_UNARY = {
    "exp": _ieee(math.exp), "log": _log, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "tanh": math.tanh, "sinh": _ieee(math.sinh), "cosh": _ieee(math.cosh), "sqrt": _sqrt,
    "erf": math.erf, "lgamma": _lgamma,
}
for _name, _f in _UNARY.items():
    primitive(_name, lambda t: FLOAT if t == FLOAT else None, lambda t, f=_f: f, f"{_name} of a Float.",
              cost=lambda r, a: 1)

primitive("abs", lambda t: t if t in (FLOAT, INTEGER) else None, lambda t: abs,
          "Absolute value of a Float or Integer.", cost=lambda r, a: 1)


def _pow_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return FLOAT if ab in ((FLOAT, FLOAT), (FLOAT, INTEGER)) else None


primitive("pow", _pow_type, lambda t: spread(_pow), "x to the power y (y a Float or an Integer).",
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
