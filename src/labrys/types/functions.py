"""Σ, the function table of the type checker (:mod:`labrys.types.checker`): user
functions grouped by name and overloaded by argument type, resolution of a call
among them, polymorphic instances, and derived functions made on demand through
the :class:`DerivationTable` the checker is given (the registry of labrys.ad,
which lives above this layer).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import DerivedName, Name, TypedName, base_name, erase_types, selected_type, show_name
from ..ir.types import TTuple, Type
from .poly import Templates
from .primitives import Primitive, lookup


@dataclass(frozen=True)
class Signature:
    """A user-level function: a def, an edef, or one a gdef generates."""

    name: Name
    arg: Type
    ret: Type
    decl: ir.Def | ir.Edef | ir.Gdef
    primal: Type | None = None  # derived functions: argument type of the original


class DerivationTable(Protocol):
    """What the checker asks of the registry of derivations."""

    def signature(self, name: str, base: "Signature | Primitive", arg: Type,
                  functions: "Functions", wrt: tuple[str, ...] = ()) -> tuple[Type, Type] | None:
        """The (argument, result) types of ``[name base]`` for base's argument type
        ``arg``; None when the derivation does not apply to these types.  Raises a
        LabrysError (without a position) for an unknown or unimplemented derivation."""


class NoDerivations:
    """A table that knows no derivation (programs checked without labrys.ad)."""

    def signature(self, name, base, arg, functions, wrt=()):
        raise LabrysError(f"unknown derivation '{name}'")


@dataclass
class Functions:
    """Σ: user functions grouped by name without types, overloaded by argument type,
    and the derivations that make derived functions."""

    derivations: DerivationTable = field(default_factory=NoDerivations)
    groups: dict[Name, list[Signature]] = field(default_factory=dict)
    templates: Templates = field(default_factory=lambda: Templates([]))   # Note [Polymorphic defs]

    def add(self, sig: Signature) -> None:
        group = self.groups.setdefault(erase_types(sig.name), [])
        for other in group:
            if other.arg == sig.arg and _same_primal(other, sig):
                raise LabrysError(f"{show_name(sig.name)} is already defined for argument type {sig.arg}",
                                  sig.decl.span, (f"first defined at {other.decl.span!r}",))
        group.append(sig)

    def candidates(self, name: Name) -> list[Signature]:
        return self.groups.get(erase_types(name), [])

    def resolve(self, name: Name, arg: Type) -> Signature | Primitive | None:
        wanted = selected_type(name)
        for sig in self.candidates(name):
            if sig.arg != arg:
                continue
            if isinstance(name, DerivedName) and wanted is not None and sig.primal not in (None, wanted):
                continue
            if isinstance(name, TypedName) and wanted != arg:
                continue
            return sig
        prim = lookup(name)
        if prim is not None and prim.typeof(arg) is not None:
            return prim
        return self.derive_on_demand(name, arg) or self.instantiate(name, arg)

    def instantiate(self, name: Name, arg: Type) -> Signature | None:
        inst = self.templates.instance(name, arg) if isinstance(name, str) else None
        if inst is None:
            return None
        sig = Signature(inst.name, inst.arg_type, inst.ret, inst)
        self.groups.setdefault(inst.name, []).append(sig)
        return sig

    def derive_on_demand(self, name: Name, arg: Type) -> Signature | None:
        """``[fwd f]`` called without a gdef: older Knossos programs derive every
        function implicitly; the signature is made (and kept) on first use.
        Derived functions of primitives (``[D mul]``) are made the same way."""
        if not isinstance(name, DerivedName):
            return None
        for base in self.candidates(name.base):
            if selected_type(name.base) not in (None, base.arg):
                continue
            conv = self.signature(name.derivation, base, base.arg, name.wrt)
            if conv is not None and conv[0] == arg:
                gdef = ir.Gdef(name.derivation, TypedName(base_name(base.name), base.arg)
                               if isinstance(base.name, str) else base.name, name.wrt, span=base.decl.span)
                sig = Signature(DerivedName(name.derivation, erase_types(base.name), name.wrt), conv[0], conv[1],
                                gdef, base.arg)
                self.groups.setdefault(erase_types(sig.name), []).append(sig)
                return sig
        prim = lookup(name.base)
        return self._derive_primitive(name, prim, arg) if prim is not None and not name.wrt else None

    def _derive_primitive(self, name: DerivedName, prim: Primitive, arg: Type) -> Signature | None:
        """[d p] of a primitive p: its primal type is the derived function's argument,
        or the first of a pair (the fwd-like and rev-like conventions)."""
        pair = arg.elems[0] if isinstance(arg, TTuple) and len(arg.elems) == 2 else None
        for primal in (arg, pair):
            if primal is None or prim.typeof(primal) is None:
                continue
            conv = self.signature(name.derivation, prim, primal)
            if conv is not None and conv[0] == arg:
                sig = Signature(DerivedName(name.derivation, prim.name), conv[0], conv[1],
                                ir.Gdef(name.derivation, TypedName(prim.name, primal)), primal)
                self.groups.setdefault(erase_types(sig.name), []).append(sig)
                return sig
        return None

    def signature(self, derivation: str, base: "Signature | Primitive", arg: Type,
                  wrt: tuple[str, ...] = ()) -> tuple[Type, Type] | None:
        if wrt:  # only then, so that a table written before activity keeps working
            return self.derivations.signature(derivation, base, arg, self, wrt)
        return self.derivations.signature(derivation, base, arg, self)

    def by_name(self, name: Name) -> Signature | None:
        """The function ``(fn name)`` refers to: [f T], or the only overload of f."""
        wanted = selected_type(name)
        sigs = [s for s in self.candidates(name)
                if wanted is None or (s.primal or s.arg) == wanted]
        if not sigs and isinstance(name, DerivedName):
            base = self.by_name(name.base)
            conv = base and self.signature(name.derivation, base, base.arg)
            return self.derive_on_demand(name, conv[0]) if conv else None
        return sigs[0] if len(sigs) == 1 else None


def _same_primal(a: Signature, b: Signature) -> bool:
    return a.primal is None or b.primal is None or a.primal == b.primal
