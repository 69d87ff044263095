"""Automatic differentiation: every algorithm is a derivation that turns a
function into a derived function in the same IR.

:class:`Derivations` generates derived functions on demand for one checked
program (``[D f]``, ``[fwd f]``, ``[rev f]`` …), type-checks what it made,
and caches it; the interpreter calls it for every derived signature.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import V, tup
from ..ir.names import DerivedName, erase_types, show_name
from ..ir.traverse import FreshNames, all_names, nodes
from ..opt.anf import desugar_map
from ..ir.types import TTuple
from ..opt.anf import anf, rename_apart, spread_arguments
from ..opt.cse import cse
from ..opt.inline import inline_calls
from ..opt.rules import apply_rules, program_rules
from ..opt.simplify import contains_linear_map, simplify
from ..prelude import Primitive, lookup
from ..prelude.linear_maps import LinearMap
from ..types.checker import CheckedProgram, Signature, check_def
from ..types.tangent import tangent_type
from . import deltarev, deltarev1, deltarev2, dualfwd, knossos
from .dual_numbers import translate_def
from .scalarise import scalarise

# seed 004: each algorithm's wrapper, and the translation [dual f] / [delta f] … it calls
DUAL_FAMILY = {m.REALS.algorithm: m for m in (dualfwd, deltarev1, deltarev2, deltarev)}
TRANSLATIONS = {m.REALS.derivation: m.REALS for m in DUAL_FAMILY.values()}
ALGORITHMS = {"D", "fwd", "rev", "Dt", "fwdt", *DUAL_FAMILY, *TRANSLATIONS}
STRATEGIES = ("tupled", "plain")  # how [fwd f] calls its callees (K2); the first is the default


class Derivations:
    def __init__(self, checked: CheckedProgram) -> None:
        self.checked = checked
        self.functions = checked.functions
        self.cache: dict[tuple, Any] = {}
        self.rules = program_rules(checked.program)
        # functions g with a user-written [fwd g]: tupled code calls that, not [fwdt g]
        self.hand_written_fwd = frozenset(erase_types(d.name.base) for d in checked.program.decls
                                          if isinstance(d, ir.Def) and isinstance(d.name, DerivedName)
                                          and d.name.derivation == "fwd")
        self._in_progress: set[tuple] = set()

    def generated_callee(self, call: ir.Call) -> ir.Def | None:
        """The generated definition a call of a derived function runs, if labrys made it
        (hand-written derivatives, primitives and recursive calls: None)."""
        if call.func.derivation not in ("fwd", "rev", "fwdt"):
            return None
        sig = self.functions.resolve(call.func, call.arg.type)
        if not isinstance(sig, Signature) or not isinstance(sig.decl, ir.Gdef):
            return None
        base = self.base_of(sig)
        if isinstance(base, Primitive) or (call.func.derivation, id(base)) in self._in_progress:
            return None
        if not isinstance(base.decl, ir.Def) or not calls_only_primitives(self.checked.typed(base.decl)):
            return None  # AD-MAP: a call of a non-leaf g stays a call of g's derivative
        return self.derive(call.func.derivation, base).d

    def base_of(self, sig: Signature) -> Signature | Primitive:
        base = self.functions.resolve(sig.name.base, sig.primal)
        if base is None:
            raise LabrysError(f"no function {show_name(sig.name.base)} to derive", sig.decl.span)
        return base

    def derive(self, derivation: str, sig: Signature, strategy: str = STRATEGIES[0]) -> "Derived":
        """The derived function ``[derivation f]`` for the user function ``sig``."""
        if strategy not in STRATEGIES:
            raise LabrysError(f"unknown strategy '{strategy}'; choose one of {', '.join(STRATEGIES)}")
        key = (derivation, id(sig), strategy)
        if key not in self.cache:
            self._in_progress.add((derivation, id(sig)))  # recursion: call, don't inline
            try:
                self.cache[key] = self._generate(derivation, sig, strategy)
            finally:
                self._in_progress.discard((derivation, id(sig)))
        return self.cache[key]

    def _generate(self, derivation: str, sig: Signature, strategy: str) -> "Derived":
        if not isinstance(sig.decl, ir.Def):
            # a translation of seed 004 takes a caller's hand-written [fwd g] / [rev g] instead
            wanted = {"dual": "fwd"}.get(derivation, "rev") if derivation in TRANSLATIONS else derivation
            raise LabrysError(f"cannot derive {show_name(sig.name)}: it has no definition "
                              f"(write (def [{wanted} {show_name(sig.name)}] ...) by hand)", sig.decl.span)
        d = self.checked.typed(sig.decl)
        fresh = FreshNames(all_names(d.body) | {p.name for p in d.params})
        if derivation in TRANSLATIONS or derivation in DUAL_FAMILY:
            return self._dual_numbers(derivation, sig, d, fresh)
        d = check_def(ir.Def(d.name, d.ret, d.params, desugar_map(d.body, fresh), span=d.span), self.functions)
        prep = knossos.prepare(d, bind_tail=derivation in ("fwdt", "Dt"))
        jac, nabla = knossos.jacobian(prep)
        typed_jac = check_def(jac, self.functions)
        stages = {"original": d, "anf": prep.d, "jacobian": typed_jac}
        if derivation == "D":
            return Derived(typed_jac, stages)
        if derivation == "Dt":
            return Derived(check_def(knossos.tupled_jacobian(prep.d, typed_jac, nabla), self.functions), stages)
        if derivation in ("fwd", "fwdt"):
            raw = knossos.forward(prep.d, typed_jac, prep.fresh, strategy == "tupled",
                                  nabla if derivation == "fwdt" else None, self.hand_written_fwd)
        elif derivation == "rev":
            raw = knossos.reverse(prep.d, typed_jac, nabla, prep.fresh)
        else:
            raise LabrysError(f"derivation '{derivation}' is not available", sig.decl.span)
        stages["unoptimised"] = raw
        typed = check_def(raw, self.functions)
        body = simplify(cse(anf(inline_calls(simplify(typed.body), self.generated_callee))))
        if self.rules:  # the program's own (rule ...) declarations, then clean up again
            body = simplify(check_def(ir.Def(raw.name, raw.ret, raw.params, apply_rules(body, self.rules)),
                                      self.functions).body)
        opt = check_def(ir.Def(raw.name, raw.ret, raw.params, body, span=raw.span), self.functions)
        if contains_linear_map(opt.body):
            raise LabrysError(f"internal: a linear map survived in {show_name(opt.name)}", d.span)
        stages["optimised"] = opt
        return Derived(opt, stages)

    def _dual_numbers(self, derivation: str, sig: Signature, d: ir.Def, fresh: FreshNames) -> "Derived":
        """Seed 004: the translation [dual f] / [delta f] …, or an algorithm's wrapper."""
        if derivation in TRANSLATIONS:
            apart = check_def(ir.Def(d.name, d.ret, d.params, rename_apart(spread_arguments(d.body, fresh), fresh),
                                     span=d.span),
                              self.functions)  # the final anf floats lets: no binder may shadow another
            scalar = scalarise(apart, fresh, self.functions)
            translated = check_def(translate_def(scalar, TRANSLATIONS[derivation], self.functions, fresh),
                                   self.functions)
            body = simplify(translated.body)
            opt = check_def(ir.Def(translated.name, translated.ret, translated.params, body, span=d.span),
                            self.functions)
            return Derived(opt, {"original": d, "scalarised": scalar, "translated": translated, "optimised": opt})
        module = DUAL_FAMILY[derivation]
        wrapper = check_def(module.wrapper(d), self.functions)
        support = self.translations_reached(module.REALS.derivation, sig)
        return Derived(wrapper, {"original": d, "optimised": wrapper}, support)

    def translations_reached(self, translation: str, sig: Signature) -> tuple[ir.Def, ...]:
        """[translation f] and the translations of every function it calls, transitively."""
        out, seen, todo = [], {id(sig)}, [sig]
        while todo:
            made = self.derive(translation, todo.pop()).d
            out.append(made)
            for x in nodes(made.body):
                if isinstance(x, (ir.Call, ir.FnRef)) and isinstance(x.func, DerivedName) \
                        and x.func.derivation == translation:
                    called = self.functions.resolve(x.func, x.arg.type) if isinstance(x, ir.Call) \
                        else self.functions.by_name(x.func)
                    base = self.base_of(called) if isinstance(called, Signature) else None
                    if isinstance(base, Signature) and id(base) not in seen:
                        seen.add(id(base))
                        todo.append(base)
        return tuple(out)

    def function_for(self, sig: Signature, compile_def: Callable[[ir.Def], Callable]) -> Callable:
        """Run-time code for the derived signature ``sig`` (called by the interpreter)."""
        deriv = sig.name.derivation
        base = self.base_of(sig)
        if isinstance(base, Primitive):
            return self._primitive(deriv, base, sig, compile_def)
        if deriv not in ALGORITHMS:
            raise LabrysError(f"derivation '{deriv}' is not available yet", sig.decl.span)
        return compile_def(self.derive(deriv, base).d)

    def _primitive(self, deriv: str, prim: Primitive, sig: Signature, compile_def) -> Callable:
        if deriv == "D":
            fwd = compile_def(primitive_rule_def("fwd", prim, sig.primal, self.functions))
            rev = compile_def(primitive_rule_def("rev", prim, sig.primal, self.functions))
            return lambda x: LinearMap(lambda dx: fwd((x, dx)), lambda dr: rev((x, dr)))
        return compile_def(primitive_rule_def(deriv, prim, sig.primal, self.functions))


def calls_only_primitives(d: ir.Def) -> bool:
    """True when d's body calls no user function (a leaf of the call graph)."""
    return not any(isinstance(x, ir.Call) and (not isinstance(x.func, str) or lookup(x.func) is None)
                   for x in nodes(d.body))


class Derived:
    """A generated def, the stages that produced it, and the generated defs it
    calls that a reader needs to see it whole (seed 004's translations)."""

    def __init__(self, d: ir.Def, stages: dict[str, ir.Def], support: tuple[ir.Def, ...] = ()) -> None:
        self.d, self.stages, self.support = d, stages, support


def primitive_rule_def(deriv: str, prim: Primitive, arg_type, functions) -> ir.Def:
    """``[fwd p]`` / ``[rev p]`` of a primitive as a def, from its rules."""
    fresh = FreshNames({"x", "dx"})
    ret_type = prim.typeof(arg_type)
    types = arg_type.elems if isinstance(arg_type, TTuple) else (arg_type,)
    several = isinstance(arg_type, TTuple)
    args = tuple(V(fresh("a"), t) for t in types) if several else (V("x", arg_type),)
    out = [(tuple(a.name for a in args), V("x"))] if several else []
    if deriv == "fwd":
        dargs = tuple(V(fresh("da")) for _ in types) if several else (V("dx"),)
        if several:
            out.append((tuple(a.name for a in dargs), V("dx")))
        body = prim.rules["fwd"](args, dargs, types)
        params = (ir.Param("x", arg_type), ir.Param("dx", tangent_type(arg_type)))
        ret = tangent_type(ret_type)
    else:
        parts = prim.rules["rev"](args, V("dx"), types)
        body = tup(*parts) if several else parts[0]
        params = (ir.Param("x", arg_type), ir.Param("dx", tangent_type(ret_type)))
        ret = tangent_type(arg_type)
    for binder, rhs in reversed(out):
        body = ir.Let(binder, rhs, body)
    return check_def(ir.Def(DerivedName(deriv, prim.name), ret, params, body), functions)
