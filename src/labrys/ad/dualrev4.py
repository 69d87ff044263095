"""dualrev4 — Smeding & Vákár's D⁴: the Cayley transform of Staged (§7, Figs 10–11).

    Γ ⊢ t : τ ↦ D⁴[Γ] ⊢ D⁴[t] : D⁴[τ]
    D⁴[Float] = (Tuple Float (Tuple Integer (Lam Float (Lam Staged Staged))))

What changes from D³ (:mod:`.dualrev3`): a backpropagator returns an *updater*
``Staged → Staged`` (the difference-list trick, §7 Example 7.1), so ZERO is the
identity and ⊕ is composition, both O(1): an op's backpropagator is
``λz. λs. StagedCall (jn,dn) (∂n·z) (… (StagedCall (j1,d1) (∂1·z) s))``, each call an
insert-or-add into the map.  The one full zero of c is built once, by the
wrapper (StagedRunZero).  Interleave's injectors are setters that rebuild c's
path to their scalar — with c flattened, a copy of c (§7.2's remaining cost,
quadratic on a vector input), and the tree map still costs O(log T).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V, tup
from ..ir.types import FLOAT, STAGED, Type
from .dualrev_common import pipelines, reals, times
from .dualrev_staged import IMAGE4


def updater_backpropagator(call: str, state: Type):
    """λz. λs. CALL(un)(∂n·z)(… CALL(u1)(∂1·z)(s)): the composition of the staged calls."""
    def build(terms, fresh) -> ir.Expr:
        z, s = fresh("z"), fresh("s")
        body: ir.Expr = V(s)
        for d, u in terms:
            body = C(call, u, times(d, V(z)), body)
        return tup(C("drNewId"), ir.Lam(z, FLOAT, ir.Lam(s, state, body)))
    return build


REALS = reals("dualrev4", "dr4", IMAGE4, C("dr4Zero"), updater_backpropagator("dr4Call", STAGED))
TRANSLATION, PIPELINE = pipelines(REALS, "dr4Inputs", "dr4Gradient", "Fig. 11")
