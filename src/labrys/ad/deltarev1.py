"""deltarev1 — reverse mode by pairing every real with a whole cotangent of the
input (Krawiec et al. §5, Figs 5–6).

    Γ ⊢ e : A   ↦   D1[Γ] ⊢ D1[e] : D1[A]        D1[Float] = (Tuple Float (Vec Float))

A literal's derivative part is zero_S; a primitive's is ⊕_i (∂_i f ⊗ ds_i)
(``oplus``, ``otimes``).  The wrapper (Fig. 6, generalised to any first-order S
and T as in Fig. 15) seeds the k-th real of the input with one-hot k and reads
the gradient off the output as Σ_j dt_j ⊗ ds_j:

    [deltarev1 f] (x, dt) = delta1Gradient (x, [delta1 f] (delta1Inputs x), dt)

Every ⊕ and ⊗ costs a = |S| operations, so the gradient costs Θ(a · ops(f)):
the quadratic blow-up that §6 sets out to remove.

Note [D1 cotangents]
~~~~~~~~~~~~~~~~~~~~
In the paper D1's types are indexed by S (D1_S[Float] = Float × dS), which rules
out separate compilation (§7.5).  We flatten dS to R^a as §11's initVars does,
and let the empty vector stand for zero_S (``zeroS``; ``oplus`` treats it as the
identity).  Then D1[Float] = (Tuple Float (Vec Float)) whatever S is, and each
``[delta1 g]`` is made once; the cost of every ⊕/⊗ on non-zero cotangents — the
point of this stage — is unchanged.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C
from ..ir.types import FLOAT, TTensor
from .delta_wrappers import rev_wrapper
from .dual_numbers import Reals, translation_pipeline, wrapper_pipeline

REALS = Reals("deltarev1", "delta1", TTensor(1, FLOAT), C("zeroS"),
              scale=lambda d, u: C("otimes", d, u), add=lambda u, v: C("oplus", u, v))


def wrapper(d: ir.Def) -> ir.Def:
    return rev_wrapper(d, "deltarev1", "delta1", "delta1Inputs", "delta1Gradient")


TRANSLATION = translation_pipeline(REALS)
PIPELINE = wrapper_pipeline(REALS, wrapper, "Fig. 6, generalised by Fig. 15")
