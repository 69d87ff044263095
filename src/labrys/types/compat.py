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

Note [Runtime functions declared by edef]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Knossos programs declare functions of the Knossos C++ run time with edef and
call them.  Most are labrys primitives at the declared type (dotv,
mul$Mat$Vec), and the checker skips such an edef.  vprod.ks declares
(edef indexL (Tuple (Vec Float) Float) ((Tuple Integer (Vec Float)))), the
run time's indexL of the split-mode experiment, which returns the vector
first — the opposite order of the built-in indexL primitive.  labrys gives
that edef its meaning as a def written in the language, (tuple v (index i v)),
so every derivation differentiates it like any def; the file's edefs of
[suffwdpass indexL] and [sufrevpass indexL] (the C++ run time's hand-written
split of it) are then dropped, since labrys derives them from that def.  The
def is named indexL_runtime, and so are the file's calls of indexL: the
derivations treat a call of a primitive's name as the primitive.
"""
from __future__ import annotations

import logging

from ..ir import nodes as ir
from ..ir.build import C
from ..ir.names import DerivedName, TypedName, erase_types, show_name
from ..ir.traverse import map_bottom_up
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


def implement_runtime_edefs(program: ir.Program) -> ir.Program:
    """Edefs of the Knossos run time replaced by defs (Note [Runtime functions
    declared by edef])."""
    renames: dict[str, str] = {}
    out: list[ir.Decl] = []
    for d in program.decls:
        body = _runtime_def(d) if isinstance(d, ir.Edef) else None
        if body is not None:
            renames[d.name] = body.name
        out.append(body or d)
    if not renames:
        return program
    kept = [d for d in out if not (isinstance(d, ir.Edef) and isinstance(d.name, DerivedName)
                                   and erase_types(d.name.base) in renames)]
    return ir.Program(tuple(_renamed_calls(d, renames) for d in kept))


def _rename(name, renames: dict[str, str]):
    if isinstance(name, DerivedName):
        return DerivedName(name.derivation, _rename(name.base, renames))
    if isinstance(name, TypedName):
        return TypedName(renames.get(name.name, name.name), name.type)
    return renames.get(name, name) if isinstance(name, str) else name


def _renamed_calls(d: ir.Decl, renames: dict[str, str]) -> ir.Decl:
    def one(e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Call) and _rename(e.func, renames) != e.func:
            return ir.Call(_rename(e.func, renames), e.arg, span=e.span)
        if isinstance(e, ir.FnRef) and _rename(e.func, renames) != e.func:
            return ir.FnRef(_rename(e.func, renames), span=e.span)
        return e
    if isinstance(d, ir.Def):
        return d.with_body(map_bottom_up(d.body, one))
    if isinstance(d, ir.Gdef):
        return ir.Gdef(d.derivation, _rename(d.name, renames), span=d.span)
    return d


def _runtime_def(d: ir.Edef) -> ir.Def | None:
    t, ret = d.arg_type, d.ret
    vec = t.elems[1] if isinstance(t, TTuple) and len(t.elems) == 2 and t.elems[0] == INTEGER else None
    if d.name == "indexL" and isinstance(vec, TTensor) and vec.rank == 1 and ret == TTuple((vec, vec.elem)):
        params = (ir.Param("i", INTEGER, span=d.span), ir.Param("v", t.elems[1], span=d.span))
        body = ir.Tuple((ir.Var("v", span=d.span), C("index", ir.Var("i", span=d.span), ir.Var("v", span=d.span))),
                        span=d.span)
        return ir.Def("indexL_runtime", ret, params, body, span=d.span)
    return None
