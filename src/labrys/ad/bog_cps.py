"""BOG AD's reverse pass in the continuation style (Ellis et al.'s working notes
§11, Fig. 25, with three corrections below), the second strategy of split mode
(:mod:`.bog` is the first, Fig. 24's bindings style):

    ∂e : δE, b : B⟦e⟧, σ : δQ  ⊢  ∇r⟦e⟧ ∂e b σ : δQ
    (σ evaluated where ∂x is bound for every free x of e)

The reverse pass of a block is built from the inside out: σ starts as the
tuple of the cotangents the block returns, and each construct's rule wraps
the σ it is given (``x``: ``let ∂x = ∂e in σ``; ``let x = e₁ in e₂``:
``∇r⟦e₂⟧ ∂e b₂ (∇r⟦e₁⟧ ∂x b₁ σ)``; a call: ``let ∂a = f_rbog(∂e, b_f) in
∇r⟦a⟧ ∂a b_a σ``).  :meth:`.bog.Split.reverse_then` is that fold; a rule that
only binds is a plain binding, and a rule that must put σ somewhere else is
a **frame**, a function from σ to the code around it.

Fig. 25 as printed has three bugs, fixed here:

- **if** stores ``(true, b_t)`` or ``(false, b_f)`` but reads ``π₁``/``π₂`` of one
  slot: the BOG is the sum ``Inl b_t | Inr b_f``, as in Fig. 24, and the reverse a
  ``case`` over it;
- **if** copies σ into both branches, exponential in the nesting depth: σ is
  bound once as a *join point* ``k = λ(∂v̄). σ`` (∂v̄ the cotangents of what the
  branches consume) and each branch's reverse ends by jumping to it,
  ``k (∂v̄)`` — the only rule where this style's code differs from Fig. 24's;
- **build** puts σ inside the Σ, which would run the rest of the reverse pass
  once per iteration and sum it: ``v̄ = Σᵢ …`` is bound first and σ follows, as
  in Fig. 24 (:func:`.bog_loops.build` makes that binding for both styles).

The call rule's swapped ``b_a``/``b_f`` (⚠) does not arise: the input is in
A-normal form, so a call's argument is an atom with no BOG of its own.
"""
from __future__ import annotations

from typing import Callable

from ..ir import nodes as ir
from ..ir.build import V
from ..ir.types import TTuple
from ..types.tangent import tangent_type

BINDINGS, CONTINUATIONS = "bindings", "continuations"
STYLES = (BINDINGS, CONTINUATIONS)
FRAME = object()  # the binder of a reverse item that is a frame (σ ↦ code around σ)


def if_frame(s, blocks: list, bog: ir.Expr, dv: ir.Expr, keep: list[str]) -> Callable[[ir.Expr], ir.Expr]:
    """if (Fig. 25, fixed): ``let k = λ(∂v̄). σ in case b of Inl b₁ → ∇r⟦e_t⟧ ∂e b₁ (k ∂v̄)
    | Inr b₂ → ∇r⟦e_f⟧ ∂e b₂ (k ∂v̄)`` — σ once, as a join point."""
    cots = tuple(s.cot(x) for x in keep)
    types = TTuple(tuple(tangent_type(s.types[x]) for x in keep))

    def frame(sigma: ir.Expr) -> ir.Expr:
        k, p = s.fresh("join"), s.fresh("dv")
        join = ir.Lam(p, types, ir.Let(cots, V(p), sigma))
        jump = ir.App(V(k), ir.Tuple(tuple(V(c) for c in cots)))
        lv, rv = s.fresh("bl"), s.fresh("br")
        alts = [s.reverse_then(blk, dv, V(v), jump) for blk, v in zip(blocks, (lv, rv))]
        return ir.Let(k, join, ir.Case(bog, lv, alts[0], rv, alts[1]))
    return frame
