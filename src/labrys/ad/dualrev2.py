"""dualrev2 — Smeding & Vákár's D², linear factoring by staging calls (§6, §6.1,
Fig. 7, Fig. 8 "intended").

    Γ ⊢ t : τ ↦ D²[Γ] ⊢ D²[t] : D²[τ]      D²[Float] = (Tuple Float (Lam Float Staged))

What changes from D¹ (:mod:`.dualrev1`): a backpropagator no longer calls its
operands' backpropagators; it returns a ``Staged c`` recording the calls, and
calls of one callee get their arguments summed (``f a + f b = f (a + b)``):
an op's backpropagator is ``λz. StagedCall d1 (∂1·z) +S … +S StagedCall dn (∂n·z)``.
``ResolveStaged`` then runs each backpropagator once, largest key first.

The paper keys the map by the backpropagator itself and notes that this cannot
be implemented (footnote 18: functions have no order).  labrys's ``dualrev2``
implements a resolver: every backpropagator closure is stamped when it is
made (``dr2Tag``) with a tag from the run's hidden counter — creation order is
call-by-value order, so the tags are D³'s IDs (a test checks they coincide) and
the map is keyed by tag.  Each backpropagator runs at most once; the zeros,
one-hots and c additions of §6.3 remain.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.types import FLOAT
from .dualrev_common import pipelines, reals, times
from .dualrev_staged import BP2


def staged_backpropagator(call: str):
    """λz. CALL(u1)(∂1·z) +S … +S CALL(un)(∂n·z)."""
    def build(terms, fresh) -> ir.Expr:
        z = fresh("z")
        body = None
        for d, u in terms:
            staged = C(call, u, times(d, V(z)))
            body = staged if body is None else C("drPlusS", body, staged)
        return ir.Lam(z, FLOAT, body)
    return build


REALS = reals("dualrev2", "dr2", BP2, C("dr2Zero"),
              lambda terms, fresh: C("dr2Tag", staged_backpropagator("dr2Call")(terms, fresh)))
TRANSLATION, PIPELINE = pipelines(REALS, "dr2Inputs", "dr2Gradient", "Fig. 8 with a tag per backpropagator")
