"""deltarev — reverse mode with Delta and explicit sharing (Krawiec et al. §7, §10,
§11, Figs 9–11 and 15).

    Γ ⊢ e : A   ↦   D[Γ] ⊢ D[e] : M D[A]        D[Float] = (Tuple Float Delta)

As deltarev2, but every compound Delta is named with ``deltaLet`` before it goes
into a dual number, so a dual holds only ``(Zero)`` or a ``Var`` (§7.1) and no
Delta is ever copied.  M is realised by the tape of the run (Note [The monad as
the tape] in :mod:`.dual_numbers`).  The wrapper (Fig. 11; Fig. 15 for any
first-order S and T) makes the input ``Var``s 1..a on a fresh tape, runs the
forward pass, seeds the outputs' Deltas with dt and sweeps the tape once,
newest binding first (§7.3's array form of eval):

    [deltarev f] (x, dt) = deltaGradient (x, [delta f] (deltaInputs x), dt)

Time and extra memory are linear in the primal's run time, for every a (§7.4).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C
from ..ir.types import DELTA
from .delta_wrappers import rev_wrapper
from .dual_numbers import Reals, translation_pipeline, wrapper_pipeline

REALS = Reals("deltarev", "delta", DELTA, C("Zero"),
              scale=lambda d, u: C("Scale", d, u), add=lambda u, v: C("Add", u, v),
              share=lambda d: C("deltaLet", d))


def wrapper(d: ir.Def) -> ir.Def:
    return rev_wrapper(d, "deltarev", "delta", "deltaInputs", "deltaGradient")


TRANSLATION = translation_pipeline(REALS)
PIPELINE = wrapper_pipeline(REALS, wrapper, "Fig. 11, generalised by Fig. 15")
