"""CHAD — combinatory homomorphic automatic differentiation (Vákár & Smeding, CHAD:
combinatory homomorphic automatic differentiation, §2, §7, §9, §10): the
pipelines of ``[chadF f]``/``[chadR f]`` (the translations, one per def, called
by every caller) and of the user-facing wrappers:

    [chadfwd f] (x, dx) = snd ([chadF f] x) • dx         : (S, dS) → dT
    [chadrev f] (x, dt) = snd ([chadR f] x) • dt         : (S, dT) → dS

for first-order S and T (Thm 8.3; a function-typed parameter or result is a
positioned error).  Higher-order values, sums and recursion are fine *inside* f.
The forward translation runs the primal fully before the tangent (§11.1).

Before translating, the def is prepared as the dual-number algorithms prepare
theirs: a ``map``/``build``/``fold`` whose function is not a literal λ is
eta-expanded (so its call goes through the application rule and makes a
copower, as in the paper's Fig. 2), tuple patterns are taken apart, ``map``
over a vector becomes a ``build`` of ``index`` (the binder rule of §10),
binders are renamed apart (``idx(x; Γ̄)`` must be unambiguous, pitfall 2) and
vector arithmetic is reduced to build/index/ifold (:mod:`.scalarise`).
"""
from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
from dataclasses import replace
from typing import Callable

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V, index_type
from ..ir.names import DerivedName, erase_types, show_name
from ..ir.traverse import children, map_bottom_up
from ..ir.types import TLam, TTuple, has_function
from ..opt.anf import desugar_for_ad, rename_apart, spread_arguments
from ..types.checker import check_def
from ..types.primitives import Primitive, lookup
from ..types.tangent import tangent_type
from ..util.deep import deep
from . import chad_fwd, chad_loops, chad_rev, chad_runtime, dual_numbers  # noqa: F401  (the run-time primitives)
from .chad_common import name_applied_functions
from .chad_inline import inline_lowered_callees
from .chad_linear import check_linear
from .chad_linear_view import show_linear_def
from .chad_lower import guard_lowered_calls, is_lowered, lower_body, runtime_left, translations_called
from .chad_lower_sums import shape_sums
from .chad_simplify import simplify_def
from .pipeline import ORIGINAL, Pass, Work
from .scalarise import scalarise

_log = logging.getLogger("labrys")
_LOOP_FUNCTION = {"map": 0, "build": 1, "sumbuild": 1, "fold": 0, "ifold": 1}



@deep
def _eta_and_patterns(e: ir.Expr, fresh) -> ir.Expr:
    """Literal λs for loops (eta-expansion) and lets with tuple patterns taken apart;
    e is typed, the result is re-checked."""
    def rewrite(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Call) and x.func in _LOOP_FUNCTION and not isinstance(x.arg, ir.Tuple) \
                and isinstance(x.arg.type, TTuple) and lookup(x.func) is not None:
            # (map p) with p : (Tuple (Lam A B) (Vec A)): its arguments taken apart, typed, then as below
            t, n = fresh("t"), len(x.arg.type.elems)
            parts = tuple(ir.Get(k + 1, n, ir.Var(t, type=x.arg.type), type=e) for k, e in enumerate(x.arg.type.elems))
            spread = ir.Call(x.func, ir.Tuple(parts, type=x.arg.type), type=x.type, span=x.span)
            return ir.Let(t, x.arg, rewrite(spread))
        if isinstance(x, ir.Call) and x.func in _LOOP_FUNCTION and isinstance(x.arg, ir.Tuple) \
                and lookup(x.func) is not None:
            k = _LOOP_FUNCTION[x.func]
            f = x.arg.elems[k] if k < len(x.arg.elems) else None
            if f is not None and not isinstance(f, ir.Lam) and isinstance(f.type, TLam):
                v, h = fresh("e"), fresh("h")
                elems = list(x.arg.elems)
                elems[k] = ir.Lam(v, f.type.arg, ir.App(ir.Var(h), ir.Var(v)))
                return ir.Let(h, f, ir.Call(x.func, ir.Tuple(tuple(elems)), span=x.span))
        if isinstance(x, ir.Call) and x.func == "map" and isinstance(x.arg, ir.Tuple) and len(x.arg.elems) == 2 \
                and isinstance(x.arg.elems[0], ir.Lam) and getattr(x.arg.elems[1].type, "rank", 1) > 1:
            f, v = x.arg.elems  # the binder rule of §10 at any rank: build over the index tuple
            i, vs = fresh("i"), fresh("v")
            body = ir.Let(f.var, C("index", ir.Var(i), ir.Var(vs)), f.body)
            return ir.Let(vs, v, C("build", C("size", ir.Var(vs)), ir.Lam(i, index_type(v.type), body)))
        if isinstance(x, ir.Let) and not isinstance(x.binder, str):
            t = fresh("t")
            body = x.body
            n = len(x.binder)
            for k in range(n - 1, -1, -1):
                body = ir.Let(x.binder[k], ir.Get(k + 1, n, ir.Var(t)), body)
            return ir.Let(t, x.rhs, body, span=x.span)
        return x
    return map_bottom_up(e, rewrite)


def prepare(d: ir.Def, work: Work) -> ir.Def:
    d = check_def(d.with_body(_eta_and_patterns(d.body, work.fresh)), work.functions)
    d = check_def(d.with_body(desugar_for_ad(d.body, work.fresh)), work.functions)
    return d.with_body(rename_apart(spread_arguments(d.body, work.fresh), work.fresh))


@contextlib.contextmanager
def _no_gc_pauses():
    """Note [Allocation-heavy translation]: the translation allocates several IR nodes per
    source node and frees none; with the cyclic collector on, its full collections walk
    every live node again and again, which made a 10⁴-let chain take several times longer.
    Nothing it allocates is cyclic garbage, so the collector is paused while it runs."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def translation_pipeline(module, what: str) -> tuple[Pass, ...]:
    def translate(d: ir.Def, work: Work) -> ir.Def:
        with _no_gc_pauses():
            out, linear = module.translate_def(d, work.functions, work.fresh)
        out = check_linear(out, linear, work.functions)  # Fig. 5, on every translation
        work.notes["chad linear"] = linear
        work.notes["chad term"] = out
        return out.with_body(name_applied_functions(out.body, work.fresh))

    def simplify(d: ir.Def, work: Work) -> ir.Def:
        work.notes["chad term"] = d
        if raw_requested():
            return d
        linear = work.notes["chad linear"]
        with _no_gc_pauses():
            out = simplify_def(d, work.functions, work.fresh, linear)
        try:
            out = check_linear(out, linear, work.functions)  # Fig. 5 again: the simplifier keeps it linear
        except LabrysError as exc:  # Note [Raw CHAD]: keep the raw term, which passed the lint
            _log.info("CHAD's simplifier made a term the linearity lint cannot check (%s); "
                      "the raw translation of %s is used", exc.message, d.name)
            return d
        work.notes["chad term"] = out
        return out

    def lower(d: ir.Def, work: Work) -> ir.Def:
        """§9: the term as first-order `.ks` (chad_lower.py): each linear former with a first-order
        lowering replaced by plain IR — all or nothing (Note [All or nothing]); otherwise its
        formers stay the dynamic run time's primitives (⊸ as lam, copowers as append-tree lists,
        0 symbolic).  An applied compound linear map, (snd (y x)) • w, is named, as `.ks` calls
        only names."""
        why = _not_first_order(d)
        try:
            first = check_def(d.with_body(lower_body(d.body, work.fresh, d.span)), work.functions)
            lowered = check_def(d.with_body(name_applied_functions(shape_sums(first.body, work.fresh), work.fresh)),
                                work.functions)
        except LabrysError as exc:  # a lowering the checker refuses is a labrys bug: keep the dynamic term
            lowered, why = None, f"internal: the lowered term does not type-check ({exc.message})"
        if lowered is not None and why is None:
            why = _not_lowered_because(lowered, work)
        if why is None:
            lowered = _inline_loop_steps(lowered, work)
        work.notes["chad lowered"] = why is None
        if why is not None:
            _log.info("CHAD's §9 lowering left %s on the dynamic run time: %s", show_name(d.name), why)
            forward = d.name.derivation == chad_fwd.TRANSLATION

            def lowered_callee(call: ir.Call) -> bool:
                return call.func != d.name and call.func.derivation in TRANSLATIONS \
                    and translation_lowered(call.func.derivation, call.func, call.arg.type, work)
            guarded = guard_lowered_calls(d.body, work.fresh, lowered_callee, forward)
            return d.with_body(name_applied_functions(guarded, work.fresh))
        return lowered

    def shows(work: Work) -> Callable[[], str]:  # printed when shown: the linear set as it is now
        return functools.partial(show_linear_def, work.notes["chad term"], frozenset(work.notes["chad linear"]))

    name = f"[{module.TRANSLATION} f]"
    return (Pass("prepare", "Literal λs, map as build, binders renamed apart", prepare),
            Pass("scalarise", "Vector arithmetic as build, index and ifold",
                 lambda d, work: scalarise(d, work.fresh, work.functions, sums=True)),
            Pass("translate", f"{what}: {name}, the raw term in Fig. 5's linear language (checked)", translate,
                 shows=shows),
            Pass("simplify", "App. B's simplifier: Table 1, linear β, f • 0 → 0, copower fusion "
                 "(Fig. 5 checked again)", simplify, shows=shows),
            Pass("lower", "§9.2's lowering, as the .ks that runs: first-order where the types allow (0 a literal, "
                 "+ as add/ts_add, loops as ifold), else ⊸ as lam, copowers as append-tree lists, 0 symbolic",
                 lower))


# Note [Loop steps inlined after lowering]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The lowering of a loop (chad_lower.py) binds the step's translation, y = \p -> (primal,
# backpropagator), and applies it in the primal loop and in the reverse one.  Left as a
# let-bound λ, the compiled backend defunctionalises it: every step stores a closure record,
# every backpropagator call goes through a dispatcher, and a one-hot the backpropagator returns
# is materialised as a dense vector, since only code inline in a loop body writes it as one
# element (the compiled backend's Note [Sparse cotangents, compiled]).  In ADBench GMM each
# step of matvec's inner loop did that, so chadrev cost d³ per point and component instead of
# d².  So after a def is lowered, the simplifier runs once more with λs of up to
# LOOP_STEP_LIMIT nodes copied to their uses and β-reduced: the step's primal and its
# backpropagator's body become the loops' bodies.  This copies code, never work (each
# application ran the step's body anyway).  If the result is not lowered (a symbolic 0 the
# rules made), the def as lowered before is kept.
LOOP_STEP_LIMIT = 2000


_LOOPS = frozenset({"fold", "rfold", "ifold", "build", "sumbuild", "ts_sumbuild"})


def _has_loop_and_bound_lambda(e: ir.Expr) -> bool:
    """Whether e has a loop and a let-bound λ (else there is no loop step to inline: a long let
    chain is not simplified a second time)."""
    loop = bound = False
    stack = [e]
    while stack and not (loop and bound):
        x = stack.pop()
        loop = loop or (isinstance(x, ir.Call) and x.func in _LOOPS)
        bound = bound or (isinstance(x, ir.Let) and isinstance(x.rhs, ir.Lam))
        stack.extend(c for c, _ in children(x))
    return loop and bound


def _inline_loop_steps(d: ir.Def, work: Work) -> ir.Def:
    # only reverse callees (Note [Lowered callees inlined]): inlining forward ones took hand's
    # [chadF hand_objective] over the compiled backend's statement limit, for no measured gain
    d, inlined = inline_lowered_callees(d, work, (chad_rev.TRANSLATION,), translation_lowered)
    if not inlined and not _has_loop_and_bound_lambda(d.body):
        return d
    try:
        with _no_gc_pauses():
            out = simplify_def(d, work.functions, work.fresh, set(work.notes.get("chad linear", ())),
                               copy_limit=LOOP_STEP_LIMIT)
            out = check_def(out.with_body(lower_body(out.body, work.fresh, d.span)), work.functions)
            # the steps inlined, a Σ's one-hots at an enclosing loop's index come out of it
            out = check_def(out.with_body(name_applied_functions(shape_sums(out.body, work.fresh), work.fresh)),
                            work.functions)
            out = check_def(out.with_body(_name_tuple_arguments(out.body, work.fresh)), work.functions)
    except LabrysError as exc:
        _log.info("CHAD's loop steps of %s were not inlined (%s)", show_name(d.name), exc.message)
        return d
    return d if _not_lowered_because(out, work) is not None else out


def _name_tuple_arguments(e: ir.Expr, fresh) -> ir.Expr:
    """A call's tuple-typed argument that the simplifier left as a compound expression is named
    and spread into a literal tuple of its parts (the call's arguments), the form the lowering
    makes: (ts_add (h w)) → (let (a (h w)) (ts_add (get$1$2 a) (get$2$2 a)))."""
    def rewrite(x: ir.Expr) -> ir.Expr:
        t = x.arg.type if isinstance(x, ir.Call) else None
        if isinstance(t, TTuple) and t.elems and not isinstance(x.arg, (ir.Tuple, ir.Var)):
            a, n = fresh("a"), len(t.elems)
            parts = ir.Tuple(tuple(ir.Get(k + 1, n, ir.Var(a, type=t), type=s) for k, s in enumerate(t.elems)), type=t)
            return ir.Let(a, x.arg, ir.Call(x.func, parts, type=x.type, span=x.span), type=x.type, span=x.span)
        return x
    return map_bottom_up(e, rewrite)


def _not_first_order(d: ir.Def) -> str | None:
    """Note [All or nothing]: a translation is lowered only if its parameters and primal result are
    first-order, so every linear value it receives from a caller can be made dense (chadDense)."""
    primal = d.ret.elems[0] if isinstance(d.ret, TTuple) and d.ret.elems else d.ret
    if any(has_function(p.type) for p in d.params) or has_function(primal):
        return "a function-typed parameter or result (its (co)tangents may be symbolic at run time)"
    return None


def _not_lowered_because(d: ir.Def, work: Work) -> str | None:
    """Why d cannot run without the dynamic run time (None: it can), Note [All or nothing]."""
    left = runtime_left(d.body)
    if left is not None:
        return f"'{left.func}' at type {left.arg.type} has no first-order lowering"
    for call in translations_called(d.body, TRANSLATIONS):
        if call.func == d.name:
            continue  # self-recursion: lowered together
        if not translation_lowered(call.func.derivation, call.func, call.arg.type, work):
            return f"it calls {show_name(call.func)}, which keeps the dynamic run time"
    return None


def translation_lowered(derivation: str, name, arg, work: Work, of_base: bool = False) -> bool:
    """Whether the CHAD translation ``[derivation g]`` at ``arg`` is lowered (a mutually
    recursive one still being made counts as not lowered); ``of_base``: name is g itself."""
    try:
        target = work.functions.resolve(name, arg)
        if target is None or isinstance(target, Primitive):
            return False
        base = target if of_base else work.generator.base_of(target)
        if isinstance(base, Primitive) or (derivation, id(base)) in work.generator.in_progress:
            return False
        return is_lowered(work.generator.derive(derivation, base).d)
    except LabrysError:  # it cannot be derived: its callers report that themselves
        return False


def raw_requested() -> bool:
    """Note [Raw CHAD]: LABRYS_CHAD_RAW=1 skips the simplifier (to measure what it saves).
    The raw term is also what is used when the linearity lint cannot check the simplified
    one (the lint is syntactic and may not see that a rewritten part is 0); a note
    names the function."""
    return os.environ.get("LABRYS_CHAD_RAW", "") not in ("", "0")


def require_first_order(d: ir.Def, algorithm: str) -> None:
    """Thm 8.3: the parameters and the result of f are first-order."""
    for what, t in (("parameter", d.arg_type), ("result", d.ret)):
        if has_function(t):
            raise LabrysError(f"{algorithm} of a function with a function-typed {what} ({t}) is out of scope "
                              "(Vákár & Smeding, CHAD, Thm 8.3: the derivative is correct for first-order "
                              "inputs and outputs); differentiate a first-order caller of it", d.span)


def _translation_of(d: ir.Def, translation: str, work: Work) -> bool:
    """Whether [translation f] of the user def d is lowered (its wrapper then needs no chadDense)."""
    return translation_lowered(translation, d.name, d.arg_type, work, of_base=True)


TRANSLATIONS = (chad_rev.TRANSLATION, chad_fwd.TRANSLATION)
# the registry's word on the backend (Note [All or nothing]): a def whose linear formers all lower
# compiles; one left with copowers, tagged sum cotangents or powers runs on python, with a note
COMPILED_WHERE = "where the §9 lowering applies (else python, with a note)"


def rev_wrapper(d: ir.Def, work: Work) -> ir.Def:
    """(def [chadrev f] dS ((x : S) (dt : dT)) (let ((p ([chadR f] x)) (back (get$2$2 p))) (chadDense x (back dt))))"""
    require_first_order(d, "chadrev")
    base = erase_types(d.name)
    p = "p"  # a fixed name: the wrapper is the same whether or not the stages were shown
    result = ir.App(V("back"), V("dt"))
    if not _translation_of(d, chad_rev.TRANSLATION, work):  # its zeros may be symbolic: materialise them
        result = C("chadDense", V("x"), result)
    back = ir.Let("back", ir.Get(2, 2, V(p)), result)
    body = ir.Let(p, ir.Call(DerivedName(chad_rev.TRANSLATION, base), V("x")), back)
    params = (ir.Param("x", d.arg_type), ir.Param("dt", tangent_type(d.ret)))
    return ir.Def(DerivedName("chadrev", base), tangent_type(d.arg_type), params, body, span=d.span)


def fwd_wrapper(d: ir.Def, work: Work) -> ir.Def:
    """(def [chadfwd f] dT ((x : S) (dx : dS))
         (let ((p ([chadF f] x)) (tan (get$2$2 p))) (chadDense (get$1$2 p) (tan dx))))"""
    require_first_order(d, "chadfwd")
    base = erase_types(d.name)
    p = "p"  # a fixed name: the wrapper is the same whether or not the stages were shown
    result = ir.App(V("tan"), V("dx"))
    if not _translation_of(d, chad_fwd.TRANSLATION, work):  # its zeros may be symbolic: materialise them
        result = C("chadDense", ir.Get(1, 2, V(p)), result)
    tangent = ir.Let("tan", ir.Get(2, 2, V(p)), result)
    body = ir.Let(p, ir.Call(DerivedName(chad_fwd.TRANSLATION, base), V("x")), tangent)
    params = (ir.Param("x", d.arg_type), ir.Param("dx", tangent_type(d.arg_type)))
    return ir.Def(DerivedName("chadfwd", base), tangent_type(d.ret), params, body, span=d.span)


REV_TRANSLATION = translation_pipeline(chad_rev, "Reverse CHAD, Rev[Γ] (§7.5)")
FWD_TRANSLATION = translation_pipeline(chad_fwd, "Forward CHAD, Fwd[Γ] (§7.4)")
REV_PIPELINE = (*(replace(p, view=True) for p in REV_TRANSLATION),
                Pass("wrapper", "The wrapper [chadrev f] (Thm 8.3)", rev_wrapper, source=ORIGINAL))
FWD_PIPELINE = (*(replace(p, view=True) for p in FWD_TRANSLATION),
                Pass("wrapper", "The wrapper [chadfwd f] (Thm 8.3)", fwd_wrapper, source=ORIGINAL))


def treats(prim: Primitive) -> str:
    """How CHAD treats a call of ``prim`` (registry.coverage)."""
    from .chad_rev_ops import LOOPS
    if prim.name in LOOPS or prim.name in ("index", "constVec", "Vec_init", "map", "unzip"):
        return "own rule"
    return dual_numbers.treats(prim)  # the same preparation (scalarise) reaches the same primitives
