"""Tangent types, the language's own type map (docs/reference.md §2), and the IR
for a zero tangent.

    dT(Float) = Float;  dT(Integer) = dT(Bool) = dT(String) = (Tuple);
    dT(Tuple A B ...) = Tuple dT(A) dT(B) ...;  dT(Tensor N T) = Tensor N dT(T)

The language leaves the tangents of functions and sums to each algorithm;
the type maps that differ between algorithms (dual numbers, CHAD's four) are
owned by the algorithm's module and reach the checker through the registry of
derivations (:mod:`labrys.ad.registry`).
"""
from __future__ import annotations

from ..ir.build import C
from ..ir.nodes import Expr, Tuple
from ..ir.types import FLOAT, TLM, UNIT, TLam, TSum, TTensor, TTuple, Type


def tangent_type(t: Type) -> Type:
    """dT: Float ↦ Float; Integer, Bool, String ↦ (Tuple); structure-wise otherwise.

    A sum's tangent is the sum of the tangents and a function's a function
    between tangents: what the dual-number modes use (Krawiec et al. §11).
    """
    match t:
        case TTuple(elems):
            return TTuple(tuple(tangent_type(e) for e in elems))
        case TTensor(rank, elem):
            return TTensor(rank, tangent_type(elem))
        case TSum(a, b):
            return TSum(tangent_type(a), tangent_type(b))
        case TLam(a, b):
            return TLam(tangent_type(a), tangent_type(b))
        case TLM():
            raise ValueError(f"a linear map {t} has no tangent type")
    return FLOAT if t == FLOAT else UNIT


def is_constant_tangent(t: Type) -> bool:
    """True when dT(t) holds no Float: every derivative into or out of t is zero."""
    dt = tangent_type(t)
    return isinstance(dt, TTuple) and all(is_constant_tangent(e) for e in dt.elems)


def zero_tangent(x: Expr, t: Type) -> Expr:
    """The zero tangent of ``x : t``: a constant where ``dT(t)`` holds no Float."""
    return _unit_value(tangent_type(t)) if is_constant_tangent(t) else C("ts_zero", x)


def _unit_value(t: Type) -> Expr:
    return Tuple(tuple(_unit_value(e) for e in t.elems))


def shape_type(t: Type) -> Type:
    """The type of ``(shape x)`` for ``x : t``: sizes without values (a ValueError for
    functions, sums and linear maps, which have none)."""
    match t:
        case TTuple(elems):
            return TTuple(tuple(shape_type(e) for e in elems))
        case TTensor(rank, elem):
            return TTensor(rank, shape_type(elem))
        case TLam() | TSum() | TLM():
            raise ValueError(f"a value of type {t} has no shape")
    return UNIT
