"""The types of the `.ks` language (docs/reference.md §2), as immutable values.

``Vec T`` is ``Tensor 1 T``; both print as written in Knossos programs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


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
    """Print a type in `.ks` syntax (parenthesised unless atomic): pieces pushed on an
    explicit stack and joined once, so a type n deep prints in O(n) at any depth (a
    string per level, each holding its inner one, copied O(n^2) characters: seconds
    for a 10^5-deep tuple type in a note)."""
    out: list[str] = []
    stack: list = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
            continue
        if isinstance(x, TBase):
            out.append(x.name)
            continue
        if isinstance(x, TTuple):
            head, parts = "(Tuple", [p for e in x.elems for p in (" ", e)]
        elif isinstance(x, TTensor):
            head, parts = ("(Vec " if x.rank == 1 else f"(Tensor {x.rank} "), [x.elem]
        elif isinstance(x, TLam):
            head, parts = "(Lam ", [x.arg, " ", x.res]
        elif isinstance(x, TLM):
            head, parts = "(LM ", [x.src, " ", x.dst]
        elif isinstance(x, TSum):
            head, parts = "(Sum ", [x.left, " ", x.right]
        else:
            raise TypeError(f"not a type: {x!r}")
        out.append(head)
        stack.append(")")
        stack.extend(reversed(parts))
    return "".join(out)


def has_function(t: Type, memo: dict[int, tuple[Type, bool]] | None = None) -> bool:
    """t holds a function somewhere (it is not first-order)."""
    return any_part(t, _is_lam, memo)


def _is_lam(t: Type) -> bool:
    return isinstance(t, TLam)


# Note [Type facts by identity]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The checker builds a node's type from its children's, so the types of a def's nodes
# share their parts: the n nodes of (tuple x (tuple x ...)) have types n, n-1, ... deep
# but only n type objects in all.  A pass that asks "does this type hold a function /
# a BOG?" at every node, walking each type afresh, did O(n^2) work (the compiled
# backend took 160 s on a 10^4-deep tuple type).  any_part walks a type once per
# memo, keyed by the object's id (the memo keeps the type, so an id is never reused
# while it is there): one memo per def makes such questions linear in the def.
def any_part(t: Type, test: Callable[[Type], bool],
             memo: dict[int, tuple[Type, bool]] | None = None) -> bool:
    """``test`` holds for t or a type inside it (tuples, tensors, sums, functions; not
    inside linear maps), iteratively (any depth); answers kept in ``memo`` by id."""
    memo = {} if memo is None else memo
    known = memo.get(id(t))
    if known is not None:
        return known[1]
    stack = [t]
    while stack:
        x = stack[-1]
        if id(x) in memo:
            stack.pop()
            continue
        kids = _parts(x)
        todo = [k for k in kids if id(k) not in memo]
        if todo:  # its parts first; a node's parts are mostly known already (shared)
            stack.extend(todo)
            continue
        stack.pop()
        memo[id(x)] = (x, test(x) or any(memo[id(k)][1] for k in kids))
    return memo[id(t)][1]


def _parts(t: Type) -> tuple[Type, ...]:
    if isinstance(t, TTuple):
        return t.elems
    if isinstance(t, TTensor):
        return (t.elem,)
    if isinstance(t, TSum):
        return (t.left, t.right)
    if isinstance(t, TLam):
        return (t.arg, t.res)
    return ()


def is_scalar(t: Type) -> bool:
    return t == FLOAT or t == INTEGER


def tensor_elem_float(t: Type) -> bool:
    """``Tensor N Float`` — the types stored as float64 ndarrays."""
    return isinstance(t, TTensor) and t.elem == FLOAT
