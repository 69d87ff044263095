"""dualrevtape — Smeding & Vákár §9.3: the Contribs written to a tape in the
forward pass, which makes dualrev a classical Wengert tape.

    Γ ⊢ t : τ ↦ D[Γ] ⊢ D[t] : D[τ]      D[Float] = (Tuple Float Integer)

What changes from :mod:`.dualrev`: the forward monad's state is the counter and
the staging array (the run's tape); each new ID's entry is written into its slot
when the ID is made.  With slot j holding j's own entry, the Contrib of a triple
is redundant, so a dual part is just the ID and an entry a list of (ID, ∂)
pairs (an optional shrink of §9.3's tape; footnote 32: a constant factor).  A literal
is ``(drtZero)``: an ID with an empty entry; an op ``(drtOp j1 ∂1 … jn ∂n)``.
The reverse loop is unchanged, with the adjoints in their own array, so a
forward pass can be swept more than once (P7).  This is Krawiec et al.'s Delta
tape (§9.4, Fig. 15b): ``deltarev`` gives the same gradients on every program.
"""
from __future__ import annotations

from ..ir.build import C, tup
from ..ir.types import INTEGER
from .dualrev_common import pipelines, reals

REALS = reals("dualrevtape", "drtape", INTEGER, C("drtZero"),
              lambda terms, fresh: C("drtOp", tup(*(x for d, u in terms for x in (u, d)))))
TRANSLATION, PIPELINE = pipelines(REALS, "drtInputs", "drtGradient", "§9.3, Fig. 13's loop on the tape")
