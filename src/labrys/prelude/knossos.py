"""Primitives that programs written for the Knossos compiler use beyond
docs/reference.md §5: ``pr``, ``shape``, ``Vec_init``, ``ifold``, ``$check``,
``$BENCH``, ``checkpoint``."""
from __future__ import annotations

import sys
import time
from typing import Any, Callable

import numpy as np

from ..ir.build import C
from ..ir.nodes import const
from ..ir.types import FLOAT, INTEGER, UNIT, TBase, TLam, TTensor, TTuple, Type
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import shape_type, tangent_type, zero_tangent
from ..values import dense, format_value, make_vec
from .arith import _matvec, is_data
from .tangents import _dot, ts_add_fn
from .vectors import outer_like


def _pr_impl(t: Type):
    several = isinstance(t, TTuple)

    def pr(arg):
        parts = arg if several else (arg,)
        sys.stdout.write("----\n".join(format_value(x) + "\n" for x in parts))
        return 0
    return pr


primitive("pr", lambda t: INTEGER, _pr_impl,
          "Older Knossos print: each argument on its own line, '----' between them.", cost=lambda r, a: 0,
          nondiff=True, impure=True)


def shape_of(t: Type) -> Callable[[Any], Any]:
    match t:
        case TTuple(elems):
            fs = [shape_of(e) for e in elems]
            return lambda v: tuple(f(x) for f, x in zip(fs, v))
        case TTensor(_, elem):
            inner = shape_of(elem)
            return lambda v: make_vec(shape_type(elem), [inner(x) for x in dense(v).flat], dense(v).shape)
    return lambda v: ()


primitive("shape", lambda t: shape_type(t) if is_data(t) else None, shape_of,
          "(shape x): the sizes in x without its values (Knossos).", nondiff=True)


def _vec_init_type(t: Type) -> Type | None:
    elems = t.elems if isinstance(t, TTuple) else (t,)
    return TTensor(1, elems[0]) if elems and all(e == elems[0] for e in elems) else None


def _vec_init_impl(t: Type):
    if isinstance(t, TTuple):
        return spread(lambda *xs: make_vec(t.elems[0], list(xs)))
    return lambda x: make_vec(t, [x])


primitive("Vec_init", _vec_init_type, _vec_init_impl, "(Vec_init a b c): the vector [a, b, c].", structural=True,
          fwd=lambda a, d, t, y: C("Vec_init", *d),
          rev=lambda a, r, t, y: tuple(C("index", const(k), r) for k in range(len(a))))


def _ifold_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    if abc is None:
        return None
    n, f, acc = abc
    ok = n == INTEGER and isinstance(f, TLam) and f.arg == TTuple((acc, INTEGER)) and f.res == acc
    return acc if ok else None


def _ifold(n, f, acc):
    for i in range(n):
        acc = f((acc, i))
    return acc


primitive("ifold", _ifold_type, lambda t: spread(_ifold),
          "(ifold n (lam (acc_i : Tuple A Integer) e) acc0): fold over 0 .. n-1.", cost=lambda r, a: 0,
          structural=True)


def _check_types(t: Type) -> tuple[Type, Type] | None:
    """(S, T) of ``($check f rev_f x [x'] dx df)``."""
    if not isinstance(t, TTuple) or len(t.elems) not in (5, 6):
        return None
    f, rev_f, x, *rest = t.elems
    if not isinstance(f, TLam) or not is_data(f.arg) or not is_data(f.res):
        return None
    s, r = f.arg, f.res
    ds, dr = tangent_type(s), tangent_type(r)
    want = [s] * (len(rest) - 2) + [ds, dr]
    points = [x, *rest[:-1]]
    # Note [One-tuples in $check]: (tuple 1.1) stands for 1.1 where f takes a Float
    points = [p.elems[0] if _one_tuple_of(p, w) else p for p, w in zip(points, [s, *want[:-1]])]
    if rev_f != TLam(TTuple((s, dr)), ds) or [*points, rest[-1]] != [s, *want]:
        return None
    return s, r


def _one_tuple_of(t: Type, want: Type) -> bool:
    return isinstance(t, TTuple) and len(t.elems) == 1 and t.elems[0] == want and t != want


# Note [One-tuples in $check]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Older Knossos programs check a one-argument function with the point and
# the step written as one-tuples, ($check f rev$f (tuple 1.1) (tuple 1e-5) 0.3):
# the Knossos compiler makes a one-element tuple its element.  $check accepts
# a one-tuple wherever f's argument (or its tangent) is expected and unwraps it.


def _tangent_sub(t: Type) -> Callable[[Any, Any], Any]:
    if t == FLOAT:
        return lambda a, b: a - b
    if isinstance(t, TBase):
        return lambda a, b: ()
    if isinstance(t, TTuple):
        fs = [_tangent_sub(e) for e in t.elems]
        return lambda a, b: tuple(f(x, y) for f, x, y in zip(fs, a, b))
    if t.elem == FLOAT:
        return lambda a, b: dense(a) - dense(b)
    inner = _tangent_sub(t.elem)
    return lambda a, b: make_vec(tangent_type(t.elem), [inner(x, y) for x, y in zip(dense(a).flat, dense(b).flat)],
                                 dense(a).shape)


def _check_impl(t: Type):
    s, r = _check_types(t)
    plus, minus = ts_add_fn(s), _tangent_sub(r)
    dot_s, dot_r = _dot(tangent_type(s)), _dot(tangent_type(r))

    wrapped = [_one_tuple_of(p, w) for p, w in zip(t.elems[2:-1], [s] * (len(t.elems) - 4) + [tangent_type(s)])]

    def check(args):
        f, rev_f, *points, df = args
        x, *rest = [p[0] if w else p for p, w in zip(points, wrapped)]
        rest.append(df)
        x2, dx, df = (x, *rest) if len(rest) == 2 else rest
        d1 = dot_r(minus(f(plus(x, dx)), f(x)), df)
        d2 = dot_s(rev_f((x2, df)), dx)
        total = abs(d1) + abs(d2)
        return abs(d1 - d2) / total if total else 0.0
    return check


primitive("$check", lambda t: FLOAT if _check_types(t) else None, _check_impl,
          "($check f rev_f x x' dx df): relative gap |d1-d2|/(|d1|+|d2|) between the finite change "
          "<f(x+dx)-f(x), df> and <rev_f(x', df), dx> (Knossos's derivative check).", cost=lambda r, a: 0,
          nondiff=True, impure=True)


def _bench(thunk) -> float:
    """Median wall time of a few calls, in microseconds (Knossos's $BENCH)."""
    times = []
    for _ in range(5):
        start = time.perf_counter()
        thunk(())
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e6)


primitive("$BENCH", lambda t: FLOAT if t == TLam(UNIT, FLOAT) else None, lambda t: _bench,
          "($BENCH (lam (_ : (Tuple)) e)): median run time of e in microseconds.", cost=lambda r, a: 0,
          nondiff=True, impure=True)
primitive("checkpoint", lambda t: t, lambda t: lambda x: x, "(checkpoint e) is e: a hint for tools.",
          cost=lambda r, a: 0, structural=True, numba=lambda xs, types, res: xs[0],
          fwd=lambda a, d, t, y: d[0], rev=lambda a, r, t, y: (r,))


def _dot_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    ok = ab and ab[0] == ab[1] and isinstance(ab[0], TTensor) and tangent_type(ab[0]) == ab[0]
    return FLOAT if ok else None


primitive("dot", _dot_type, lambda t: spread(_dot(t.elems[0])),
          "(dot u v): inner product of two Float tensors (the Knossos runtime's dot).",
          cost=lambda r, a: sum(x.size if isinstance(x, np.ndarray) and x.dtype != object else 1 for x in a),
          fwd=lambda a, d, t, y: C("add", C("dot", d[0], a[1]), C("dot", a[0], d[1])),
          rev=lambda a, r, t, y: (C("ts_scale", r, a[1]), C("ts_scale", r, a[0])))


def _set_at_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    if abc is None or not isinstance(abc[1], TTensor):
        return None
    i, v, x = abc
    return v if x == v.elem and i == (INTEGER if v.rank == 1 else TTuple((INTEGER,) * v.rank)) else None


def _set_at(i, v, x):
    out = dense(v).copy()
    out[i if isinstance(i, int) else tuple(i)] = x
    return out


primitive("setAt", _set_at_type, lambda t: spread(_set_at),
          "(setAt i v x): a copy of v with x at index i (the Knossos runtime's setAt).",
          fwd=lambda a, d, t, y: C("setAt", a[0], d[1], d[2]),
          rev=lambda a, r, t, y: (zero_tangent(a[0], t[0]), C("setAt", a[0], r, zero_tangent(a[2], t[2])),
                               C("index", a[0], r)))


# Note [The Knossos runtime's own functions]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Knossos programs declare functions of the Knossos C++ runtime with an edef
# and call them: (edef dotv Float ((Vec Float) (Vec Float))),
# (edef mul$Mat$Vec (Vec Float) ((Vec (Vec Float)) (Vec Float))).  They are
# the prelude's dot and matrix-vector mul under older names; as primitives of
# those types, the programs' edefs re-declare them (collect_functions) and the
# calls run, with the derivative rules of dot and mul.

def _dotv_type(t: Type) -> Type | None:
    return FLOAT if args_of(t, 2) == (TTensor(1, FLOAT), TTensor(1, FLOAT)) else None


primitive("dotv", _dotv_type, lambda t: spread(lambda u, v: float(np.dot(dense(u), dense(v)))),
          "(dotv u v): inner product of two vectors (the Knossos runtime's dotv, the prelude's dot).",
          fwd=lambda a, d, t, y: C("add", C("dotv", d[0], a[1]), C("dotv", a[0], d[1])),
          rev=lambda a, r, t, y: (C("ts_scale", r, a[1]), C("ts_scale", r, a[0])))

_MAT_VEC = (TTensor(1, TTensor(1, FLOAT)), TTensor(1, FLOAT))


def _mat_vec_impl(t: Type):
    return spread(lambda m, v: _matvec(m, dense(v)))


primitive("mul$Mat$Vec", lambda t: TTensor(1, FLOAT) if args_of(t, 2) == _MAT_VEC else None, _mat_vec_impl,
          "(mul$Mat$Vec M v): matrix (a vector of rows) times vector (the Knossos runtime's name for mul).",
          numba=lambda xs, types, res: f"_matvec({xs[0]}, {xs[1]})",
          fwd=lambda a, d, t, y: C("ts_add", C("mul$Mat$Vec", d[0], a[1]), C("mul$Mat$Vec", a[0], d[1])),
          rev=lambda a, r, t, y: (outer_like(t[0], r, a[1]), C("matvec_T", a[0], r)))
