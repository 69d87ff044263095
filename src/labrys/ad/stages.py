"""The pipeline view of seed 002's Demo (guide seed-000-knossos.md §12): the
twelve programs between a function and its optimised derivatives, each a
def that prints as `.ks` and type-checks."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.names import DerivedName, erase_types
from ..ir.types import TLM
from ..opt.anf import anf
from ..opt.cse import cse
from ..opt.lm_laws import optimise_lm
from ..opt.simplify import simplify
from ..types.checker import Functions, Signature, check_def
from ..types.tangent import tangent_type
from . import Derivations

TITLES = (
    "Original definition",
    "Anf-ised original definition",
    "The full Jacobian (unoptimised)",
    "The full Jacobian (optimised)",
    "Forward derivative (unoptimised)",
    "Forward-mode derivative (optimised)",
    "Forward-mode derivative (CSE'd)",
    "Transposed Jacobian",
    "Optimised transposed Jacobian",
    "Reverse-mode derivative (unoptimised)",
    "Reverse-mode derivative (optimised)",
    "Reverse-mode derivative (CSE'd)",
)


def _witness(d: ir.Def) -> ir.Expr:
    ps = d.params
    return V(ps[0].name, ps[0].type) if len(ps) == 1 else ir.Tuple(tuple(V(p.name, p.type) for p in ps))


def _applied(name: DerivedName, d: ir.Def, lm_body: ir.Expr, tangent: ir.Param, reverse: bool) -> ir.Def:
    """(def name T (x... (dx : dT)) (lmApply m dx)) around a Jacobian (or transposed
    Jacobian) body over d's parameters, as the 002 demo prints it."""
    body = C("lmApply", lm_body, V(tangent.name))
    params = d.params + (tangent,)
    return ir.Def(name, tangent_type(d.ret) if not reverse else tangent_type(d.arg_type), params, body, span=d.span)


def _cse(d: ir.Def, functions: Functions) -> ir.Def:
    body = simplify(cse(anf(d.body)))
    return check_def(ir.Def(d.name, d.ret, d.params, body, span=d.span), functions)


def pipeline(derivations: Derivations, sig: Signature) -> list[tuple[str, ir.Def]]:
    functions = derivations.functions
    fwd, rev = derivations.derive("fwd", sig), derivations.derive("rev", sig)
    original, anfd, jac = fwd.stages["original"], fwd.stages["anf"], fwd.stages["jacobian"]
    witness = _witness(anfd)
    base = erase_types(original.name)
    jac_opt = check_def(ir.Def(jac.name, jac.ret, jac.params, simplify(optimise_lm(jac.body, witness)),
                               span=jac.span), functions)
    dx = ir.Param("dx", tangent_type(original.arg_type))
    dr = ir.Param("dr", tangent_type(original.ret))
    fwd_unopt = _applied(DerivedName("fwd", base), original, jac_opt.body, dx, False)
    r_type = TLM(tangent_type(original.ret), tangent_type(original.arg_type))
    transposed = ir.Def(DerivedName("R", base), r_type, jac.params, C("lmTranspose", jac_opt.body), span=jac.span)
    r_opt = ir.Def(transposed.name, r_type, jac.params, simplify(optimise_lm(transposed.body, witness)),
                   span=jac.span)
    rev_unopt = _applied(DerivedName("rev", base), original, r_opt.body, dr, True)
    stages = (original, anfd, jac, jac_opt, fwd_unopt, fwd.d, _cse(fwd.d, functions),
              transposed, r_opt, rev_unopt, rev.d, _cse(rev.d, functions))
    return list(zip(TITLES, (check_def(s, functions) for s in stages)))
