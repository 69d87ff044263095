"""Typing allowances for programs written for the Knossos compiler.

Note [A shape declared as a size]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Knossos programs declare the shape of a function that returns a vector of
scalars by its size: ``(def [shape cumsum] Integer (xs : Vec Float) (shape xs))``.
The shape of a ``Vec Float`` is a ``Vec (Tuple)`` — a vector of empty tuples,
which carries nothing but its length — so the two types hold the same
information.  When a ``[shape f]`` def is declared with the index type of a
rank-N tensor (Integer, or an N-tuple of Integers) and its body is a rank-N
tensor of empty tuples, the checker reads the body as ``(size body)``.  Any
other mismatch stays an error.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C
from ..ir.names import DerivedName
from ..ir.types import INTEGER, TTensor, TTuple, Type


def _content_free(t: Type) -> bool:
    return isinstance(t, TTuple) and all(_content_free(e) for e in t.elems)


def shape_as_size(name, ret: Type, body_type: Type, body: ir.Expr) -> ir.Expr | None:
    """The body to check instead, per Note [A shape declared as a size], or None."""
    if not (isinstance(name, DerivedName) and name.derivation == "shape"):
        return None
    if not (isinstance(body_type, TTensor) and _content_free(body_type.elem)):
        return None
    index = INTEGER if body_type.rank == 1 else TTuple((INTEGER,) * body_type.rank)
    return C("size", body) if ret == index else None
