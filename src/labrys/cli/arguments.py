"""Arguments given on the command line: each a JSON value or a .ks expression,
fitted to the overload of a function they match."""
from __future__ import annotations

import json
from typing import Any

from ..api import Function, Module, evaluate_typed
from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.types import TTuple, Type
from ..types.checker import Signature
from ..values import PrimError, from_python


def _cli_value(text: str, index: int, module: Module) -> tuple[str, Any, Type | None]:
    """An argument as ("json", value, None) or ("ks", value, type)."""
    try:
        return "json", json.loads(text), None
    except ValueError:
        value, t, _ = evaluate_typed(text, module, filename=f"<argument {index + 1}>")
        return "ks", value, t


def _param_count(sig: Signature) -> int:
    if isinstance(sig.decl, ir.Def):
        return len(sig.decl.params)
    return len(sig.arg.elems) if isinstance(sig.arg, TTuple) else 1


def _param_types(sig: Signature, n: int) -> tuple[Type, ...] | None:
    count = _param_count(sig)
    if count != n:
        return None
    return (sig.arg,) if count == 1 else sig.arg.elems


def _convert(arg: tuple[str, Any, Type | None], t: Type, index: int, strict: bool) -> Any:
    kind, value, vt = arg
    if kind == "ks":
        if vt != t:
            raise PrimError(f"argument {index + 1}: expected a value of type {t}, got {vt}")
        return value
    return from_python(value, t, f"argument {index + 1}", strict)


def choose_overload(f: Function, texts: list[str], module: Module) -> tuple[Signature, Any]:
    """The overload of ``f`` the CLI arguments fit (exact JSON kinds first), and its argument."""
    args = [_cli_value(t, i, module) for i, t in enumerate(texts)]
    errors: list[str] = []
    for strict in (True, False):
        for sig in f.sigs:
            types = _param_types(sig, len(args))
            if types is None:
                n = _param_count(sig)
                errors.append(f"{show_name(sig.name)} takes {n} argument{'s' * (n != 1)} ({sig.arg}), "
                              f"got {len(args)}")
                continue
            try:
                values = tuple(_convert(a, t, i, strict) for i, (a, t) in enumerate(zip(args, types)))
            except PrimError as exc:
                errors.append(str(exc))
                continue
            return sig, values[0] if len(values) == 1 else values
    raise LabrysError(errors[-1] if len(f.sigs) == 1 else f"no overload of {show_name(f.name)} accepts these "
                      "arguments: " + "; ".join(dict.fromkeys(errors)))
