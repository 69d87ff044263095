"""Sum types for the ``compiled`` backend: a tagged representation.

    Γ ⊢ e : Sum A B  ↦  (tag : boolean, a : ⟦A⟧, b : ⟦B⟧)

Note [Compiled sums]
~~~~~~~~~~~~~~~~~~~~
Numba has no union types, so a value of ``Sum A B`` is a tuple of a tag
(true for ``inl``) and one slot per side.  The slot of the side that is not
there holds a placeholder of its type (:func:`placeholder`: 0.0, 0, false,
"", empty arrays, tuples of placeholders), never read: ``case`` reads the
slot its tag names.  Both sides always have a slot, so every value of one
sum type has one Numba type, whichever side it is, and ``if``/``case``
branches unify.  At the boundary an ``Inj`` becomes such a tuple and back
(:func:`sum_to_machine`, :func:`sum_from_machine`).  A sum of function values
(``Sum (Lam …) …``) has no representation, as function values have none.

    (inl (Sum A B) e)   ↦  (True, e, placeholder(B))
    (inr (Sum A B) e)   ↦  (False, placeholder(A), e)
    (case s (l x) (r y)) ↦  if s[0]: x = s[1]; … else: y = s[2]; …
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir import nodes as ir
from ..ir.types import BOOL, CONTRIB, DELTA, FLOAT, INTEGER, STRING, TLam, TSum, TTensor, TTuple, Type
from ..values import Inj
from .numba_types import COLUMN_DTYPES, components, is_soa, soa_rank


def placeholder(t: Type, rank: Callable[[Type], int | None]) -> str:
    """Source of a value of type t for the absent side of a sum (Note [Compiled sums])."""
    if t == FLOAT:
        return "0.0"
    if t in (INTEGER, DELTA, CONTRIB):
        return "0"
    if t == BOOL:
        return "False"
    if t == STRING:
        return "''"
    if isinstance(t, TLam):  # a tag no closure has (Note [Defunctionalisation])
        return "(_np.int64(-1), _np.int64(0))"
    if isinstance(t, TTensor) and isinstance(t.elem, TLam):
        return "_np.zeros((0, 2), _np.int64)"
    if isinstance(t, TTuple):
        parts = [placeholder(e, rank) for e in t.elems]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if isinstance(t, TSum):
        return f"(False, {placeholder(t.left, rank)}, {placeholder(t.right, rank)})"
    if isinstance(t, TTensor) and t.elem == INTEGER:
        return f"_np.zeros(({'0, ' * t.rank}), _np.int64)"
    if is_soa(t):  # no rows: the length 0 and an empty column per component
        from .numba_soa import soa_placeholder
        return soa_placeholder(t)
    if soa_rank(t):  # Note [Nested struct of arrays] in numba_nested.py
        from .numba_nested import nested_placeholder
        return nested_placeholder(t)
    return f"_np.zeros(({'0, ' * rank(t)}))"



def machine_placeholder(t: Type, rank: Callable[[Type], int | None]) -> Any:
    """:func:`placeholder` as a Python value, for sums entering compiled code."""
    if isinstance(t, TTuple):
        return tuple(machine_placeholder(e, rank) for e in t.elems)
    if isinstance(t, TSum):
        return (False, machine_placeholder(t.left, rank), machine_placeholder(t.right, rank))
    if isinstance(t, TTensor) and t.elem == INTEGER:
        return np.zeros((0,) * t.rank, np.int64)
    if isinstance(t, TLam):
        return (-1, 0)
    if isinstance(t, TTensor) and isinstance(t.elem, TLam):
        return np.zeros((0, 2), np.int64)
    if is_soa(t):
        return (0, *(np.zeros(0, getattr(np, COLUMN_DTYPES[e])) if e in COLUMN_DTYPES
                     else machine_placeholder(TTensor(1, e), rank) for e in components(t.elem)))
    if soa_rank(t):  # Note [Nested struct of arrays] in numba_nested.py
        from .numba_nested import columns
        return (0, *[np.zeros(1, np.int64)] * (soa_rank(t) - 1),
                *(np.zeros(0, getattr(np, COLUMN_DTYPES.get(e, "float64"))) for e in columns(t)))
    if isinstance(t, TTensor):
        return np.zeros((0,) * rank(t))
    return {FLOAT: 0.0, INTEGER: 0, BOOL: False, STRING: ""}[t]


def sum_to_machine(t: TSum, left: Callable, right: Callable, rank: Callable) -> Callable[[Any], Any]:
    """An ``Inj`` → (tag, left slot, right slot)."""
    absent_left, absent_right = machine_placeholder(t.left, rank), machine_placeholder(t.right, rank)

    def convert(v: Inj) -> tuple:
        return (True, left(v.value), absent_right) if v.left else (False, absent_left, right(v.value))
    return convert


def sum_from_machine(left: Callable, right: Callable) -> Callable[[Any], Any]:
    """(tag, left slot, right slot) → an ``Inj``."""
    return lambda v: Inj(True, left(v[1])) if v[0] else Inj(False, right(v[2]))


class SumMixin:
    """Methods of the Numba emitter for ``inl``/``inr`` and ``case`` (Note [Compiled sums])."""

    def inject(self, t: str, e: ir.Inj, rank: Callable[[Type], int | None]) -> None:
        x = self.atom(e.arg)
        if e.left:
            self.emit(f"{t} = (True, {x}, {placeholder(e.sum_type.right, rank)})")
        else:
            self.emit(f"{t} = (False, {placeholder(e.sum_type.left, rank)}, {x})")

    def branches(self, e, finish, tail: bool = False) -> None:
        if isinstance(e, ir.If):
            return super().branches(e, finish, tail)
        s = self.atom(e.scrut)
        self.emit(f"if {s}[0]:")
        inner = self.indented()
        inner.emit(f"{self.mod.bind(inner.env, e.left_var)} = {s}[1]")
        finish(inner, e.left_body)
        other = self
        if not tail:
            self.emit("else:")
            other = self.indented()
        other.emit(f"{self.mod.bind(other.env, e.right_var)} = {s}[2]")
        finish(other, e.right_body)
