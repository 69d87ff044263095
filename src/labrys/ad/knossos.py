"""K1 derivations ``D``, ``fwd``, ``rev`` of seed 000 Fig. 6:

    f : S -> T               (def f T (x : S) e)
    [D f]   : S -> LM dS dT  = let ∂x = 1 in ∇⟦e⟧
    [fwd f] : (S, dS) -> dT  = [D f](x) ⊙ dx    pushed through (Fig. 4, §6.1)
    [rev f] : (S, dT) -> dS  = dr ⊙ᴿ [D f](x)   let-transposed (Fig. 5, §6.2)

Each is a def in the same IR, optimised (``opt.simplify``) so that no
linear map is left in ``fwd``/``rev``; :func:`stages` exposes every
intermediate program for the pipeline view.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import nodes as ir
from ..ir.build import V, tup, zero_tangent
from ..ir.names import DerivedName, Name, erase_types
from ..ir.traverse import FreshNames, all_names
from ..ir.types import TLM, TTuple
from ..opt.anf import anf, hoist_loop_invariants, rename_apart, spread_arguments
from ..types.tangent import tangent_type
from .jacobian import Nabla, param_lms
from .linear import Transposer, spread, wrap


@dataclass
class Prepared:
    """A def made ready for ∇: renamed apart, in A-normal form."""

    d: ir.Def
    fresh: FreshNames


def prepare(d: ir.Def, bind_tail: bool = False) -> Prepared:
    fresh = FreshNames(all_names(d.body) | {p.name for p in d.params})
    body = hoist_loop_invariants(anf(rename_apart(spread_arguments(d.body, fresh), fresh), fresh, bind_tail))
    return Prepared(ir.Def(d.name, d.ret, d.params, body, span=d.span), fresh)


def _witness(params: tuple[ir.Param, ...]) -> ir.Expr:
    if len(params) == 1:
        return V(params[0].name, params[0].type)
    return ir.Tuple(tuple(V(p.name, p.type) for p in params), type=TTuple(tuple(p.type for p in params)))


def derived_name(derivation: str, name: Name) -> DerivedName:
    return DerivedName(derivation, erase_types(name))


def jacobian(prep: Prepared) -> tuple[ir.Def, Nabla]:
    """[D f] (unoptimised): ``let ∂x = 1 in ∇⟦e⟧``."""
    d = prep.d
    nabla = Nabla(_witness(d.params), prep.fresh)
    env, lets = param_lms(nabla, d.params)
    body = nabla.expr(d.body, env)
    for dx, m in reversed(lets):
        body = ir.Let(dx, m, body)
    ret = TLM(tangent_type(d.arg_type), tangent_type(d.ret))
    return ir.Def(derived_name("D", d.name), ret, d.params, body, span=d.span), nabla


def _strip_param_lms(body: ir.Expr, n: int) -> ir.Expr:
    for _ in range(n):
        body = body.body
    return body


def forward(d: ir.Def, typed_jacobian: ir.Def, fresh: FreshNames, tupled: bool = True,
            nabla: Nabla | None = None, hand_written: frozenset = frozenset()) -> ir.Def:
    """[fwd f](x, dx) = [D f](x) ⊙ dx, every ∂-let applied to dx (§6.1).

    ``tupled`` (Fig. 8 with rule (CP), the default): a callee g is called once,
    as [fwdt g], for its value and tangent together; otherwise g(a) and
    [fwd g](a, da) are separate calls.  With ``nabla`` given, the result is the
    tupled [fwdt f] : (S, dS) -> (T, dT)."""
    params, n = d.params, len(d.params)
    s, ds = _io_params(d, fresh, "d")
    dxs = [fresh("d" + p.name) for p in params]
    out: list = []
    if n > 1:
        out.append((tuple(p.name for p in params), V(s.name)))
        out.append((tuple(dxs), V(ds.name)))
    env = {}
    lm_params = _param_lm_names(typed_jacobian.body, n)
    for lm, dx in zip(lm_params, dxs if n > 1 else [ds.name]):
        env[lm] = dx
    t = Transposer(fresh, V(ds.name), tupled, hand_written)
    body = _strip_param_lms(typed_jacobian.body, n)
    if nabla is not None:
        result = t.apply_tail(body, env, out, nabla.primal)
        ret = TTuple((d.ret, tangent_type(d.ret)))
        return ir.Def(derived_name("fwdt", d.name), ret, (s, ds), wrap(out, result), span=d.span)
    result = t.apply(body, None, env, out)
    return ir.Def(derived_name("fwd", d.name), tangent_type(d.ret), (s, ds), wrap(out, result), span=d.span)


def tupled_jacobian(d: ir.Def, typed_jacobian: ir.Def, nabla: Nabla) -> ir.Def:
    """[Dt f] : S -> (T, LM dS dT), Fig. 7's ∂̄f: the value with the Jacobian."""
    def pair(m: ir.Expr) -> ir.Expr:
        match m:
            case ir.Let(binder, rhs, body):
                return ir.Let(binder, rhs, pair(body))
            case ir.If(c, t, f):
                return ir.If(c, pair(t), pair(f))
            case ir.Assert(c, body):
                return ir.Assert(c, pair(body))
            case ir.Var(name):
                return tup(nabla.primal[name], m)
            case ir.Call("lmZero", ir.Tuple((_, value))):
                return tup(value, m)
        raise ValueError("a tupled tail must be a ∂-variable")
    ret = TTuple((d.ret, typed_jacobian.ret))
    return ir.Def(derived_name("Dt", d.name), ret, d.params, pair(typed_jacobian.body), span=d.span)


def reverse(d: ir.Def, typed_jacobian: ir.Def, nabla: Nabla, fresh: FreshNames) -> ir.Def:
    """[rev f](x, dr) = dr ⊙ᴿ [D f](x), by let-transposition (§6.2)."""
    params, n = d.params, len(d.params)
    s, dr = _io_params(d, fresh, "r")
    out: list = []
    if n > 1:
        out.append((tuple(p.name for p in params), V(s.name)))
    acc: dict[str, list] = {}
    t = Transposer(fresh)
    t.reverse(_strip_param_lms(typed_jacobian.body, n), V(dr.name), acc, nabla.primal, out)
    grads = []
    for p, lm in zip(params, _param_lm_names(typed_jacobian.body, n)):
        terms = acc.get(lm)
        grads.append(t.sum(terms) if terms else zero_tangent(V(p.name, p.type), p.type))
    result = grads[0] if n == 1 else tup(*grads)
    return ir.Def(derived_name("rev", d.name), tangent_type(d.arg_type), (s, dr), wrap(out, result), span=d.span)


def _io_params(d: ir.Def, fresh: FreshNames, prefix: str) -> tuple[ir.Param, ir.Param]:
    """(x : S) and its tangent/cotangent parameter; several parameters are one tuple."""
    if len(d.params) == 1:
        p = d.params[0]
        s = p
    else:
        s = ir.Param(fresh("x"), d.arg_type)
    t = tangent_type(d.arg_type) if prefix == "d" else tangent_type(d.ret)
    name = fresh(prefix + (s.name if len(d.params) == 1 else "x"))
    return s, ir.Param(name, t)


def _param_lm_names(body: ir.Expr, n: int) -> list[str]:
    names = []
    for _ in range(n):
        names.append(body.binder)
        body = body.body
    return names


__all__ = ["prepare", "jacobian", "forward", "reverse", "spread"]
