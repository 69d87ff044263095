"""dualfwd — forward mode with dual numbers (Krawiec et al. §4, Figs 3–4).

    Γ ⊢ e : A   ↦   Fw[Γ] ⊢ Fw[e] : Fw[A]        Fw[Float] = (Tuple Float Float)

``[dual f]`` is Fw applied to f's body (:mod:`.dual_numbers`, the tangent as the
derivative part: a literal's is 0.0, a primitive's is Σ ∂_i f · dx_i).  The
wrapper of Fig. 4, generalised by Fig. 15 to any first-order S and T:

    [dualfwd f] (x, dx) = delta_T ([dual f] (zip_S (x, dx)))   : (S, dS) → dT

One call costs a constant times f; a full gradient of S → Float needs |S| calls.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.names import DerivedName, erase_types
from ..ir.traverse import FreshNames
from ..ir.types import FLOAT
from ..types.tangent import tangent_type
from .dual_numbers import Reals, translation_pipeline, wrapper_pipeline
from .dual_types import derivative_part, require_first_order

REALS = Reals("dualfwd", "dual", FLOAT, ir.Const(0.0, FLOAT),
              scale=lambda d, u: C("mul", d, u), add=lambda u, v: C("add", u, v))


def wrapper(d: ir.Def) -> ir.Def:
    require_first_order(d, "dualfwd")
    s, t = d.arg_type, d.ret
    y = ir.Call(DerivedName("dual", erase_types(d.name)), C("dualZip", V("x"), V("dx")))
    body = derivative_part(y, t, FLOAT, FreshNames({"x", "dx"}), d.span)
    params = (ir.Param("x", s), ir.Param("dx", tangent_type(s)))
    return ir.Def(DerivedName("dualfwd", erase_types(d.name)), tangent_type(t), params, body, span=d.span)


TRANSLATION = translation_pipeline(REALS)
PIPELINE = wrapper_pipeline(REALS, wrapper, "Fig. 4, generalised by Fig. 15")
