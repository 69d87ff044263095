"""deltarev2 — reverse mode with Delta, a symbolic cotangent (Krawiec et al. §6,
Figs 7–8).

    Γ ⊢ e : A   ↦   D2[Γ] ⊢ D2[e] : D2[A]        D2[Float] = (Tuple Float Delta)

A literal's Delta is ``(Zero)``; a primitive's is ``Add_i (Scale ∂_i f u_i)``,
built directly into the dual number.  The wrapper (Fig. 8, general T as in
Fig. 15) seeds input k with ``OneHot k`` and evaluates every output's Delta
with eval₂, a tree walk into one gradient array:

    [deltarev2 f] (x, dt) = delta2Gradient (x, [delta2 f] (delta2Inputs x), dt)

The forward pass is linear, and the Delta is a DAG in memory, but eval₂ walks
it as a tree: a value used twice is walked twice, so ``let y = x + x`` repeated
n times costs 2^n (§7's opening example; ``examples/delta_chain.ks``).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C
from ..ir.types import DELTA
from .delta_wrappers import rev_wrapper
from .dual_numbers import Reals, translation_pipeline, wrapper_pipeline

REALS = Reals("deltarev2", "delta2", DELTA, C("Zero"),
              scale=lambda d, u: C("Scale", d, u), add=lambda u, v: C("Add", u, v))


def wrapper(d: ir.Def) -> ir.Def:
    return rev_wrapper(d, "deltarev2", "delta2", "delta2Inputs", "delta2Gradient")


TRANSLATION = translation_pipeline(REALS)
PIPELINE = wrapper_pipeline(REALS, wrapper, "Fig. 8, generalised by Fig. 15")
