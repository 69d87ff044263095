"""Tangent types and the calling conventions of derived functions
(LANGUAGE.md §2–3)."""
from __future__ import annotations

from ..ir.types import DELTA, FLOAT, TLM, TLam, TSum, TTensor, TTuple, Type, UNIT


def tangent_type(t: Type) -> Type:
    """dT: Float ↦ Float; Integer, Bool, String ↦ (Tuple); structure-wise otherwise.

    Functions and sums have algorithm-specific tangents (see each algorithm);
    here a sum's tangent is the sum of the tangents and a function's is a
    function between tangents, which is what the dual-number modes use.
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


# Calling conventions: derivation name -> (argument type, result type) of the
# derived function, for a function S -> T.  Algorithms add their names here
# when they register (see labrys.ad); every one is fwd-like or rev-like.
def _fwd(s: Type, t: Type) -> tuple[Type, Type]:
    return TTuple((s, tangent_type(s))), tangent_type(t)


def _rev(s: Type, t: Type) -> tuple[Type, Type]:
    return TTuple((s, tangent_type(t))), tangent_type(s)


def _jacobian(s: Type, t: Type) -> tuple[Type, Type]:
    return s, TLM(tangent_type(s), tangent_type(t))


def shape_type(t: Type) -> Type:
    """The type of ``(shape x)`` for ``x : t``: sizes without values."""
    match t:
        case TTuple(elems):
            return TTuple(tuple(shape_type(e) for e in elems))
        case TTensor(rank, elem):
            return TTensor(rank, shape_type(elem))
    return UNIT


def _tupled(conv):
    def signature(s: Type, t: Type) -> tuple[Type, Type]:
        arg, res = conv(s, t)
        return arg, TTuple((t, res))
    return signature


def dual_type(t: Type, image: Type) -> Type:
    """The dual-number type map of seed 004 (Fig. 3 / Fig. 9): every Float becomes
    ``(Tuple Float image)``, leaves stay, and ×, +, →, Vec are mapped homomorphically."""
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


def _dual(image: Type):
    return lambda s, t: (dual_type(s, image), dual_type(t, image))


# The image of a real's derivative part in each dual-number translation (seed 004):
# dual (Fw, §4) a tangent; delta1 (D1, §5) the input's cotangent as a flat vector,
# Note [D1 cotangents] in labrys.ad.deltarev1; delta2 / delta (D2 §6, D §7) a Delta.
DUAL_IMAGES = {"dual": FLOAT, "delta1": TTensor(1, FLOAT), "delta2": DELTA, "delta": DELTA}

CONVENTIONS = {
    "fwd": _fwd, "rev": _rev, "D": _jacobian, "sufrev": _rev,
    "fwdt": _tupled(_fwd), "Dt": _tupled(_jacobian),
    "CL": lambda s, t: (s, t), "shape": lambda s, t: (s, shape_type(t)),
    "dualfwd": _fwd, "deltarev1": _rev, "deltarev2": _rev, "deltarev": _rev,
    **{name: _dual(image) for name, image in DUAL_IMAGES.items()},
}
# Derivations whose signature depends on the generated code (the BOG type of
# split reverse mode): a gdef of them is accepted; calls need the algorithm.
PENDING = {"suffwdpass", "sufrevpass"}
FWD_LIKE, REV_LIKE = _fwd, _rev


def derived_signature(derivation: str, s: Type, t: Type) -> tuple[Type, Type] | None:
    conv = CONVENTIONS.get(derivation)
    return conv(s, t) if conv else None
