"""The wrapper shared by the three reverse versions of Krawiec et al. (Figs 6, 8, 11,
generalised by Fig. 15): seed the input, run the translated function, read the
gradient off its output.  The seeding and reading are run-time primitives
(:mod:`labrys.ad.dual_io`, :mod:`labrys.ad.deltas`) because they walk values, not programs."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V, let
from ..ir.names import DerivedName, erase_types
from ..types.tangent import tangent_type
from .dual_types import require_first_order


def rev_wrapper(d: ir.Def, algorithm: str, translation: str, inputs: str, gradient: str) -> ir.Def:
    """(def [algorithm f] dS ((x : S) (dt : dT))
         (let ((s0 (inputs x)) (y ([translation f] s0))) (gradient x y dt)))"""
    require_first_order(d, algorithm)
    s, t, base = d.arg_type, d.ret, erase_types(d.name)
    body = let("s0", C(inputs, V("x")),
               let("y", ir.Call(DerivedName(translation, base), V("s0")),
                   C(gradient, V("x"), V("y"), V("dt"))))
    params = (ir.Param("x", s), ir.Param("dt", tangent_type(t)))
    return ir.Def(DerivedName(algorithm, base), tangent_type(s), params, body, span=d.span)
