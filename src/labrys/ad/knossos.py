"""K1 and K2 of the AD map: the derivations ``D``, ``fwd``, ``rev`` of Ellis et
al.'s working notes (Fig. 6, §6.1, §6.2) and their tupled forms ``Dt``,
``fwdt`` (Figs 7–8), as pipelines of passes:

    f : S -> T               (def f T (x : S) e)
    [D f]   : S -> LM dS dT  = let ∂x = 1 in ∇⟦e⟧
    [fwd f] : (S, dS) -> dT  = [D f](x) ⊙ dx    pushed through (Fig. 4, §6.1)
    [rev f] : (S, dT) -> dS  = dr ⊙ᴿ [D f](x)   let-transposed (Fig. 5, §6.2)

Each is a def in the same IR, optimised (``opt.simplify``) so that no linear
map is left in ``fwd``/``rev``.  The stage titles are those of the 2019 notes'
Demo; its optimised and transposed Jacobians are view stages (Note [Pass
driver] in labrys.ad.pipeline), shown by ``labrys show --stages`` but not on
the path to the derivative, which transposes the Jacobian let by let.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V, tup
from ..ir.names import DerivedName, Name, erase_types
from ..ir.traverse import FreshNames, nodes
from ..ir.types import TLM, TTuple, Type, has_function
from ..opt.anf import anf, desugar_for_ad, hoist_loop_invariants, rename_apart, spread_arguments
from ..opt.cse import cse
from ..opt.inline import inline_calls
from ..opt.lm_laws import optimise_lm
from ..opt.rules import apply_rules
from ..opt.simplify import contains_linear_map, simplify
from ..prelude.arith import is_data
from ..types.checker import Signature, check_def
from ..types.primitives import Primitive, lookup
from ..types.tangent import tangent_type, zero_tangent
from .activity import inactive_params, wrt_result
from .jacobian import LOOPS, Nabla, param_lms
from .linear import Transposer, wrap
from .pipeline import Pass, Work


@dataclass
class Prepared:
    """A def made ready for ∇: renamed apart, in A-normal form."""

    d: ir.Def
    fresh: FreshNames


def _witness(params: tuple[ir.Param, ...]) -> ir.Expr:
    if len(params) == 1:
        return V(params[0].name, params[0].type)
    return ir.Tuple(tuple(V(p.name, p.type) for p in params), type=TTuple(tuple(p.type for p in params)))


def derived_name(derivation: str, name: Name) -> DerivedName:
    return DerivedName(derivation, erase_types(name))


def jacobian(prep: Prepared, wrt: tuple[str, ...] = ()) -> tuple[ir.Def, Nabla]:
    """[D f] (unoptimised): ``let ∂x = 1 in ∇⟦e⟧``; with ``wrt``, parameters it does
    not name and what is computed from them only have no ∂-variable (labrys.ad.activity)."""
    d = prep.d
    nabla = Nabla(_witness(d.params), prep.fresh, inactive=inactive_params(d, wrt))
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


def forward(d: ir.Def, typed_jacobian: ir.Def, fresh: FreshNames, nabla: Nabla, tupled: bool = True,
            tupled_result: bool = False, hand_written: frozenset = frozenset()) -> ir.Def:
    """[fwd f](x, dx) = [D f](x) ⊙ dx, every ∂-let applied to dx (§6.1).

    ``tupled`` (Fig. 8 with rule (CP), the default): a callee g is called once,
    as [fwdt g], for its value and tangent together; otherwise g(a) and
    [fwd g](a, da) are separate calls.  With ``tupled_result``, the result is the
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
    t = Transposer(fresh, nabla.primal, V(ds.name), tupled, hand_written)
    body = _strip_param_lms(typed_jacobian.body, n)
    if tupled_result:
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


def reverse(d: ir.Def, typed_jacobian: ir.Def, nabla: Nabla, fresh: FreshNames,
            wrt: tuple[str, ...] = ()) -> ir.Def:
    """[rev f](x, dr) = dr ⊙ᴿ [D f](x), by let-transposition (§6.2); with ``wrt``, the
    cotangents of those parameters only, in wrt's order (labrys.ad.activity)."""
    params, n = d.params, len(d.params)
    active = [p for p in params if p.name not in nabla.inactive] if wrt else list(params)
    s, dr = _io_params(d, fresh, "r")
    out: list = []
    if n > 1:
        out.append((tuple(p.name for p in params), V(s.name)))
    acc: dict[str, list] = {}
    t = Transposer(fresh, nabla.primal)
    t.reverse(_strip_param_lms(typed_jacobian.body, len(active)), V(dr.name), acc, nabla.primal, out)
    grads = {}
    for p, lm in zip(active, _param_lm_names(typed_jacobian.body, len(active))):
        terms = acc.get(lm)
        grads[p.name] = t.sum(terms) if terms else zero_tangent(V(p.name, p.type), p.type)
    if wrt:
        result = grads[wrt[0]] if len(wrt) == 1 else tup(*(grads[a] for a in wrt))
        ret = wrt_result(tuple(p for a in wrt for p in params if p.name == a))
        name = DerivedName("rev", erase_types(d.name), wrt)
    else:
        result = grads[params[0].name] if n == 1 else tup(*grads.values())
        ret, name = tangent_type(d.arg_type), derived_name("rev", d.name)
    return ir.Def(name, ret, (s, dr), wrap(out, result), span=d.span)


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


# --- the passes ---------------------------------------------------------------


def _anf_pass(bind_tail: bool) -> Pass:
    def run(d: ir.Def, work: Work) -> ir.Def:
        d = check_def(d.with_body(desugar_for_ad(d.body, work.fresh)), work.functions)
        body = anf(rename_apart(spread_arguments(d.body, work.fresh), work.fresh), work.fresh, bind_tail)
        work.notes["anf"] = out = d.with_body(hoist_loop_invariants(body))
        return out
    return Pass("anf", "Anf-ised original definition", run)


def _require_core(d: ir.Def) -> None:
    """Arguments and results in the first-order core of Ellis et al.'s Fig. 1: no
    function values, no sums (constructs inside the body are reported by ∇)."""
    where = [(f"the argument {p.name} : {p.type}", p.type, p.span) for p in d.params]
    for what, t, span in where + [(f"the result ({d.ret})", d.ret, d.span)]:
        if not is_data(t):
            kind = "a function value" if has_function(t) else "a value of a Sum type"
            raise LabrysError(f"Knossos AD does not support {kind} as {what} (the first-order core of "
                              "Ellis et al.'s Fig. 1 has neither)", span or d.span)


def _jacobian_pass(d: ir.Def, work: Work) -> ir.Def:
    jac, work.notes["nabla"] = jacobian(Prepared(d, work.fresh), work.wrt)  # reports unsupported constructs
    _require_core(d)
    return jac


def _forward_pass(tupled_result: bool) -> Pass:
    def run(jac: ir.Def, work: Work) -> ir.Def:
        return forward(work.notes["anf"], jac, work.fresh, work.notes["nabla"], work.strategy != "plain",
                       tupled_result, work.generator.hand_written_fwd)
    title = "Tupled forward derivative (unoptimised)" if tupled_result else "Forward derivative (unoptimised)"
    return Pass("forward", title, run)


def _reverse_pass(jac: ir.Def, work: Work) -> ir.Def:
    return reverse(work.notes["anf"], jac, work.notes["nabla"], work.fresh, work.wrt)


def _tupled_jacobian_pass(jac: ir.Def, work: Work) -> ir.Def:
    return tupled_jacobian(work.notes["anf"], jac, work.notes["nabla"])


def _optimise(d: ir.Def, work: Work) -> ir.Def:
    """Simplify, inline small leaf callees' derivatives, then the program's own rules.
    Renamed apart first (Note [Recomputed primal lets])."""
    body = rename_apart(d.body, work.fresh)
    body = simplify(inline_calls(simplify(body), lambda call: _leaf_callee(call, work)))
    if work.generator.rules:
        typed = check_def(d.with_body(body), work.functions)
        body = simplify(apply_rules(typed.body, work.generator.rules))
    if contains_linear_map(body):
        raise LabrysError(f"internal: a linear map survived in {d.name}", d.span)
    return d.with_body(body)


# Note [Recomputed primal lets]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Transposing a loop's Jacobian copies the primal lets of the loop body into the
# reverse loop (the recomputation the body's cotangent needs), under the same
# binder names as in the forward loop.  The simplifier's dead-let elimination
# counts uses by name, so a let the reverse loop never reads (GMM's sqnorm of Qz,
# recomputed per point and component) looked used through its forward twin and
# stayed.  Renaming apart before simplifying restores the invariant the
# simplifier relies on, and the dead recomputation goes.


def _leaf_callee(call: ir.Call, work: Work) -> ir.Def | None:
    """The generated derivative a call runs, when it is small enough to inline: the
    derivative of a leaf of the call graph (AD-MAP: a call of a non-leaf g stays a
    call of g's derivative; hand-written derivatives, primitives and recursion stay calls)."""
    if call.func.derivation not in ("fwd", "rev", "fwdt"):
        return None
    gen = work.generator
    sig = work.functions.resolve(call.func, call.arg.type)
    if not isinstance(sig, Signature) or not isinstance(sig.decl, ir.Gdef):
        return None
    base = gen.base_of(sig)
    if isinstance(base, Primitive) or (call.func.derivation, id(base)) in gen.in_progress:
        return None
    if not isinstance(base.decl, ir.Def) or not calls_only_primitives(gen.checked.typed(base.decl)):
        return None
    return gen.derive(call.func.derivation, base).d


def calls_only_primitives(d: ir.Def) -> bool:
    """True when d's body calls no user function (a leaf of the call graph)."""
    return not any(isinstance(x, ir.Call) and lookup(x.func) is None for x in nodes(d.body))


def _cse(d: ir.Def, work: Work) -> ir.Def:
    return d.with_body(simplify(cse(anf(d.body))))



# Views: the 2019 Demo's optimised and transposed Jacobians.

def _witness_of(d: ir.Def) -> ir.Expr:
    return _witness(d.params)


def _jacobian_optimised(jac: ir.Def, work: Work) -> ir.Def:
    return jac.with_body(simplify(optimise_lm(jac.body, _witness_of(jac))))


def _transposed(jac: ir.Def, work: Work) -> ir.Def:
    r_type = TLM(jac.ret.dst, jac.ret.src)
    return ir.Def(derived_name("R", jac.name.base), r_type, jac.params, C("lmTranspose", jac.body), span=jac.span)


def _transposed_optimised(r: ir.Def, work: Work) -> ir.Def:
    return r.with_body(simplify(optimise_lm(r.body, _witness_of(r))))


ANF, ANF_TAIL = _anf_pass(False), _anf_pass(True)
JACOBIAN = Pass("jacobian", "The full Jacobian (unoptimised)", _jacobian_pass)
JACOBIAN_VIEWS = (Pass("jacobian-optimised", "The full Jacobian (optimised)", _jacobian_optimised, view=True),)
TRANSPOSED_VIEWS = (Pass("transposed", "Transposed Jacobian", _transposed, view=True),
                    Pass("transposed-optimised", "Optimised transposed Jacobian", _transposed_optimised, view=True))


def _finish(mode: str) -> tuple[Pass, ...]:
    return (Pass("optimise", f"{mode} derivative (optimised)", _optimise),
            Pass("cse", f"{mode} derivative (CSE'd)", _cse))


D_PIPELINE = (ANF, JACOBIAN, *JACOBIAN_VIEWS)
DT_PIPELINE = (ANF_TAIL, JACOBIAN, Pass("tupled", "Tupled Jacobian (Fig. 7)", _tupled_jacobian_pass))
FWD_PIPELINE = (ANF, JACOBIAN, *JACOBIAN_VIEWS, _forward_pass(False), *_finish("Forward-mode"))
FWDT_PIPELINE = (ANF_TAIL, JACOBIAN, _forward_pass(True), *_finish("Tupled forward-mode"))
REV_PIPELINE = (ANF, JACOBIAN, *JACOBIAN_VIEWS, *TRANSPOSED_VIEWS,
                Pass("reverse", "Reverse-mode derivative (unoptimised)", _reverse_pass, source="jacobian"),
                *_finish("Reverse-mode"))



# --- the type maps: [d f] for f : S -> T (docs/reference.md §3) ----------------------

def fwd_signature(s: Type, t: Type) -> tuple[Type, Type]:
    return TTuple((s, tangent_type(s))), tangent_type(t)


def rev_signature(s: Type, t: Type) -> tuple[Type, Type]:
    return TTuple((s, tangent_type(t))), tangent_type(s)


def jacobian_signature(s: Type, t: Type) -> tuple[Type, Type]:
    return s, TLM(tangent_type(s), tangent_type(t))


def tupled(signature):
    def tupled_signature(s: Type, t: Type) -> tuple[Type, Type]:
        arg, res = signature(s, t)
        return arg, TTuple((t, res))
    return tupled_signature


def treats(prim: Primitive) -> str:
    """How these derivations treat a call of ``prim`` (labrys.ad.registry.coverage)."""
    if prim.name in LOOPS or prim.name in ("ts_sumbuild", "nTimes", "ccl"):  # desugared: opt.anf.desugar_for_ad
        return "own rule"
    if prim.nondiff:
        return "zero"
    return "rule" if "fwd" in prim.rules and "rev" in prim.rules else "no rule"
