"""Structured function names: ``f``, ``[f T]`` and ``[rev f]`` (docs/reference.md §1).

A plain name is a ``str``.  ``[f T]`` picks the overload of ``f`` at argument
type ``T``; ``[deriv f]`` names a derived function.
"""
from __future__ import annotations

from dataclasses import dataclass

from .types import Type, show_type


@dataclass(frozen=True, slots=True)
class TypedName:
    name: str
    type: Type

    def __str__(self) -> str:
        return f"[{self.name} {show_type(self.type)}]"


@dataclass(frozen=True, slots=True)
class DerivedName:
    """``[rev f]``; with ``wrt`` (activity, docs/activity.md), ``[rev f (wrt a b)]``:
    the derivative with respect to the named parameters of f only."""

    derivation: str
    base: "Name"
    wrt: tuple[str, ...] = ()

    def __str__(self) -> str:
        wrt = f" (wrt {' '.join(self.wrt)})" if self.wrt else ""
        return f"[{self.derivation} {show_name(self.base)}{wrt}]"


Name = str | TypedName | DerivedName


def show_name(name: Name) -> str:
    return name if isinstance(name, str) else str(name)


def erase_types(name: Name) -> Name:
    """``[rev [f T]]`` ↦ ``[rev f]``: the key under which overloads are grouped."""
    match name:
        case TypedName(base, _):
            return base
        case DerivedName(d, base, wrt):
            return DerivedName(d, erase_types(base), wrt)
    return name


def selected_type(name: Name) -> Type | None:
    """The argument type a structured name selects for its innermost function."""
    match name:
        case TypedName(_, t):
            return t
        case DerivedName(_, base):
            return selected_type(base)
    return None


def base_name(name: Name) -> str:
    match name:
        case TypedName(base, _):
            return base
        case DerivedName(_, base):
            return base_name(base)
    return name


def strip_suffix(name: str) -> str:
    """``add@ff`` ↦ ``add``: older programs suffix primitives with arg types."""
    at = name.find("@")
    return name[:at] if at > 0 else name
