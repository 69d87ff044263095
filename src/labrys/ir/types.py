"""The types of the `.ks` language (docs/reference.md §2), as immutable values.

``Vec T`` is ``Tensor 1 T``; both print as written in Knossos programs.
"""
from __future__ import annotations

from dataclasses import dataclass


class Type:
    __slots__ = ()

    def __str__(self) -> str:
        return show_type(self)


@dataclass(frozen=True, slots=True)
class TBase(Type):
    name: str  # "Float" | "Integer" | "Bool" | "String"

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True)
class TTuple(Type):
    elems: tuple[Type, ...]

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True)
class TTensor(Type):
    rank: int
    elem: Type

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True)
class TLam(Type):
    arg: Type
    res: Type

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True)
class TLM(Type):
    """A linear map ``src ⊸ dst`` (Ellis et al. §2)."""

    src: Type
    dst: Type

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True)
class TSum(Type):
    left: Type
    right: Type

    __str__ = Type.__str__


FLOAT = TBase("Float")
INTEGER = TBase("Integer")
BOOL = TBase("Bool")
STRING = TBase("String")
DELTA = TBase("Delta")  # the derivative part of a real in deltarev2/deltarev (Krawiec et al. §6–7)
# the run-time data of Smeding & Vákár's dual-numbers reverse AD (labrys.ad.dualrev*)
CONTRIB = TBase("Contrib")  # §9.2: a defunctionalised backpropagator
STAGED = TBase("Staged")    # §6–7: a cotangent with a map of staged backpropagator calls
STATE = TBase("State")      # §8: the two mutable arrays
BOG = TBase("BOG")  # a function's BOG in split reverse mode, opaque (Ellis et al. §11; labrys.ad.bog)
UNIT = TTuple(())


class TBogOf(TBase):
    """``BOG`` with what it is behind it (Note [Concrete BOGs] in labrys.ad.bog_types):
    ``of`` is the BOG's structure type, or ``("fn", f, S)`` for the BOG of
    ``[suffwdpass f]`` at argument type S.  It *is* ``BOG`` — equal, same hash,
    printed ``BOG`` — so the checker and every pass treat it as the opaque type;
    only the compiled backend looks behind it."""

    __slots__ = ("of",)

    def __init__(self, of) -> None:
        object.__setattr__(self, "name", "BOG")
        object.__setattr__(self, "of", of)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TBase) and other.name == "BOG"

    def __hash__(self) -> int:
        return hash(BOG)

    def __reduce__(self):
        return (TBogOf, (self.of,))

    __str__ = Type.__str__

BASE_TYPES = {t.name: t for t in (FLOAT, INTEGER, BOOL, STRING, DELTA, CONTRIB, STAGED, STATE, BOG)}


def Vec(elem: Type) -> TTensor:
    return TTensor(1, elem)


def Tuple(*elems: Type) -> TTuple:
    return TTuple(tuple(elems))


def show_type(t: Type) -> str:
    """Print a type in `.ks` syntax (parenthesised unless atomic)."""
    match t:
        case TBase(name):
            return name
        case TTuple(elems):
            return "(Tuple" + "".join(" " + show_type(e) for e in elems) + ")"
        case TTensor(1, elem):
            return f"(Vec {show_type(elem)})"
        case TTensor(rank, elem):
            return f"(Tensor {rank} {show_type(elem)})"
        case TLam(arg, res):
            return f"(Lam {show_type(arg)} {show_type(res)})"
        case TLM(src, dst):
            return f"(LM {show_type(src)} {show_type(dst)})"
        case TSum(left, right):
            return f"(Sum {show_type(left)} {show_type(right)})"
    raise TypeError(f"not a type: {t!r}")


def has_function(t: Type) -> bool:
    """t holds a function somewhere (it is not first-order)."""
    match t:
        case TTuple(elems):
            return any(map(has_function, elems))
        case TTensor(_, elem):
            return has_function(elem)
        case TSum(a, b):
            return has_function(a) or has_function(b)
    return isinstance(t, TLam)


def is_scalar(t: Type) -> bool:
    return t == FLOAT or t == INTEGER


def tensor_elem_float(t: Type) -> bool:
    """``Tensor N Float`` — the types stored as float64 ndarrays."""
    return isinstance(t, TTensor) and t.elem == FLOAT
