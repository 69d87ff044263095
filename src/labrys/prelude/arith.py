"""Arithmetic, comparison and logic primitives; elementwise on tensors and
tuples (docs/reference.md §5), plus the tangent-space operations ``ts_*``."""
from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from ..ir.build import UNIT, C, get
from ..ir.nodes import Expr, Tuple, const
from ..ir.types import BOOL, FLOAT, INTEGER, TBase, TTensor, TTuple, Type
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import is_constant_tangent
from ..values import PrimError, dense, make_vec, numel

Op2 = Callable[[Any, Any], Any]


def is_numeric(t: Type) -> bool:
    """Float, Integer, and tensors and tuples built from them."""
    match t:
        case TBase(name):
            return name in ("Float", "Integer")
        case TTensor(_, elem):
            return is_numeric(elem)
        case TTuple(elems):
            return all(map(is_numeric, elems))
    return False


def is_float_struct(t: Type) -> bool:
    """Types a Float can scale: Float, and tensors and tuples of them."""
    match t:
        case TTensor(_, elem):
            return is_float_struct(elem)
        case TTuple(elems):
            return all(map(is_float_struct, elems))
    return t == FLOAT


def _same_shape(name: str, a: np.ndarray, b: np.ndarray) -> None:
    if a.shape != b.shape:
        raise PrimError(f"{name}: tensor sizes differ ({_shape(a)} and {_shape(b)})")


def _shape(a: np.ndarray) -> str:
    return str(a.shape[0]) if a.ndim == 1 else "x".join(map(str, a.shape))


def lift2(name: str, t: Type, scalar: Callable[[Type], Op2], array: Op2) -> Op2:
    """The binary elementwise operation ``name`` at type ``t``."""
    match t:
        case TBase():
            return scalar(t)
        case TTensor(_, TBase("Float")):
            def on_arrays(a, b):
                a, b = dense(a), dense(b)
                _same_shape(name, a, b)
                with np.errstate(all="ignore"):
                    return array(a, b)
            return on_arrays
        case TTensor(_, elem):
            inner = lift2(name, elem, scalar, array)

            def on_objects(a, b):
                a, b = dense(a), dense(b)
                _same_shape(name, a, b)
                return make_vec(elem, [inner(x, y) for x, y in zip(a.flat, b.flat)], a.shape)
            return on_objects
        case TTuple(elems):
            fs = [lift2(name, e, scalar, array) for e in elems]
            return lambda a, b: tuple(f(x, y) for f, x, y in zip(fs, a, b))
    raise TypeError(t)


def lift1(t: Type, scalar: Callable[[Any], Any], array: Callable[[Any], Any]) -> Callable[[Any], Any]:
    match t:
        case TBase():
            return scalar
        case TTensor(_, TBase("Float")):
            return lambda a: array(dense(a))
        case TTensor(_, elem):
            inner = lift1(elem, scalar, array)
            return lambda a: make_vec(elem, [inner(x) for x in dense(a).flat], a.shape)
        case TTuple(elems):
            fs = [lift1(e, scalar, array) for e in elems]
            return lambda a: tuple(f(x) for f, x in zip(fs, a))
    raise TypeError(t)


def _fdiv(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def wrap64(x: int) -> int:
    """Integers are signed 64-bit: arithmetic wraps around (two's complement)."""
    return x if -0x8000000000000000 <= x <= 0x7FFFFFFFFFFFFFFF else ((x + (1 << 63)) % (1 << 64)) - (1 << 63)


def _idiv(a: int, b: int) -> int:
    """Integer division truncating toward zero (docs/reference.md §5)."""
    if b == 0:
        raise PrimError("Integer division by zero")
    q = abs(a) // abs(b)
    return wrap64(q if (a >= 0) == (b > 0) else -q)


def _elementwise_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    if ab and ab[0] == ab[1] and is_numeric(ab[0]):
        return ab[0]
    if ab and FLOAT in ab and _float_tensor(ab[0]) != _float_tensor(ab[1]):
        return ab[0] if ab[1] == FLOAT else ab[1]  # tensor and scalar: the Knossos prelude's (sub v maxv)
    return None


def _float_tensor(t: Type) -> bool:
    return isinstance(t, TTensor) and t.elem == FLOAT


def componentwise(rule: Callable) -> Callable:
    """A binary fwd/rev rule extended to tuples component by component, with
    unit tangents for Integer parts (elementwise ``mul`` on (Float, Integer) tuples)."""
    def fwd(a, d, t, y):
        if isinstance(t[0], TTuple) and t[0] == t[1]:
            n = len(t[0].elems)
            return Tuple(tuple(fwd((get(k, n, a[0]), get(k, n, a[1])), (get(k, n, d[0]), get(k, n, d[1])),
                                   (e, e), get(k, n, y)) for k, e in enumerate(t[0].elems, 1)))
        return UNIT if t[0] == t[1] and is_constant_tangent(t[0]) else rule(a, d, t, y)
    return fwd


def componentwise_rev(rule: Callable) -> Callable:
    def rev(a, r, t, y):
        if isinstance(t[0], TTuple) and t[0] == t[1]:
            n = len(t[0].elems)
            parts = [rev((get(k, n, a[0]), get(k, n, a[1])), get(k, n, r), (e, e), get(k, n, y))
                     for k, e in enumerate(t[0].elems, 1)]
            return Tuple(tuple(p[0] for p in parts)), Tuple(tuple(p[1] for p in parts))
        return (UNIT, UNIT) if t[0] == t[1] and is_constant_tangent(t[0]) else rule(a, r, t, y)
    return rev


def _binary(name: str, op: Op2, array: Op2, doc: str, on_int: Op2 | None = None, **facts: Any) -> None:
    def scalar(t: Type) -> Op2:
        return (on_int or op) if t == INTEGER else op

    def impl(t: Type):
        a, b = args_of(t, 2)
        if a != b:
            return spread(lambda x, y: array(dense(x), dense(y)))
        return spread(lift2(name, a, scalar, array))

    primitive(name, _elementwise_type, impl,
              doc + " A Tensor N Float and a Float: the Float is applied to every element.", foldable=True,
              elementwise=name, **facts)


def _infix(op: str) -> Callable:
    """Numba code for a binary operator: on scalars, or two tensors of one shape, or
    a tensor and a Float (Note [Compiled primitives] in labrys.backends.numba_source)."""
    def lower(xs: list[str], types: list[Type], result: Type) -> str:
        a, b = xs
        if all(isinstance(t, TTensor) for t in types):
            return f"{a} {op} _shaped({b}, {a})"
        return f"{a} {op} {b}"
    return lower


def _lower_mul(xs: list[str], types: list[Type], result: Type) -> str:
    """``*``, or a matrix (Tensor 2 Float / Vec (Vec Float), a 2-D array) times a vector: the
    compiled backend's ``_matvec`` loop (labrys.backends.numba_runtime)."""
    if types[0] != types[1] and all(isinstance(t, TTensor) for t in types) and result == TTensor(1, FLOAT):
        return f"_matvec({xs[0]}, {xs[1]})"
    return _infix("*")(xs, types, result)


def _lower_div(xs: list[str], types: list[Type], result: Type) -> str:
    return f"_idiv({xs[0]}, {xs[1]})" if types == [INTEGER, INTEGER] else _infix("/")(xs, types, result)


def unbroadcast(r: Expr, t: Type, result: tuple[Type, ...]) -> Expr:
    """The cotangent of an argument of type ``t`` from the result's ``r``: summed
    where a Float was applied to every element of a tensor."""
    return C("sum", r) if t == FLOAT and result[0] != result[1] else r


_binary("add", operator.add, np.add, "Sum; elementwise on tensors and tuples.",
        lambda a, b: wrap64(a + b), numba=_infix("+"),
        jacobian=lambda a: C("lmHCat", C("lmOne", a[0]), C("lmOne", a[1])),
        fwd=lambda a, d, t, y: C("add", *d),
        rev=lambda a, r, t, y: (unbroadcast(r, t[0], t), unbroadcast(r, t[1], t)))
_binary("sub", operator.sub, np.subtract, "Difference; elementwise on tensors and tuples.",
        lambda a, b: wrap64(a - b), numba=_infix("-"),
        jacobian=lambda a: C("lmHCat", C("lmOne", a[0]), C("lmScale", a[1], const(-1.0))),
        fwd=lambda a, d, t, y: C("sub", *d),
        rev=lambda a, r, t, y: (unbroadcast(r, t[0], t), unbroadcast(C("neg", r), t[1], t)))


def _div_fwd(a, d, t, res):
    (x, y), (dx, dy) = a, d  # d(x/y) = dx/y - x*dy/y^2
    return C("sub", C("div", dx, y), C("mul", C("div", dy, C("mul", y, y)), x))


def _div_rev(a, r, t, res):
    x, y = a
    dx, dy = C("div", r, y), C("neg", C("div", C("mul", x, r), C("mul", y, y)))
    return unbroadcast(dx, t[0], t), unbroadcast(dy, t[1], t)


_binary("div", _fdiv, np.divide, "Quotient (Integer: truncating toward zero); elementwise.", _idiv,
        numba=_lower_div, fwd=componentwise(_div_fwd), rev=componentwise_rev(_div_rev),
        jacobian=lambda a: C("lmHCat", C("lmScale", a[0], C("div", const(1.0), a[1])),
                             C("lmScale", a[1], C("neg", C("div", a[0], C("mul", a[1], a[1]))))))


def _mul_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    if ab is None:
        return None
    a, b = ab
    if a == b and is_numeric(a):
        return a
    if (a, b) == (FLOAT, INTEGER):
        return FLOAT  # the Knossos prelude's (mul x n)
    if a == FLOAT and is_float_struct(b):
        return b
    if b == FLOAT and is_float_struct(a):
        return a
    if b == TTensor(1, FLOAT) and a in (TTensor(2, FLOAT), TTensor(1, TTensor(1, FLOAT))):
        return b
    return None


def _scale(t: Type) -> Callable[[float, Any], Any]:
    """``k * v`` for a Float ``k`` and ``v : t``."""
    if t == FLOAT:
        return operator.mul
    if isinstance(t, TTensor) and t.elem == FLOAT:
        return lambda k, v: k * dense(v)
    if isinstance(t, TTensor):
        inner = _scale(t.elem)
        return lambda k, v: make_vec(t.elem, [inner(k, x) for x in dense(v).flat], v.shape)
    fs = [_scale(e) for e in t.elems]
    return lambda k, v: tuple(f(k, x) for f, x in zip(fs, v))


def _matvec(m: Any, v: np.ndarray) -> np.ndarray:
    rows = m if m.dtype == object else None
    if rows is not None:
        m = np.array([dense(r) for r in rows]) if len(rows) else np.zeros((0, v.shape[0]))
    if m.ndim != 2 or m.shape[1] != v.shape[0]:
        raise PrimError(f"mul: matrix of size {_shape(m)} times a vector of size {v.shape[0]}")
    return m @ v


def _mul_impl(t: Type) -> Callable[[Any], Any]:
    a, b = t.elems
    if a == b:
        scalar = lambda t: (lambda x, y: wrap64(x * y)) if t == INTEGER else operator.mul  # noqa: E731
        return spread(lift2("mul", a, scalar, np.multiply))
    if b == INTEGER:
        return spread(lambda x, n: x * float(n))
    if a == FLOAT:
        return spread(_scale(b))
    if b == FLOAT:
        scale = _scale(a)
        return spread(lambda x, y: scale(y, x))
    return spread(lambda m, v: _matvec(m, dense(v)))


def _mul_cost(result: Any, arg: Any) -> int:
    m = arg[0]
    if isinstance(m, np.ndarray) and isinstance(arg[1], np.ndarray) and m.shape != arg[1].shape:
        return m.size if m.dtype != object else sum(x.size for x in m)
    return numel(result)


def _mul_fwd(a, d, t, res):
    (x, y), (dx, dy) = a, d
    if t[1] == INTEGER:
        return C("mul", dx, y)
    return C("add", C("mul", dx, y), C("mul", x, dy))


def _mul_rev(a, r, t, res):
    (x, y), (tx, ty) = a, t
    if ty == INTEGER:
        return C("mul", r, y), UNIT
    if tx == ty or tx == FLOAT and ty == FLOAT:
        return C("mul", r, y), C("mul", x, r)
    if tx == FLOAT:  # k * v
        return C("ts_dot", r, y), C("mul", x, r)
    if ty == FLOAT:  # v * k
        return C("mul", r, y), C("ts_dot", x, r)
    from .vectors import outer_like  # (vectors imports this module)
    return outer_like(tx, r, y), C("matvec_T", x, r)  # matrix * vector


primitive("mul", _mul_type, _mul_impl,
          "Product; elementwise on tensors/tuples; Float times a tensor scales it; "
          "a matrix (Tensor 2 Float or Vec (Vec Float)) times a Vec Float is matrix-vector product.",
          cost=_mul_cost, foldable=True, elementwise="mul", numba=_lower_mul,
          fwd=componentwise(_mul_fwd), rev=componentwise_rev(_mul_rev),
          jacobian=lambda a: C("lmHCat", C("lmScale", a[0], a[1]), C("lmScale", a[1], a[0])))

primitive("neg", lambda t: t if is_numeric(t) else None,
          lambda t: lift1(t, lambda x: wrap64(-x) if isinstance(x, int) else -x, np.negative),
          "Negation; elementwise.", foldable=True, elementwise="neg", numba=lambda xs, types, res: f"-{xs[0]}",
          fwd=lambda a, d, t, y: C("neg", d[0]), rev=lambda a, r, t, y: (C("neg", r),),
          jacobian=lambda a: C("lmScale", a[0], const(-1.0)))


# --- comparison and logic ---------------------------------------------------

def _compare(name: str, op: Op2, types: tuple[Type, ...], symbol: str) -> None:
    def typeof(t: Type) -> Type | None:
        ab = args_of(t, 2)
        return BOOL if ab and ab[0] == ab[1] and ab[0] in types else None

    primitive(name, typeof, lambda t: spread(op), f"Comparison ({name}) of two {'/'.join(map(str, types))}s.",
              cost=lambda r, a: 1, nondiff=True, foldable=True, numba=_scalar_infix(symbol))


def _scalar_infix(symbol: str) -> Callable:
    return lambda xs, types, res: None if any(isinstance(t, TTensor) for t in types) else \
        f"{xs[0]} {symbol} {xs[1]}"


def is_data(t: Type) -> bool:
    """Integer/Float/Bool/String, and tuples and tensors of them: no functions, sums
    or linear maps (values that can be compared, printed and shaped)."""
    match t:
        case TTensor(_, elem):
            return is_data(elem)
        case TTuple(elems):
            return all(map(is_data, elems))
    return isinstance(t, TBase)


def values_equal(a: Any, b: Any) -> bool:
    """Structural equality of data values (tuples, tensors, sums)."""
    a, b = dense(a), dense(b)
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and all(values_equal(x, y) for x, y in zip(a.flat, b.flat))
    if isinstance(a, tuple):
        return all(values_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _equality(name: str, negate: bool) -> None:
    def typeof(t: Type) -> Type | None:
        ab = args_of(t, 2)
        return BOOL if ab and ab[0] == ab[1] and is_data(ab[0]) else None

    def impl(t: Type):
        simple = isinstance(t.elems[0], TBase)
        eq = operator.eq if simple else values_equal
        return spread((lambda a, b: not eq(a, b)) if negate else eq)

    primitive(name, typeof, impl, f"{'Inequality' if negate else 'Equality'} of two values of the same type.",
              cost=lambda r, a: numel(a), nondiff=True, foldable=True,
              numba=_scalar_infix("!=" if negate else "=="))


_equality("eq", False)
_equality("ne", True)
for _name, _op, _symbol in (("lt", operator.lt, "<"), ("gt", operator.gt, ">"), ("lte", operator.le, "<="),
                            ("gte", operator.ge, ">=")):
    _compare(_name, _op, (FLOAT, INTEGER), _symbol)


def _logic2(t: Type) -> Type | None:
    return BOOL if args_of(t, 2) == (BOOL, BOOL) else None


primitive("and", _logic2, lambda t: spread(lambda a, b: a and b), "Logical and (both sides evaluated).",
          nondiff=True, foldable=True, numba=lambda xs, types, res: f"{xs[0]} and {xs[1]}")
primitive("or", _logic2, lambda t: spread(lambda a, b: a or b), "Logical or (both sides evaluated).",
          nondiff=True, foldable=True, numba=lambda xs, types, res: f"{xs[0]} or {xs[1]}")
primitive("not", lambda t: BOOL if t == BOOL else None, lambda t: operator.not_, "Logical not.", nondiff=True,
          foldable=True, numba=lambda xs, types, res: f"not {xs[0]}")
