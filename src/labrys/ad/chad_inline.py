"""Lowered CHAD translations inlined into their callers (Vákár & Smeding, CHAD §9: the
translation is compositional, one def per def; only the generated code is specialised):

    Γ ⊢ [chadR g] a : (R1 T, R2 T ⊸ R2 S)  ↦  Γ ⊢ let params = a in body([chadR g]) : the same

for a lowered, non-recursive ``[chadR g]``/``[chadF g]`` of at most INLINE_LIMIT nodes.
"""
from __future__ import annotations

import logging

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import DerivedName, show_name
from ..ir.traverse import map_bottom_up, size, substitute
from ..opt.anf import rename_apart
from ..types.checker import check_def
from .chad_lower import translations_called
from .pipeline import Work

_log = logging.getLogger("labrys")



# Note [Lowered callees inlined]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Each def is translated once and called (the paper's homomorphism); once lowered, a call
# ``[chadR g] a`` returns a pair (primal, backpropagator), and the backpropagator is a closure
# across the def boundary: the compiled backend stores a record per call and dispatches its
# application (ADBench GMM calls [chadR matvec] and [chadR sqnorm] K times per data point, in
# the primal and again in the reverse pass).  So a call of a *lowered*, non-recursive
# translation of at most INLINE_LIMIT nodes is replaced by its body (parameters let-bound,
# binders renamed apart) before the loop steps are inlined: the simplifier's letRotate and
# letPairSplit then bind the backpropagator to its λ, which is copied to its application and
# β-reduced like a loop step.  Code is copied, never work; the callee is still derived once.
INLINE_LIMIT = 600


def inline_lowered_callees(d: ir.Def, work: Work, translations: tuple[str, ...], lowered) -> tuple[ir.Def, bool]:
    """d with its calls of small lowered translations inlined, and whether any was; ``translations``
    the CHAD derivations, ``lowered(derivation, name, arg, work)`` whether one is lowered."""
    def callee(call: ir.Call) -> ir.Def | None:
        if call.func == d.name or call.func.derivation not in translations \
                or not lowered(call.func.derivation, call.func, call.arg.type, work):
            return None
        target = work.functions.resolve(call.func, call.arg.type)
        g = work.generator.derive(call.func.derivation, work.generator.base_of(target)).d
        if size(g.body) > INLINE_LIMIT or any(c.func == g.name for c in translations_called(g.body, translations)):
            return None
        return g

    def rewrite(x: ir.Expr) -> ir.Expr:
        if not (isinstance(x, ir.Call) and isinstance(x.func, DerivedName)):
            return x
        g = callee(x)
        if g is None:
            return x
        names = tuple(work.fresh(p.name) for p in g.params)
        body = rename_apart(g.body, work.fresh)
        body = substitute(body, {p.name: ir.Var(n, type=p.type) for p, n in zip(g.params, names)}, work.fresh)
        inlined.append(g.name)
        return ir.Let(names[0] if len(names) == 1 else names, x.arg, body, type=x.type, span=x.span)
    inlined: list = []
    if not translations_called(d.body, translations):
        return d, False
    try:
        out = check_def(d.with_body(map_bottom_up(d.body, rewrite)), work.functions)
    except LabrysError as exc:  # a labrys bug: keep the calls
        _log.info("CHAD's lowered callees of %s were not inlined (%s)", show_name(d.name), exc.message)
        return d, False
    return out, bool(inlined)
