"""The generator: derived functions of one checked program, made on demand by
running a registered derivation's pipeline, and cached.

    Σ ⊢ f : S → T   ↦   Σ ⊢ [d f] : the type the derivation's signature gives

The derived functions of primitives (``[fwd mul]``, ``[D mul]``) are made
from the rules in the primitive's table entry by :func:`primitive_rule_def`.
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import V, tup
from ..ir.names import DerivedName, erase_types, show_name
from ..ir.traverse import FreshNames
from ..ir.types import TLM, TTuple, Type
from ..opt.rules import program_rules
from ..types.checker import CheckedProgram, Functions, Signature, check_def
from ..types.primitives import Primitive
from ..types.tangent import tangent_type
from .derivation import Derivation
from .pipeline import Derived, Work, fresh_for, run_pipeline
from .registry import REGISTRY, Registry


class Derivations:
    """Makes ``[d f]`` for the functions of one checked program (and caches them)."""

    def __init__(self, checked: CheckedProgram, registry: Registry = REGISTRY) -> None:
        self.checked, self.functions, self.registry = checked, checked.functions, registry
        self.cache: dict[tuple, Derived] = {}
        self.memo: dict[str, dict] = {}  # per-program tables passes share (e.g. partial derivatives)
        self.rules = program_rules(checked.program)
        # functions g with a user-written [fwd g]: tupled code calls that, not [fwdt g]
        self.hand_written_fwd = frozenset(erase_types(d.name.base) for d in checked.program.decls
                                          if isinstance(d, ir.Def) and isinstance(d.name, DerivedName)
                                          and d.name.derivation == "fwd")
        self.in_progress: set[tuple] = set()

    def base_of(self, sig: Signature) -> Signature | Primitive:
        """The function a derived signature ``[d f]`` is derived from."""
        base = self.functions.resolve(sig.name.base, sig.primal)
        if base is None:
            raise LabrysError(f"no function {show_name(sig.name.base)} to derive", sig.decl.span)
        return base

    def source(self, sig: Signature, entry: Derivation) -> ir.Def:
        """The typed def of ``sig`` to derive: written in the program, or generated (so
        derived functions can be derived again)."""
        if isinstance(sig.decl, ir.Def):
            return self.checked.typed(sig.decl)
        if isinstance(sig.decl, ir.Gdef):
            base = self.base_of(sig)
            if not isinstance(base, Primitive):
                return self.derive(sig.name.derivation, base, wrt=sig.name.wrt).d
        # an edef: callers use a hand-written derivative instead (a translation the fwd or rev one)
        wanted = "fwd" if entry.convention.direction == "forward" or entry.name == "dual" else "rev"
        raise LabrysError(f"cannot derive {show_name(sig.name)}: it has no definition "
                          f"(write (def [{wanted} {show_name(sig.name)}] ...) by hand)", sig.decl.span)

    def derive(self, derivation: str, sig: Signature, strategy: str | None = None,
               views: bool = False, wrt: tuple[str, ...] = ()) -> Derived:
        """``[derivation f]`` for the user function ``sig``; ``views``: every stage
        the pipeline can show (Note [Pass driver]); ``wrt``: with respect to these
        parameters only (Note [Activity in names] in labrys.ad.activity)."""
        entry = self.registry.get(derivation)
        strategy = _strategy(entry, strategy)
        wrt = tuple(wrt)
        if wrt:
            self.registry.signature(derivation, sig, sig.arg, self.functions, wrt)  # positionless errors
        key = (derivation, id(sig), strategy, views, wrt)
        if key not in self.cache:
            self.in_progress.add((derivation, id(sig)))  # recursion: call, don't inline
            try:
                d = self.source(sig, entry)
                work = Work(self.functions, fresh_for(d), self, strategy, wrt=wrt)
                self.cache[key] = run_pipeline(entry.pipeline, d, work, views)
            except LabrysError as err:
                if err.span is None:  # from generated code, which has no source: the function's own position
                    err.span = d.span or sig.decl.span
                raise
            finally:
                self.in_progress.discard((derivation, id(sig)))
        return self.cache[key]


def _strategy(entry: Derivation, strategy: str | None) -> str | None:
    if strategy is None:
        if entry.default_strategy is not None:
            return entry.default_strategy()
        return entry.strategies[0] if entry.strategies else None
    if strategy not in entry.strategies:
        choices = ", ".join(entry.strategies) if entry.strategies else "none (it has one way)"
        raise LabrysError(f"unknown strategy '{strategy}' for {entry.name}; choose one of {choices}")
    return strategy


class _OnDemand(CheckedProgram):
    """A checked program whose defs are typed when first asked for."""

    def typed(self, d: ir.Def) -> ir.Def:
        return self.defs.get((d.name, d.arg_type)) or check_def(d, self.functions)


def generate_alone(entry: Derivation, d: ir.Def, functions: Functions) -> ir.Def:
    """``[entry f]`` for the typed def ``d`` while its program is still being checked
    (Note [Signatures after generation] in labrys.ad.registry)."""
    generator = Derivations(_OnDemand(ir.Program((d,)), functions))
    work = Work(functions, fresh_for(d), generator, _strategy(entry, None))
    return run_pipeline(entry.pipeline, d, work).d


def primitive_rule_def(deriv: str, prim: Primitive, arg_type: Type, functions: Functions) -> ir.Def:
    """``[fwd p]``, ``[rev p]`` or ``[D p]`` of a primitive as a def, from its rules
    (Note [Derivative rules]); ``[D p]`` is ``lmMake`` of the other two."""
    fresh = FreshNames({"x", "dx", "y"})
    ret_type = prim.typeof(arg_type)
    types = arg_type.elems if isinstance(arg_type, TTuple) else (arg_type,)
    several = isinstance(arg_type, TTuple)
    args = tuple(V(fresh("a"), t) for t in types) if several else (V("x", arg_type),)
    x = V("x")

    def unpacked(body: ir.Expr) -> ir.Expr:
        body = ir.Let("y", ir.Call(prim.name, x), body)
        return ir.Let(tuple(a.name for a in args), x, body) if several else body

    def fwd(dx: ir.Expr) -> ir.Expr:
        dargs = tuple(V(fresh("da")) for _ in types) if several else (dx,)
        body = prim.rules["fwd"](args, dargs, types, V("y"))
        return ir.Let(tuple(a.name for a in dargs), dx, body) if several else body

    def rev(dr: ir.Expr) -> ir.Expr:
        parts = prim.rules["rev"](args, dr, types, V("y"))
        return tup(*parts) if several else parts[0]

    if "fwd" not in prim.rules or "rev" not in prim.rules:
        raise LabrysError(f"the primitive {prim.name} has no derivative rules")
    ds, dt = tangent_type(arg_type), tangent_type(ret_type)
    if deriv == "fwd":
        body, params, ret = unpacked(fwd(V("dx"))), (ir.Param("x", arg_type), ir.Param("dx", ds)), dt
    elif deriv == "rev":
        body, params, ret = unpacked(rev(V("dx"))), (ir.Param("x", arg_type), ir.Param("dx", dt)), ds
    elif deriv == "D":
        apply = ir.Lam("dx", ds, unpacked(fwd(V("dx"))))
        transposed = ir.Lam("dr", dt, unpacked(rev(V("dr"))))
        body, params, ret = ir.call("lmMake", apply, transposed), (ir.Param("x", arg_type),), TLM(ds, dt)
    else:
        raise LabrysError(f"[{deriv} {prim.name}]: primitives have only the derivatives D, fwd and rev")
    return check_def(ir.Def(DerivedName(deriv, prim.name), ret, params, body), functions)
