"""Polymorphic defs of programs written for the Knossos compiler.

Note [Polymorphic defs]
~~~~~~~~~~~~~~~~~~~~~~~
A def may name type variables after its name: ``(def id [a] a (x : a) x)``
(poly1.ks of the Knossos compiler's tests).  labrys instantiates such a def
at each argument type it is called with: matching the parameters' types
against the argument type gives each type variable a type, and the instance —
the def with those types written in — is an ordinary def of the same name,
overloaded by argument type, that is type-checked, run, compiled and
differentiated like any other.  A polymorphic def on its own is never
checked: a call at a type the parameters do not match is the usual "no
overload" error, and a body that is wrong at the instance's types is an error
at the def.  Every type variable must occur in the parameters' types (the
result type alone cannot determine it).  The parser reads a type variable as a base type of that name
(``TBase("a")``); a def whose types hold a base type no program can write
otherwise is a polymorphic def.
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import TypedName
from ..ir.traverse import map_bottom_up
from ..ir.types import BASE_TYPES, TLM, TBase, TLam, TSum, TTensor, TTuple, Type

MAX_INSTANCES = 1000   # polymorphic recursion at ever larger types would not stop


def type_variables(t: Type) -> set[str]:
    match t:
        case TBase(name):
            return set() if name in BASE_TYPES else {name}
        case TTuple(elems):
            return set().union(*map(type_variables, elems))
        case TTensor(_, elem):
            return type_variables(elem)
        case TLam(a, b) | TLM(a, b) | TSum(a, b):
            return type_variables(a) | type_variables(b)
    return set()


def is_polymorphic(d: ir.Decl) -> bool:
    return isinstance(d, ir.Def) and bool(type_variables(d.arg_type) | type_variables(d.ret))


def _match(pattern: Type, actual: Type, sub: dict[str, Type]) -> bool:
    match pattern:
        case TBase(name) if name not in BASE_TYPES:
            if name in sub:
                return sub[name] == actual
            sub[name] = actual
            return True
        case TTuple(elems):
            return isinstance(actual, TTuple) and len(elems) == len(actual.elems) \
                and all(_match(p, a, sub) for p, a in zip(elems, actual.elems))
        case TTensor(rank, elem):
            return isinstance(actual, TTensor) and actual.rank == rank and _match(elem, actual.elem, sub)
        case TLam(a, b) | TLM(a, b) | TSum(a, b):
            return type(actual) is type(pattern) and all(_match(p, q, sub) for p, q in zip((a, b), _parts(actual)))
    return pattern == actual


def _parts(t: Type) -> tuple[Type, Type]:
    match t:
        case TLam(a, b) | TLM(a, b) | TSum(a, b):
            return a, b
    raise AssertionError(t)


def substitute_type(t: Type, sub: dict[str, Type]) -> Type:
    match t:
        case TBase(name):
            return sub.get(name, t)
        case TTuple(elems):
            return TTuple(tuple(substitute_type(e, sub) for e in elems))
        case TTensor(rank, elem):
            return TTensor(rank, substitute_type(elem, sub))
        case TLam(a, b):
            return TLam(substitute_type(a, sub), substitute_type(b, sub))
        case TLM(a, b):
            return TLM(substitute_type(a, sub), substitute_type(b, sub))
        case TSum(a, b):
            return TSum(substitute_type(a, sub), substitute_type(b, sub))
    return t


def instantiate(d: ir.Def, arg: Type) -> ir.Def | None:
    """The instance of the polymorphic def ``d`` at argument type ``arg``, or None."""
    sub: dict[str, Type] = {}
    if not _match(d.arg_type, arg, sub):
        return None

    def one(e: ir.Expr) -> ir.Expr:
        match e:
            case ir.Lam(var, t, body):
                return ir.Lam(var, substitute_type(t, sub), body, span=e.span)
            case ir.Inj(left, t, x):
                return ir.Inj(left, substitute_type(t, sub), x, span=e.span)
            case ir.Call(TypedName(name, t), x):
                return ir.Call(TypedName(name, substitute_type(t, sub)), x, span=e.span)
        return e
    params = tuple(ir.Param(p.name, substitute_type(p.type, sub), span=p.span) for p in d.params)
    return ir.Def(d.name, substitute_type(d.ret, sub), params, map_bottom_up(d.body, one), span=d.span)


class Templates:
    """The polymorphic defs of a program and the instances made so far."""

    def __init__(self, defs: list[ir.Def]) -> None:
        self.defs: dict = {}
        for d in defs:
            missing = sorted(type_variables(d.ret) - type_variables(d.arg_type))
            if missing:
                raise LabrysError(f"type variable {missing[0]} of {d.name} does not occur in its parameters' types, "
                                  "so no call can determine it", d.span)
            self.defs.setdefault(d.name, []).append(d)
        self.made: list[ir.Def] = []

    def instance(self, name, arg: Type) -> ir.Def | None:
        for d in self.defs.get(name, ()):
            inst = instantiate(d, arg)
            if inst is not None:
                if len(self.made) >= MAX_INSTANCES:
                    raise LabrysError(f"more than {MAX_INSTANCES} instances of polymorphic defs "
                                      "(polymorphic recursion?)", d.span)
                self.made.append(inst)
                return inst
        return None
