"""The dual-number type map of Krawiec et al. (Figs 3, 5, 7, 9), and type-directed
IR for dual-number values (§11, Fig. 15): the primal of a dual value, its
derivative part, and a constant lifted to a dual value.

Each walks one value by its *source-language* type ``t`` (a dual type alone is
ambiguous: ``(Tuple Float Float)`` may be a Float's dual or a pair of Floats)
and rebuilds it, binding what it takes apart so nothing is evaluated twice.
"""
from __future__ import annotations

from typing import Callable

from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.build import C, V, get, lam, let, tup
from ..types.tangent import zero_tangent
from ..ir.traverse import FreshNames
from ..ir.types import FLOAT, TLam, TSum, TTensor, TTuple, Type, has_function
from ..ir.types import TLM
from ..types.tangent import is_constant_tangent, tangent_type

TypeMap = Callable[[Type], Type]


def dual_type(t: Type, image: Type) -> Type:
    """D[t]: every Float becomes ``(Tuple Float image)``, leaves stay, and ×, +, →,
    Vec are mapped homomorphically; ``image`` is what one algorithm pairs a real with."""
    match t:
        case TTuple(elems):
            return TTuple(tuple(dual_type(e, image) for e in elems))
        case TTensor(rank, elem):
            return TTensor(rank, dual_type(elem, image))
        case TSum(a, b):
            return TSum(dual_type(a, image), dual_type(b, image))
        case TLam(a, b):
            return TLam(dual_type(a, image), dual_type(b, image))
        case TLM():
            raise ValueError(f"a linear map {t} has no dual-number type")
    return TTuple((FLOAT, image)) if t == FLOAT else t



def primal(e: ir.Expr, t: Type, image: Type, fresh: FreshNames, span: Span | None) -> ir.Expr:
    """``primal_t``: D[t] → t."""
    return _walk(e, t, lambda x: get(1, 2, x), lambda x, _: x, lambda s: dual_type(s, image),
                 lambda s: s, fresh, span)


def derivative_part(e: ir.Expr, t: Type, image: Type, fresh: FreshNames, span: Span | None) -> ir.Expr:
    """``delta_t`` of Fig. 15: D[t] → dt (leaves give the unit tangent, pitfall P9)."""
    return _walk(e, t, lambda x: get(2, 2, x), zero_tangent, lambda s: dual_type(s, image),
                 tangent_type, fresh, span)


def constant(e: ir.Expr, t: Type, zero: ir.Expr, image: Type, fresh: FreshNames, span: Span | None) -> ir.Expr:
    """t → D[t]: every real paired with the zero derivative part (a literal, Fig. 3)."""
    return _walk(e, t, lambda x: tup(x, zero), lambda x, _: x, lambda s: s,
                 lambda s: dual_type(s, image), fresh, span)


def _walk(e: ir.Expr, t: Type, at_real: Callable[[ir.Expr], ir.Expr],
          at_leaf: Callable[[ir.Expr, Type], ir.Expr], source: TypeMap, target: TypeMap,
          fresh: FreshNames, span: Span | None) -> ir.Expr:
    def walk(e: ir.Expr, t: Type) -> ir.Expr:
        if is_constant_tangent(t):
            return at_leaf(e, t)
        if t == FLOAT:
            return at_real(e)
        match t:
            case TTuple(elems):
                v = fresh("p")
                return let(v, e, tup(*(walk(get(i + 1, len(elems), V(v)), s) for i, s in enumerate(elems))))
            case TTensor(_, elem):
                z = fresh("z")
                return C("map", lam(z, source(elem), walk(V(z), elem)), e)
            case TSum(a, b):
                x, y = fresh("l"), fresh("r")
                out = target(t)
                return ir.Case(e, x, ir.Inj(True, out, walk(V(x), a)), y, ir.Inj(False, out, walk(V(y), b)))
            case TLam():
                raise LabrysError(f"a function-typed value of type {t} where a first-order one is needed "
                                  "(seed 004 §11, footnote 13)", span)
        raise LabrysError(f"internal: no dual-number walk for {t}", span)
    return walk(e, t)


def require_first_order(d: ir.Def, algorithm: str) -> None:
    """The wrappers take and give first-order values (§11; footnote 13)."""
    for what, t in (("argument", d.arg_type), ("result", d.ret)):
        if has_function(t):
            raise LabrysError(f"{algorithm} of a function with a function-typed {what} ({t}) is out of scope "
                              "(seed 004 §11, footnote 13); differentiate a first-order caller of it", d.span)
