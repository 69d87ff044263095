"""``[shape f] : S → shape T`` — the sizes of f's result without its values, the
Knossos compiler's shape derivation (docs/reference.md §3).

    (def f T (x : S) e)   ↦   (def [shape f] (shape T) (x : S) (shape e))

This first version computes f's value and keeps its shape; the optimiser
removes what the shape does not need only where it can see it.
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C
from ..ir.names import DerivedName, erase_types, show_name
from ..opt.simplify import simplify
from ..types.tangent import shape_type
from .pipeline import Pass, Work


def signature(s, t):
    return s, shape_type(t)


def _shape(d: ir.Def, work: Work) -> ir.Def:
    name = DerivedName("shape", erase_types(d.name))
    try:
        ret = shape_type(d.ret)
    except ValueError as exc:
        raise LabrysError(f"[shape {show_name(d.name)}]: {exc}", d.span) from None
    return ir.Def(name, ret, d.params, C("shape", d.body), span=d.span)


PIPELINE = (Pass("shape", "The shape of the result: [shape f]", _shape),
            Pass("optimise", "Optimised: [shape f]", lambda d, work: ir.Def(d.name, d.ret, d.params,
                                                                              simplify(d.body), span=d.span)))


def treats(prim) -> str:
    return "value"  # [shape f] evaluates f's body and keeps the shape
