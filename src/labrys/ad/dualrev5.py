"""dualrev5 — Smeding & Vákár's D⁵: mutable arrays by resource linearity (§8,
Figs 12–13).

    Γ ⊢ t : τ ↦ D⁵[Γ] ⊢ D⁵[t] : D⁵[τ]
    D⁵[Float] = (Tuple Float (Tuple Integer (Lam Float (Lam State State))))

What changes from D⁴ (:mod:`.dualrev4`): the updaters use their Staged value
linearly, so c and the map become ``State``, two arrays mutated in place: ``cot``
(one slot per input ID) and ``stage`` (one (BP, Float) slot per ID).  StagedCall
is ``stage[j] := (d, stage[j].acc + x)`` (O(1), no comparisons), an input's
injector ``cot[i] += z``.  The IDs start at 1; the wrapper allocates the State
after the forward pass (sizes i and i'), applies the outputs' updaters and runs
ResolveState: IDs i'−1 down to 1 (P5).  O(T + I) (§8.2).
"""
from __future__ import annotations

from ..ir.build import C
from ..ir.types import STATE
from .dualrev4 import updater_backpropagator
from .dualrev_common import pipelines, reals
from .dualrev_staged import IMAGE5

REALS = reals("dualrev5", "dr5", IMAGE5, C("dr5Zero"), updater_backpropagator("dr5Call", STATE))
TRANSLATION, PIPELINE = pipelines(REALS, "dr5Inputs", "dr5Gradient", "Figs 12–13")
