"""The link step: before code is generated for a function, every derived
function it reaches is generated, transitively.

Note [Link step]
~~~~~~~~~~~~~~~~
Backends see only plain typed defs: a :class:`Linker` answers
``definition(sig)`` for every function of a program — the def written in the
program, or the one a derivation generates — and ``None`` for an edef (the
backend runs the user's implementation).  When a derived function is first
asked for, the linker generates it and then every derived function its body
calls or names, so the set of definitions is closed before any backend
compiles the first one (the compiled backend compiles a def together with
all its callees).  Derived functions of primitives come from the
primitive's rules (:func:`labrys.ad.derive.primitive_rule_def`).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..types.checker import Signature
from ..types.primitives import Primitive
from .derive import Derivations, primitive_rule_def
from .pipeline import calls


class Linker:
    def __init__(self, derivations: Derivations) -> None:
        self.derivations = derivations
        self.functions = derivations.functions
        self.generated: dict[int, ir.Def] = {}  # id(signature) -> its generated def

    def definition(self, sig: Signature) -> ir.Def | None:
        """The typed def ``sig`` runs (None: an edef)."""
        if isinstance(sig.decl, ir.Edef):
            return None
        if isinstance(sig.decl, ir.Def):
            return self.derivations.checked.typed(sig.decl)
        if id(sig) not in self.generated:
            self.close([sig])
        return self.generated[id(sig)]

    def close(self, todo: list[Signature]) -> None:
        """Generate every derived function reachable from ``todo``."""
        while todo:
            sig = todo.pop()
            if id(sig) in self.generated or not isinstance(sig.decl, ir.Gdef):
                continue
            d = self.generated[id(sig)] = self._generate(sig)
            todo.extend(self.callees(d))

    def callees(self, d: ir.Def) -> list[Signature]:
        """The user and derived functions d's body calls or names."""
        out = []
        for x in calls(d):
            target = self.functions.resolve(x.func, x.arg.type) if isinstance(x, ir.Call) \
                else self.functions.by_name(x.func)
            if isinstance(target, Signature):
                out.append(target)
        return out

    def reached(self, d: ir.Def) -> list[ir.Def]:
        """The generated defs ``d`` reaches, each once, callees before callers."""
        self.close(self.callees(d))
        order: list[ir.Def] = []
        seen: set[int] = set()
        stack = [(sig, False) for sig in reversed(self.callees(d))]
        while stack:
            sig, done = stack.pop()
            if done:
                order.append(self.generated[id(sig)])
            elif id(sig) not in seen and id(sig) in self.generated:
                seen.add(id(sig))
                stack.append((sig, True))
                stack.extend((c, False) for c in reversed(self.callees(self.generated[id(sig)])))
        return order

    def concrete(self, d: ir.Def):
        """d for the compiled backend, its BOGs concrete (Note [Concrete BOGs] in .bog_types):
        a ConcreteDef, None (d has no BOG) or why it cannot be."""
        from .bog_types import concrete_def
        return concrete_def(d, self)

    def original_argument(self, func, arg):
        from .bog_types import original_argument
        return original_argument(func, arg)

    def _generate(self, sig: Signature) -> ir.Def:
        base = self.derivations.base_of(sig)
        derivation = sig.name.derivation
        if isinstance(base, Primitive):
            return primitive_rule_def(derivation, base, sig.primal, self.functions)
        return self.derivations.derive(derivation, base, wrt=sig.name.wrt).d
