"""Single faults planted in the derivative rules of the primitives (Note
[Derivative rules] in labrys.types.primitives): the mutants, and a context
that installs one.

A rule returns IR: ``fwd`` one tangent, ``rev`` one cotangent per argument.
A mutant rewrites that IR at one site, in the rule's output for every call:

- ``neg``:    flip the sign of the whole (co)tangent (``ts_neg``);
- ``scale2``: scale it by 2 (``ts_scale 2.0``);
- ``zero``:   drop a whole cotangent of one argument (rev only);
- ``drop``:   drop one term of an ``add``/``sub``/``ts_add`` inside it;
- ``swap``:   swap the two arguments of a non-commutative call inside it
              (``sub``, ``div``, ``pow``, …), or two cotangents of a rev rule.

The sites are numbered in pre-order; a mutant names (primitive, rule,
component, operation, site), and applies wherever the rule's output has that
site (the same rule at other argument types usually has the same shape).
"""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any, Iterator

from labrys.ir import nodes as ir
from labrys.ir.build import C
from labrys.ir.nodes import Var, const
from labrys.prelude import PRIMITIVES

TERMS = ("add", "sub", "ts_add")
COMMUTATIVE = {"add", "mul", "ts_add", "dot", "ts_dot", "max", "min", "eq", "ne"}
MAX_SITES = 6  # inner sites per (co)tangent


@dataclass(frozen=True)
class Mutant:
    prim: str
    rule: str             # "fwd" or "rev"
    component: int        # which cotangent of a rev rule (0 for fwd); for "swap" of a rev rule: the first
    op: str               # neg, scale2, zero, drop0, drop1, swap, swapc
    site: int = 0         # inner site (drop/swap), pre-order
    other: int = 0        # the second cotangent of "swapc"

    def describe(self) -> str:
        where = f"cotangent {self.component + 1}" if self.rule == "rev" else "tangent"
        what = {"neg": "sign flipped", "scale2": "scaled by 2", "zero": "dropped",
                "drop0": f"first term dropped at site {self.site}", "drop1": f"second term dropped at site {self.site}",
                "swap": f"arguments swapped at site {self.site}",
                "swapc": f"swapped with cotangent {self.other + 1}"}[self.op]
        return f"{self.prim} {self.rule}: {where} {what}"


def _args(e: ir.Expr) -> tuple[ir.Expr, ...]:
    return e.arg.elems if isinstance(e.arg, ir.Tuple) else (e.arg,)


def _children(e: ir.Expr) -> list[tuple[str, ir.Expr]]:
    if isinstance(e, ir.Call):
        return [("arg", e.arg)]
    if isinstance(e, ir.Tuple):
        return [(f"elems{k}", x) for k, x in enumerate(e.elems)]
    return [(f.name, getattr(e, f.name)) for f in dataclasses.fields(e)
            if isinstance(getattr(e, f.name, None), ir.Expr) and f.name not in ("type", "span")]


def sites(e: ir.Expr, kind: str) -> list[tuple]:
    """Paths (tuples of field names) of the calls a ``drop`` or ``swap`` can change."""
    out, stack = [], [((), e)]
    while stack:
        path, x = stack.pop()
        if isinstance(x, ir.Call) and isinstance(x.func, str):
            args = _args(x)
            base = x.func.split("@")[0]
            if kind == "drop" and base in TERMS and len(args) == 2:
                out.append(path)
            if kind == "swap" and base not in COMMUTATIVE and len(args) == 2 and args[0] != args[1]:
                out.append(path)
        stack.extend((path + (name,), c) for name, c in reversed(_children(x)))
    return out[:MAX_SITES]


def _replace(e: ir.Expr, path: tuple, f) -> ir.Expr:
    if not path:
        return f(e)
    name, rest = path[0], path[1:]
    if name.startswith("elems"):
        k = int(name[5:])
        elems = list(e.elems)
        elems[k] = _replace(elems[k], rest, f)
        return dataclasses.replace(e, elems=tuple(elems))
    return dataclasses.replace(e, **{name: _replace(getattr(e, name), rest, f)})


SCALE = {"neg": -1.0, "scale2": 2.0}  # the factor of each scaling fault


def scaled(op: str, e: ir.Expr) -> ir.Expr:
    """The (co)tangent e with the fault op (neg, scale2, zero): ``ts_neg`` or ``ts_scale``
    of it, in the vocabulary every algorithm's tangent spaces share."""
    return C("ts_neg", e) if op == "neg" else C("ts_scale", const(0.0 if op == "zero" else SCALE[op]), e)


def mutate_expr(e: ir.Expr, op: str, site: int) -> ir.Expr | None:
    """``e`` with the fault ``op`` at ``site``; None if e has no such site."""
    if op in ("neg", "scale2", "zero"):
        return scaled(op, e)
    found = sites(e, "drop" if op.startswith("drop") else "swap")
    if site >= len(found):
        return None
    if op.startswith("drop"):
        keep = 1 if op == "drop0" else 0
        return _replace(e, found[site], lambda c: _args(c)[keep])
    return _replace(e, found[site], lambda c: dataclasses.replace(c, arg=ir.Tuple(tuple(reversed(_args(c))))))


def apply(m: Mutant, out: Any) -> Any:
    """The output of m's rule with m planted (unchanged where m has no site)."""
    if m.rule == "fwd":
        new = mutate_expr(out, m.op, m.site)
        return out if new is None else new
    parts = list(out)
    if m.op == "swapc":
        if max(m.component, m.other) < len(parts):
            parts[m.component], parts[m.other] = parts[m.other], parts[m.component]
        return tuple(parts)
    if m.component < len(parts):
        new = mutate_expr(parts[m.component], m.op, m.site)
        if new is not None:
            parts[m.component] = new
    return tuple(parts)


@contextlib.contextmanager
def planted(m: Mutant) -> Iterator[None]:
    """Install m in PRIMITIVES for the duration (every module loaded inside uses it)."""
    p = PRIMITIVES[m.prim]
    original = p.rules[m.rule]
    p.rules[m.rule] = lambda *args: apply(m, original(*args))
    try:
        yield
    finally:
        p.rules[m.rule] = original


def mutants_of(prim: str, types: tuple) -> list[Mutant]:
    """Every mutant of prim's fwd and rev rules, sites counted on a call at ``types``."""
    p = PRIMITIVES[prim]
    n = len(types)
    args = [Var(f"x{k}") for k in range(1, n + 1)]
    dargs = [Var(f"dx{k}") for k in range(1, n + 1)]
    out: list[Mutant] = []
    if "fwd" in p.rules:
        fwd = p.rules["fwd"](args, dargs, types, Var("y"))
        out += [Mutant(prim, "fwd", 0, op) for op in ("neg", "scale2")]
        out += [Mutant(prim, "fwd", 0, op, s) for op in ("drop0", "drop1") for s in range(len(sites(fwd, "drop")))]
        out += [Mutant(prim, "fwd", 0, "swap", s) for s in range(len(sites(fwd, "swap")))]
    if "rev" in p.rules:
        rev = tuple(p.rules["rev"](args, Var("dr"), types, Var("y")))
        for k, e in enumerate(rev):
            if _is_unit(e):
                continue
            out += [Mutant(prim, "rev", k, op) for op in ("neg", "scale2", "zero")]
            out += [Mutant(prim, "rev", k, op, s) for op in ("drop0", "drop1") for s in range(len(sites(e, "drop")))]
            out += [Mutant(prim, "rev", k, "swap", s) for s in range(len(sites(e, "swap")))]
            out += [Mutant(prim, "rev", k, "swapc", 0, j) for j in range(k + 1, len(rev))
                    if types[j] == types[k] and not _is_unit(rev[j])]
    return out


def _is_unit(e: ir.Expr) -> bool:
    return isinstance(e, ir.Tuple) and not e.elems
