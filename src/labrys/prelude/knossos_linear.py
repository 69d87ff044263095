"""The primitive of the Knossos compiler's linear-types experiment: ``indexL``.

(indexL i v) is (tuple (index i v) v): the element together with the vector it
came from, so that a program using v linearly can read an element and keep v
(Note [The linear-types experiment] in syntax/knossos_forms.py; the element
comes first, as forRange.ks, the one test program calling the built-in, reads
it).  Its derivative rules are those of the pair: the tangent is
(tuple (index i dv) dv); the cotangent of v is the second component's plus the
first component put at index i.
"""
from __future__ import annotations

from typing import Callable

from ..ir import nodes as ir
from ..ir.build import C
from ..ir.types import TTensor, TTuple, Type
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import zero_tangent
from .vectors import _index_impl, _index_type, _lower_index


def _index_l_type(t: Type) -> Type | None:
    elem = _index_type(t)
    if elem is None:
        return None
    ab = args_of(t, 2)
    assert ab is not None and isinstance(ab[1], TTensor)
    return TTuple((elem, ab[1]))


def _index_l_impl(t: Type) -> Callable:
    index = _index_impl(t)

    def index_l(i, v):
        return (index((i, v)), v)
    return spread(index_l)


def _lower_index_l(xs: list[str], types: list[Type], result: Type) -> str:
    return f"({_lower_index(xs, types, result)}, {xs[1]})"


def _fwd(a, d, t, y):
    return ir.Tuple((C("index", a[0], d[1]), d[1]))


def _rev(a, r, t, y):
    dx, dv = ir.Get(1, 2, r), ir.Get(2, 2, r)
    return (zero_tangent(a[0], t[0]), C("ts_add", dv, C("ts_delta", a[1], a[0], dx)))


primitive("indexL", _index_l_type, _index_l_impl,
          "(indexL i v): (tuple (index i v) v), the element with the vector it came from "
          "(the Knossos compiler's linear-types experiment).",
          cost=lambda r, a: 1, structural=True, numba=_lower_index_l, fwd=_fwd, rev=_rev)
