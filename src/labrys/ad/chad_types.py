"""CHAD's four type maps (Vákár & Smeding, CHAD: combinatory homomorphic automatic
differentiation, §2.3, §2.5, Thms 6.1/6.2, §7.3–7.5) and their contexts.

    forward:  F1 τ (primal)   F2 τ (tangent)      reverse:  R1 τ (primal)   R2 τ (cotangent)

    source τ         F1 τ                          F2 τ            R1 τ                          R2 τ
    Float            Float                         Float           Float                         Float
    Integer, Bool    itself                        (Tuple)         itself                        (Tuple)
    Tuple A B ..     Tuple F1A F1B ..              Tuple F2A ..    Tuple R1A R1B ..              Tuple R2A ..
    Vec A            Vec F1A                       Vec F2A         Vec R1A                       Vec R2A
    Sum A B          Sum F1A F1B                   Sum F2A F2B     Sum R1A R1B                   Sum R2A R2B
    Lam A B          Lam F1A (Tuple F1B (F2A⊸F2B)) Lam F1A F2B     Lam R1A (Tuple R1B (R2B⊸R2A)) Vec (Tuple R1A R2B)

A linear function ``τ ⊸ σ`` is lowered to ``Lam τ σ`` (§9.2's reference
implementation).  The tangent of a function is a *power* (a function from the
argument's primal to the result's tangent); the cotangent of a function is a
*copower* ``!R1A ⊗ R2B``, written ``Vec (Tuple R1A R2B)``: a formal sum of
(argument, result-cotangent) pairs, one per call (Note [Copowers]).

Note [Sum cotangents]
~~~~~~~~~~~~~~~~~~~~~
The paper's language has no sums (§11.2 defers them).  We give a sum a *tagged*
(co)tangent ``Sum R2A R2B``: every cotangent of a sum value has the tag of that
value, and the zero is the symbolic zero of the run time (a
``Zero | Inl | Inr`` cotangent), so the inactive side never holds garbage.

Contexts (§7.1, App. B): the (co)tangent of a context ``x1 : τ1, …, xn : τn`` is
the unit-based snoc list ``((((), τ1), τ2) …, τn)``; extending Γ by x is always
``Tuple R2Γ R2x``, which is what the ``fst``/``snd`` of the let, λ and map rules
take apart.
"""
from __future__ import annotations

from ..ir.types import FLOAT, TLM, UNIT, TBase, TLam, TSum, TTensor, TTuple, Type


class Context:
    """The source context Γ̄ as a persistent snoc list (extending it is O(1)); each
    node also holds the (co)tangent type of its prefix under one type map."""

    __slots__ = ("prev", "name", "type", "lin_type", "lin")

    def __init__(self, prev: "Context | None", name: str, t: Type, lin) -> None:
        self.prev, self.name, self.type, self.lin = prev, name, t, lin
        below = UNIT if prev is None else prev.lin_type
        self.lin_type = TTuple((below, lin(t)))


def extend(gamma: "Context | None", name: str, t: Type, lin) -> Context:
    return Context(gamma, name, t, lin)


def _unknown(t: Type) -> ValueError:
    return ValueError(f"CHAD has no type map for {t}")


def f1(t: Type) -> Type:
    """F1 τ: the forward primal type."""
    match t:
        case TTuple(elems):
            return TTuple(tuple(f1(e) for e in elems))
        case TTensor(rank, elem):
            return TTensor(rank, f1(elem))
        case TSum(a, b):
            return TSum(f1(a), f1(b))
        case TLam(a, b):
            return TLam(f1(a), TTuple((f1(b), TLam(f2(a), f2(b)))))
        case TLM():
            raise _unknown(t)
    return t


def f2(t: Type) -> Type:
    """F2 τ: the tangent type (a function's is a power F1A → F2B)."""
    match t:
        case TTuple(elems):
            return TTuple(tuple(f2(e) for e in elems))
        case TTensor(rank, elem):
            return TTensor(rank, f2(elem))
        case TSum(a, b):
            return TSum(f2(a), f2(b))
        case TLam(a, b):
            return TLam(f1(a), f2(b))
        case TLM():
            raise _unknown(t)
    return FLOAT if t == FLOAT else UNIT


def r1(t: Type) -> Type:
    """R1 τ: the reverse primal type."""
    match t:
        case TTuple(elems):
            return TTuple(tuple(r1(e) for e in elems))
        case TTensor(rank, elem):
            return TTensor(rank, r1(elem))
        case TSum(a, b):
            return TSum(r1(a), r1(b))
        case TLam(a, b):
            return TLam(r1(a), TTuple((r1(b), TLam(r2(b), r2(a)))))
        case TLM():
            raise _unknown(t)
    return t


def r2(t: Type) -> Type:
    """R2 τ: the cotangent type (a function's is the copower !R1A ⊗ R2B)."""
    match t:
        case TTuple(elems):
            return TTuple(tuple(r2(e) for e in elems))
        case TTensor(rank, elem):
            return TTensor(rank, r2(elem))
        case TSum(a, b):
            return TSum(r2(a), r2(b))
        case TLam(a, b):
            return copower(r1(a), r2(b))
        case TLM():
            raise _unknown(t)
    return FLOAT if t == FLOAT else UNIT


def copower(a: Type, w: Type) -> Type:
    """!a ⊗ w, lowered to a list of pairs (§9.2; an append tree at run time)."""
    return TTensor(1, TTuple((a, w)))


def context(gamma: "Context | None") -> Type:
    """The snoc-list (co)tangent type of Γ̄ (empty: (Tuple))."""
    return UNIT if gamma is None else gamma.lin_type


def is_data_leaf(t: Type) -> bool:
    """Integer, Bool, String: (co)tangent (Tuple)."""
    return isinstance(t, TBase) and t != FLOAT


def fwd_translation_signature(s: Type, t: Type) -> tuple[Type, Type]:
    """[chadF f] : F1 S → (F1 T, F2 S ⊸ F2 T)."""
    return f1(s), TTuple((f1(t), TLam(f2(s), f2(t))))


def rev_translation_signature(s: Type, t: Type) -> tuple[Type, Type]:
    """[chadR f] : R1 S → (R1 T, R2 T ⊸ R2 S)."""
    return r1(s), TTuple((r1(t), TLam(r2(t), r2(s))))
