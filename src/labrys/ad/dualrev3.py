"""dualrev3 — Smeding & Vákár's D³: IDs and the ID-generation monad (§6.2,
Fig. 8 "actual", Fig. 9).

    Γ ⊢ t : τ ↦ D³[Γ] ⊢ D³[t] : D³[τ]      D³[Float] = (Tuple Float (Tuple Integer (Lam Float Staged)))

What changes from D² (:mod:`.dualrev2`): the key is explicit — each Float carries
the ID of its backpropagator, drawn from the ID monad after its operands (P1):
a literal is ``(dr3Zero)`` (a fresh ID, λz. 0S), an op
``(tuple (drNewId) (λz. StagedCall (j1,d1) (∂1·z) +S …))``.  The monad's state, the
next free ID, lives in the run (Note [The ID monad in the run time]); the IDs
start at 0 (Fig. 9, P5).  Costs (§6.3): every backpropagator runs at most once,
but zeros, c additions and one-hots of size I remain, and the tree map costs
O(log T) per operation (counted as key comparisons).
"""
from __future__ import annotations

from ..ir.build import C, tup
from .dualrev2 import staged_backpropagator
from .dualrev_common import pipelines, reals
from .dualrev_staged import IMAGE3

REALS = reals("dualrev3", "dr3", IMAGE3, C("dr3Zero"),
              lambda terms, fresh: tup(C("drNewId"), staged_backpropagator("dr3Call")(terms, fresh)))
TRANSLATION, PIPELINE = pipelines(REALS, "dr3Inputs", "dr3Gradient", "Fig. 9")
