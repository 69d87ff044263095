"""dualrev — Smeding & Vákár's final dual-numbers reverse AD: D⁵ without the
cotangent array (§9.1) and with defunctionalised backpropagators (§9.2).

    Γ ⊢ t : τ ↦ D[Γ] ⊢ D[t] : D[τ]      D[Float] = (Tuple Float (Tuple Integer Contrib))

What changes from D⁵ (:mod:`.dualrev5`): a backpropagator is one of three shapes
(input, literal, op), so it becomes data: ``Contrib = [(ID, Contrib, ∂)]``.  A
literal's dual part is ``(drcZero)``: a fresh ID and ``[]``; an op's is
``(drcOp u1 ∂1 … un ∂n)``: a fresh ID drawn after the operands (P1) and one triple
per operand, the partials evaluated now, in the forward pass (§9.2; IEEE
arithmetic, P14).  There is no cotangent array: an input's cotangent is its
staging slot's accumulator, so the outputs are seeded at their own IDs (P6).
The reverse pass (``drcGradient``) is the loop of Fig. 13 over the staging
array of (Contrib, accumulator), IDs descending.  O(T + I) (§8.2).
"""
from __future__ import annotations

from ..ir.build import C, tup
from .dualrev_common import pipelines, reals
from .dualrev_runtime import IMAGE

REALS = reals("dualrev", "drc", IMAGE, C("drcZero"),
              lambda terms, fresh: C("drcOp", tup(*(x for d, u in terms for x in (u, d)))))
TRANSLATION, PIPELINE = pipelines(REALS, "drcInputs", "drcGradient", "Fig. 13 with §9.1–9.2")
