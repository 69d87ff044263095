"""K4 of the AD map: ``[CL f]``, f converted to the categorical combinator
language CL and back (Ellis et al. §6, Figs 9–11; :mod:`labrys.cl`), as the
Knossos compiler does for ``(gdef CL [f T])``:

    f : S → T          [CL f] : S → T = back⟦C⟦f⟧⟧

    Γ ⊢ e : τ   ↦   C⟦e⟧Γ : T(Γ) ⇒ τ   ↦   Γ ⊢ back⟦C⟦e⟧Γ⟧ : τ

The passes: A-normal form (shared with Knossos ``rev``), the conversion to CL
with pruning — a stage printed as the CL term, checked by Fig. 11's typing —
and the conversion back.  CL is a translation, not a derivative: ``[CL f]``
computes f, and ``labrys verify`` checks that it does.  A call of a user
function g stays a call of g.
"""
from __future__ import annotations

from typing import Callable

from ..cl import CLDef, check_def, from_cl, show_def, to_cl
from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import erase_types
from ..types.checker import Signature
from ..types.primitives import Primitive
from . import knossos
from .pipeline import Pass, Work


def _to_cl(d: ir.Def, work: Work) -> ir.Def:
    knossos._require_core(d)
    cl = to_cl(d, work.fresh)
    try:
        check_def(cl, work.functions, d.span)  # Fig. 11: the converted def has type S ⇒ T
    except LabrysError as exc:
        raise LabrysError(f"internal: the CL conversion made an ill-typed term: {exc.message}", d.span) from None
    work.notes["cl"] = cl
    work.generator.memo.setdefault("cl", {})[(erase_types(d.name), d.arg_type)] = cl
    return d


def _back(d: ir.Def, work: Work) -> ir.Def:
    return from_cl(work.notes["cl"], knossos.derived_name("CL", d.name), work.functions, d.span)


def _shows(work: Work) -> str:
    return show_def(work.notes["cl"])


PIPELINE = (knossos.ANF,
            Pass("cl", "The CL term C⟦f⟧ (Ellis et al. Fig. 10, pruned; typed by Fig. 11)", _to_cl, shows=_shows),
            Pass("from-cl", "Converted back from CL: [CL f]", _back))


def cl_defs(derivations) -> Callable[[Signature], CLDef | None]:
    """The CL def of each user function of one program (``labrys.ad.derive.Derivations``),
    made on demand; None for a function outside CL (an edef, a higher-order function, …).
    What :func:`labrys.cl.run_def` needs to run a CL program."""
    made: dict[int, CLDef | None] = {}

    def defs(sig: Signature) -> CLDef | None:
        if id(sig) not in made:
            made[id(sig)] = None
            if isinstance(sig.decl, ir.Def):
                try:
                    derivations.derive("CL", sig)
                    made[id(sig)] = derivations.memo["cl"].get((erase_types(sig.name), sig.arg))
                except LabrysError:
                    pass
        return made[id(sig)]
    return defs


def signature(s, t):
    return s, t


def treats(prim: Primitive) -> str:
    """How CL treats a call of ``prim`` (labrys.ad.registry.coverage): F(p), or a loop combinator."""
    if prim.name in ("build", "sumbuild", "fold") or prim.name in ("map", "map2", "ifold", "nTimes", "ccl"):
        return "own rule"
    return "value"
