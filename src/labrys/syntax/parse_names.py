"""The grammar of the pieces of a `.ks` declaration that are not expressions:
types, function names (``f``, ``[f T]``, ``[rev f]``, older ``fwd$f``), ``(wrt …)``
lists and parameter lists (docs/reference.md §1–2).  The expression parser
(:mod:`labrys.syntax.parser`) builds on these.
"""
from __future__ import annotations

import re

from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.names import DerivedName, Name, TypedName
from ..ir.types import BASE_TYPES, TLM, TBase, TLam, TSum, TTensor, TTuple, Type
from . import knossos_forms
from .sexpr import Atom, SExpr, SList

# Older Knossos programs spell [fwd f] as fwd$f (and [D $ranhashdoub] as D$$ranhashdoub).
_OLD_DERIVED = re.compile(r"(D|Dt|R|fwd|rev|revl|fwdt|revt|CL|shape|suffwdpass|sufrevpass|sufrev)\$(.+)\Z")
_TYPE_HEADS = {"Tuple", "Vec", "Tensor", "Lam", "Lambda", "LM", "Sum"}  # Lambda: lambda.ks's Lam
KEYWORDS = {"let", "if", "tuple", "lam", "assert", "inl", "inr", "case", "fn",
             "def", "edef", "gdef", "rule", ":"}


def error_at(msg: str, where: SExpr | Span) -> LabrysError:
    return LabrysError(msg, where if isinstance(where, Span) else where.span)


def symbol(x: SExpr, what: str) -> str:
    if isinstance(x, Atom) and x.kind == "sym":
        return x.value
    raise error_at(f"expected {what}", x)


def is_symbol(x: SExpr, value: str | None = None) -> bool:
    return isinstance(x, Atom) and x.kind == "sym" and (value is None or x.value == value)


# --- types ------------------------------------------------------------------


def parse_type(x: SExpr) -> Type:
    if isinstance(x, Atom):
        if x.kind == "sym" and x.value in BASE_TYPES:
            return BASE_TYPES[x.value]
        if x.kind == "sym" and x.value in ("Tuple", "Allocator"):   # Note [Destination-passing style]
            return TTuple(())
        if x.kind == "sym" and x.value in knossos_forms.TYPE_VARIABLES.get():
            return TBase(x.value)
        raise error_at(f"unknown type '{x.text}'", x)
    return type_from_items(x.items, x)


def type_from_items(items: tuple[SExpr, ...], where: SExpr | Span) -> Type:
    """A type written as a sequence: ``Tuple Float Float``, ``Vec (Vec Float)``."""
    if not items:
        raise error_at("expected a type", where)
    head = items[0]
    if len(items) == 1:
        return parse_type(head)
    if not is_symbol(head) or head.value not in _TYPE_HEADS:
        raise error_at("expected a type", head)
    args = items[1:]
    name = head.value

    def arity(k: int) -> None:
        if len(args) != k:
            raise error_at(f"'{name}' takes {k} type argument{'s' * (k != 1)}, got {len(args)}", where)

    if name == "Tuple":
        return TTuple(tuple(parse_type(a) for a in args))
    if name == "Vec":
        if len(args) == 2:   # Note [Sized vectors]: (Vec n T) of the oldest Knossos programs
            return TTensor(1, parse_type(args[1]))
        arity(1)
        return TTensor(1, parse_type(args[0]))
    if name == "Tensor":
        arity(2)
        rank = args[0]
        if not (isinstance(rank, Atom) and rank.kind == "int" and rank.value >= 1):
            raise error_at("a Tensor rank is a positive integer", rank)
        return TTensor(rank.value, parse_type(args[1]))
    arity(2)
    ctor = {"Lam": TLam, "Lambda": TLam, "LM": TLM, "Sum": TSum}[name]
    return ctor(parse_type(args[0]), parse_type(args[1]))


def edef_arg_type(x: SExpr) -> Type:
    """``(Float Float)`` (old style list of types), ``(Tuple ...)``, ``Float``."""
    if isinstance(x, SList) and x.items and is_symbol(x.items[0]) and x.items[0].value in _TYPE_HEADS:
        return parse_type(x)
    if isinstance(x, SList):
        types = tuple(parse_type(t) for t in x.items)
        return types[0] if len(types) == 1 else TTuple(types)
    return parse_type(x)


# --- names and parameters ---------------------------------------------------


def _looks_like_type(x: SExpr) -> bool:
    if isinstance(x, Atom):
        return x.kind == "sym" and (x.value in BASE_TYPES or x.value in ("Tuple", "Allocator"))
    return bool(x.items) and is_symbol(x.items[0]) and x.items[0].value in _TYPE_HEADS


def parse_name(x: SExpr) -> Name:
    """``f``, ``[f T]``, ``[rev f]``, ``[fwd [f (Tuple Float Float)]]``."""
    if isinstance(x, Atom):
        name = symbol(x, "a function name")
        old = _OLD_DERIVED.match(name)
        return DerivedName(knossos_forms.OLD_DERIVATIONS.get(old.group(1), old.group(1)), old.group(2)) if old else name
    if x.bracket != "[" or len(x.items) < 2:
        raise error_at("expected a function name such as f, [f Float] or [rev f]", x)
    head, rest = x.items[0], x.items[1:]
    if len(rest) == 2 and is_wrt(rest[1]) and not _looks_like_type(rest[0]):
        return DerivedName(symbol(head, "a derivation name"), parse_name(rest[0]), parse_wrt(rest[1]))
    if len(rest) == 1 and not _looks_like_type(rest[0]):
        return DerivedName(symbol(head, "a derivation name"), parse_name(rest[0]))
    return TypedName(symbol(head, "a function name"), type_from_items(rest, x))


def is_wrt(x: SExpr) -> bool:
    return isinstance(x, SList) and bool(x.items) and is_symbol(x.items[0], "wrt")


def parse_wrt(x: SExpr) -> tuple[str, ...]:
    """``(wrt a b ...)``: the parameters a derivative is taken with respect to (docs/activity.md)."""
    if not is_wrt(x) or len(x.items) < 2:
        raise error_at("expected '(wrt PARAM ...)', naming at least one parameter", x)
    names = tuple(symbol(a, "a parameter name") for a in x.items[1:])
    for k, a in enumerate(names):
        if a in names[:k]:
            raise error_at(f"parameter '{a}' appears twice in wrt", x.items[k + 1])
    return names


def parse_param(x: SExpr) -> ir.Param:
    if not (isinstance(x, SList) and len(x.items) >= 3 and is_symbol(x.items[1], ":")):
        raise error_at("expected a parameter '(name : Type)'", x)
    name = symbol(x.items[0], "a parameter name")
    if name in KEYWORDS or name in ("true", "false"):
        raise error_at(f"'{name}' is a keyword and cannot name a parameter", x.items[0])
    return ir.Param(name, type_from_items(x.items[2:], x), span=x.span)


def parse_params(x: SExpr) -> tuple[ir.Param, ...]:
    """``(x : T)``, ``((x : T) (y : U) ...)`` or ``()``."""
    if not isinstance(x, SList):
        raise error_at("expected parameters: '(x : T)', '((x : T) (y : U))' or '()'", x)
    if len(x.items) >= 2 and is_symbol(x.items[1], ":"):
        return (parse_param(x),)
    params = tuple(parse_param(p) for p in x.items)
    seen: dict[str, ir.Param] = {}
    for p in params:
        if p.name in seen:
            raise error_at(f"parameter '{p.name}' appears twice", p.span)
        seen[p.name] = p
    return params
