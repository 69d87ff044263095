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

Note [Redefinitions]
~~~~~~~~~~~~~~~~~~~~
The Knossos compiler keeps its functions in a map from (name, argument type)
to definition and inserts each def in turn, so a second def of a function at
the same argument type silently replaces the first (one of its test programs,
categorical_ad_talk_examples.ks, defines f5 twice).  labrys does the same —
the later def is the function, everywhere in the program — and logs a
positioned warning (logger ``labrys.check``).  Two defs at one argument type
with different result types stay an error: no single meaning fits both.
"""
from __future__ import annotations

import logging

from ..ir import nodes as ir
from ..ir.build import C
from ..ir.names import DerivedName, show_name
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


def drop_redefinitions(program: ir.Program) -> ir.Program:
    """The program without the defs a later def at the same name, argument and
    result type replaces (Note [Redefinitions])."""
    last: dict[tuple, ir.Def] = {}
    for d in program.decls:
        if isinstance(d, ir.Def):
            last[(d.name, d.arg_type, d.ret)] = d
    replaced = [d for d in program.decls if isinstance(d, ir.Def) and last[(d.name, d.arg_type, d.ret)] is not d]
    if not replaced:
        return program
    for d in replaced:
        later = last[(d.name, d.arg_type, d.ret)]
        logging.getLogger("labrys.check").warning(
            "%r: warning: %s is defined again at argument type %s; the later definition (%r) replaces this one",
            d.span, show_name(d.name), d.arg_type, later.span)
    gone = {id(d) for d in replaced}
    return ir.Program(tuple(d for d in program.decls if id(d) not in gone))
