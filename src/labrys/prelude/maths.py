"""Scalar mathematics on Float (docs/reference.md §5), with IEEE results where
Python's ``math`` would raise (``log 0.0`` is ``-inf``, ``exp 1000.0`` is ``inf``)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..ir.build import ONE, UNIT, ZERO, C, if_
from ..ir.nodes import const
from ..ir.types import BOOL, FLOAT, INTEGER, TTensor, TTuple, Type
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import zero_tangent
from ..values import PrimError, dense
from .arith import wrap64


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


def _libm_lgamma() -> Callable[[float], float] | None:
    """The C library's lgamma, which compiled code calls (Numba's math.lgamma): CPython's own
    is up to tens of ulps away from it (lgamma(1.25)), and every backend must agree."""
    import ctypes
    import ctypes.util
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6").lgamma
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
    return fn


_C_LGAMMA = _libm_lgamma()


def _lgamma(x: float) -> float:
    if _C_LGAMMA is not None:
        return _C_LGAMMA(x)
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


_UNARY = {
    "exp": _ieee(math.exp, np.exp), "log": _log, "sin": _ieee(math.sin, np.sin), "cos": _ieee(math.cos, np.cos),
    "tan": _ieee(math.tan, np.tan), "tanh": math.tanh, "sinh": _ieee(math.sinh, np.sinh),
    "cosh": _ieee(math.cosh, np.cosh), "sqrt": _sqrt, "erf": math.erf, "lgamma": _lgamma,
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


# d f(x) = f'(x) * dx, elementwise on tensors: the factor f'(x) as IR, from the
# argument x and the result y (exp, tanh and sqrt reuse their value).
_SLOPE = {
    "exp": lambda x, y: y,
    "log": lambda x, y: C("div", ONE, x),
    "sin": lambda x, y: C("cos", x),
    "cos": lambda x, y: C("neg", C("sin", x)),
    "tan": lambda x, y: C("add", ONE, C("mul", y, y)),
    "tanh": lambda x, y: C("sub", ONE, C("mul", y, y)),
    "sinh": lambda x, y: C("cosh", x),
    "cosh": lambda x, y: C("sinh", x),
    "sqrt": lambda x, y: C("div", const(0.5), y),
    "erf": lambda x, y: C("mul", const(2.0 / math.sqrt(math.pi)), C("exp", C("neg", C("mul", x, x)))),
    "lgamma": lambda x, y: C("digamma", x),
}


def _slope_rules(name: str) -> dict:
    slope = _SLOPE[name]
    return dict(fwd=lambda a, d, t, y: C("mul", slope(a[0], y), d[0]),
                rev=lambda a, r, t, y: (C("mul", slope(a[0], y), r),),
                jacobian=lambda a: C("lmScale", a[0], slope(a[0], C(name, a[0]))))


def _lower_unary(name: str):
    if name in _UFUNC:
        return lambda xs, types, res: f"_np.{name}({xs[0]})"
    return lambda xs, types, res: None if isinstance(types[0], TTensor) else f"_math.{name}({xs[0]})"


for _name, _f in _UNARY.items():
    primitive(_name, _unary_type, _unary_impl(_f, _name), f"{_name} of a Float; elementwise on a Tensor N Float.",
              foldable=_name in ("exp", "log", "sin", "cos", "sqrt", "tanh"), elementwise=_name,
              numba=_lower_unary(_name), **_slope_rules(_name))

def _sign(x):  # as IR: -1.0 below zero, else 1.0
    return if_(C("lt", x, ZERO), const(-1.0), ONE)


primitive("abs", lambda t: t if t in (FLOAT, INTEGER) else None,
          lambda t: (lambda x: wrap64(abs(x))) if t == INTEGER else abs,
          doc="Absolute value of a Float or Integer.", cost=lambda r, a: 1, foldable=True, elementwise="abs",
          numba=lambda xs, types, res: f"abs({xs[0]})",
          fwd=lambda a, d, t, y: UNIT if t[0] == INTEGER else C("mul", _sign(a[0]), d[0]),
          rev=lambda a, r, t, y: (UNIT if t[0] == INTEGER else C("mul", _sign(a[0]), r),))


def _pow_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return FLOAT if ab in ((FLOAT, FLOAT), (FLOAT, INTEGER)) else None


def _pow_partials(a, t):
    """(d/dx, d/dy) of x^y as IR; y an Integer has no derivative."""
    x, y = a
    if t[1] == INTEGER:
        return C("mul", C("to_float", y), C("pow", x, C("sub", y, const(1)))), None
    dx = C("mul", y, C("pow", x, C("sub", y, ONE)))
    return dx, C("mul", C("log", x), C("pow", x, y))


def _pow_fwd(a, d, t, y):
    px, py = _pow_partials(a, t)
    return C("mul", px, d[0]) if py is None else C("add", C("mul", px, d[0]), C("mul", py, d[1]))


def _pow_rev(a, r, t, y):
    px, py = _pow_partials(a, t)
    return C("mul", px, r), UNIT if py is None else C("mul", py, r)


primitive("pow", _pow_type, lambda t: spread(_ieee(math.pow, np.power)), "x to the power y (y a Float or an Integer).",
          cost=lambda r, a: 1, foldable=True, elementwise="pow",
          numba=lambda xs, types, res: f"{xs[0]} ** float({xs[1]})",
          fwd=_pow_fwd, rev=_pow_rev)


def _extremum_rules(name: str) -> dict:
    """max/min pass the derivative of the chosen argument (the first on ties)."""
    cmp, pick = ("gte", "imax") if name == "max" else ("lte", "imin")

    def fwd(a, d, t, y):
        if len(a) == 1:
            return C("index", C(pick, a[0]), d[0])
        return if_(C(cmp, a[0], a[1]), d[0], d[1])

    def rev(a, r, t, y):
        if len(a) == 1:
            return (C("deltaVec", C("size", a[0]), C(pick, a[0]), r),)
        zero = zero_tangent(a[0], t[0])
        return if_(C(cmp, a[0], a[1]), r, zero), if_(C(cmp, a[0], a[1]), zero, r)
    return dict(fwd=fwd, rev=rev)


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

    def lower(xs: list[str], types: list[Type], result: Type) -> str:
        if types == [vec]:
            return f"_extremum({xs[0]}, {name == 'max'})"
        a, b = xs  # as the interpreter: NaN wins
        return f"{a} if {a} {'>=' if name == 'max' else '<='} {b} or {a} != {a} else {b}"

    primitive(name, typeof, impl, f"{name} of two Floats (or Integers), or the {name} element of a Vec Float.",
              cost=lambda r, a: a.size if isinstance(a, np.ndarray) else 1, foldable=True, elementwise=name,
              numba=lower, **_extremum_rules(name))


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


def _imin(v):
    v = dense(v)
    if v.size == 0:
        raise PrimError("imin of an empty vector")
    return int(np.argmin(v))


primitive("imax", lambda t: INTEGER if t == TTensor(1, FLOAT) else None, lambda t: _imax,
          "Index of the largest element of a Vec Float (the first, on ties).", cost=lambda r, a: a.size,
          nondiff=True, numba=lambda xs, types, res: f"_argextremum({xs[0]}, True)")
primitive("imin", lambda t: INTEGER if t == TTensor(1, FLOAT) else None, lambda t: _imin,
          "Index of the smallest element of a Vec Float (the first, on ties).", cost=lambda r, a: a.size,
          nondiff=True, numba=lambda xs, types, res: f"_argextremum({xs[0]}, False)")
primitive("to_float", lambda t: FLOAT if t == INTEGER else None, lambda t: float,
          "Integer to Float.", nondiff=True, foldable=True, numba=lambda xs, types, res: f"float({xs[0]})")
primitive("bool_to_float", lambda t: FLOAT if t == BOOL else None, lambda t: lambda b: 1.0 if b else 0.0,
          "1.0 for true, 0.0 for false.", nondiff=True, numba=lambda xs, types, res: f"1.0 if {xs[0]} else 0.0")
primitive("pi", lambda t: FLOAT if t == TTuple(()) else None, lambda t: lambda _: math.pi,
          "The constant π (called with no arguments: (pi)).", nondiff=True,
          numba=lambda xs, types, res: repr(math.pi))


def digamma(x: float) -> float:
    """ψ(x) = d lgamma(x)/dx: recurrence up to x ≥ 10, then the asymptotic series."""
    if x != x or x == -math.inf:
        return math.nan
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0:  # reflection: ψ(1-x) - ψ(x) = π cot(πx)
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    acc = 0.0
    while x < 10:
        acc -= 1 / x
        x += 1
    f = 1 / (x * x)
    series = f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f * (1 / 132)))))
    return acc + math.log(x) - 0.5 / x - series


primitive("digamma", _unary_type, _unary_impl(digamma, "digamma"),
          "The digamma function ψ, the derivative of lgamma; elementwise on a Tensor N Float.", elementwise="digamma",
          numba=lambda xs, types, res: None if isinstance(types[0], TTensor) else f"_digamma({xs[0]})")
