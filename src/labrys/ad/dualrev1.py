"""dualrev1 — Smeding & Vákár's naive dual-numbers reverse AD, D¹ (§5, Figs 3–6).

    Γ ⊢ t : τ ↦ D¹[Γ] ⊢ D¹[t] : D¹[τ]      D¹[Float] = (Tuple Float (Lam Float c))

Each Float is paired with its backpropagator, a real closure ``Float ⊸ c`` (c is
dσ, flattened: :mod:`.dualrev_staged`).  A literal's is ``(dr1Zero)`` = λz. 0;
an op's is ``λz. d1(∂1·z) + … + dn(∂n·z)``: it *calls* its operands'
backpropagators, with the partials evaluated lazily, inside.  Interleave gives
input k the backpropagator λz. one-hot(k)·z; Deinterleave sums the outputs'.

Correct, and exponential in general (§5.4): a backpropagator re-runs once per
use of its scalar and the re-runs multiply along chains of shared lets — on
``t_bad`` the input's backpropagator runs 2ⁿ times, on the Fibonacci chain
Fib(n+1) times — and every call adds whole c values (quadratic on Σ v[k]).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.types import FLOAT
from .dualrev_common import pipelines, reals, times
from .dualrev_staged import BP1


def op_backpropagator(terms, fresh) -> ir.Expr:
    """λz. d1(∂1·z) + … + dn(∂n·z) (Fig. 5)."""
    z = fresh("z")
    body = None
    for d, u in terms:
        call = ir.App(u, times(d, V(z)))
        body = call if body is None else C("oplus", body, call)
    return ir.Lam(z, FLOAT, body)


REALS = reals("dualrev1", "dr1", BP1, C("dr1Zero"), op_backpropagator)
TRANSLATION, PIPELINE = pipelines(REALS, "dr1Inputs", "dr1Gradient", "Fig. 6")
