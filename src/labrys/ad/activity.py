"""Activity: derivatives with respect to chosen parameters only.

    f : (x1 : S1, …, xn : Sn) -> T,  wrt = (xa, …, xb)
    [rev f (wrt xa … xb)] : ((S1, …, Sn), dT) -> (dSa, …, dSb)     (one dS when one is named)

A parameter not named in ``wrt`` is *inactive*: its cotangent is not asked
for.  A variable is *varied* when its value depends on an active parameter
(Hascoët & Pascual's activity analysis, the forward half: varied, computed
in one pass over the A-normal form); a variable that is not varied has a
zero derivative, so ∇ gives it no ∂-variable at all and everything computed
from it is treated as a constant.  Transposition then makes no cotangent
code for it: no contribution is accumulated into an inactive parameter or
any value computed only from inactive ones (GMM's data points x, LSTM's
sequence).  The *useful* half (dropping work whose cotangent nobody reads)
is done by the optimiser's dead-code elimination of the result.

Note [Activity in names]
~~~~~~~~~~~~~~~~~~~~~~~~
The activity is part of the derived function's name, ``[rev f (wrt a b)]``
(:class:`labrys.ir.names.DerivedName` ``wrt``), so the full ``[rev f]`` and
any number of restricted ones live side by side in one program, are cached
separately by the generator, and print and parse back.  Cotangents come in
the order ``wrt`` names the parameters (``labrys.grad(f, argnums=(2, 0))``
asks for ``(wrt c a)``).
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.traverse import free_vars
from ..ir.types import TTuple, Type
from ..types.checker import Signature
from ..types.tangent import tangent_type


def wrt_params(base, wrt: tuple[str, ...], derivation: str) -> tuple[ir.Param, ...]:
    """The parameters of ``base`` that ``wrt`` names, in ``wrt``'s order (errors without a position)."""
    if not isinstance(base, Signature) or not isinstance(base.decl, ir.Def):
        raise LabrysError(f"[{derivation} … (wrt …)] needs a function defined with named parameters (a def)")
    by_name = {p.name: p for p in base.decl.params}
    unknown = [a for a in wrt if a not in by_name]
    if unknown:
        raise LabrysError(f"wrt names {', '.join(unknown)}, not a parameter of {base.name}; its parameters are "
                          + ", ".join(by_name))
    return tuple(by_name[a] for a in wrt)


def wrt_result(params: tuple[ir.Param, ...]) -> Type:
    """The cotangent type of the active parameters: one, or a tuple in wrt's order."""
    types = tuple(tangent_type(p.type) for p in params)
    return types[0] if len(types) == 1 else TTuple(types)


def inactive_params(d: ir.Def, wrt: tuple[str, ...]) -> set[str]:
    """The parameters of d a derivative with respect to ``wrt`` treats as constants."""
    if not wrt:
        return set()
    return {p.name for p in d.params if p.name not in wrt}


def is_inactive(e: ir.Expr, inactive: set[str]) -> bool:
    """True when ``e`` is not varied: every free variable of it is inactive."""
    return free_vars(e) <= inactive
