"""``[shape f] : S → shape T`` — the sizes of f's result without its values, the
Knossos compiler's shape derivation (LANGUAGE.md §3).

    (def f T (x : S) e)   ↦   (def [shape f] (shape T) (x : S) (shape e))

This first version computes f's value and keeps its shape; the optimiser
removes what the shape does not need only where it can see it.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C
from ..ir.names import DerivedName, erase_types
from ..opt.simplify import simplify
from ..types.tangent import shape_type
from .pipeline import Pass, Work


def signature(s, t):
    return s, shape_type(t)


def _shape(d: ir.Def, work: Work) -> ir.Def:
    name = DerivedName("shape", erase_types(d.name))
    return ir.Def(name, shape_type(d.ret), d.params, C("shape", d.body), span=d.span)


PIPELINE = (Pass("shape", "The shape of the result: [shape f]", _shape),
            Pass("optimise", "Optimised: [shape f]", lambda d, work: ir.Def(d.name, d.ret, d.params,
                                                                              simplify(d.body), span=d.span)))
