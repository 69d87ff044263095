"""User rewrite rules: ``(rule "name" PARAMS LHS RHS)`` (docs/reference.md §3).

    Γ ⊢ e : τ   ↦   Γ ⊢ rewrite(e) : τ

A rule's parameters are pattern variables: each matches any expression of
its type (the same one at every occurrence).  Other variables and binders
match up to renaming.  Rules are applied bottom-up, each node at most once
per pass, so a rule that undoes another cannot loop.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import nodes as ir
from ..ir.nodes import _head
from ..ir.traverse import FreshNames, all_names, children, map_bottom_up, substitute
from ..ir.types import Type
from ..util.deep import deep


@dataclass(frozen=True)
class RewriteRule:
    name: str
    params: dict[str, Type]
    lhs: ir.Expr
    rhs: ir.Expr

    @staticmethod
    def of(rule: ir.Rule) -> "RewriteRule":
        return RewriteRule(rule.name, {p.name: p.type for p in rule.params}, rule.lhs, rule.rhs)


def match(rule: RewriteRule, e: ir.Expr) -> dict[str, ir.Expr] | None:
    """The pattern variables' values if ``e`` is an instance of the rule's lhs."""
    found: dict[str, ir.Expr] = {}
    renamed: dict[str, str] = {}  # pattern binder -> term binder
    stack = [(rule.lhs, e)]
    while stack:
        p, x = stack.pop()
        if isinstance(p, ir.Var) and p.name in rule.params and p.name not in renamed:
            if x.type is not None and x.type != rule.params[p.name]:
                return None
            if p.name in found and found[p.name] != x:
                return None
            found[p.name] = x
            continue
        if isinstance(p, ir.Var):
            if not isinstance(x, ir.Var) or renamed.get(p.name, p.name) != x.name:
                return None
            continue
        if type(p) is not type(x):
            return None
        if not isinstance(p, ir.Let | ir.Lam | ir.Case) and _head(p) != _head(x):
            return None
        kp, kx = children(p), children(x)
        if len(kp) != len(kx):
            return None
        for (cp, bp), (cx, bx) in zip(kp, kx):
            if len(bp) != len(bx):
                return None
            renamed.update(zip(bp, bx))
            stack.append((cp, cx))
    return found


@deep
def apply_rules(e: ir.Expr, rules: list[RewriteRule]) -> ir.Expr:
    if not rules:
        return e
    fresh = FreshNames(all_names(e))

    def rewrite(x: ir.Expr) -> ir.Expr:
        for rule in rules:
            found = match(rule, x)
            if found is not None:
                return substitute(rule.rhs, found, fresh)
        return x
    return map_bottom_up(e, rewrite)


def program_rules(program: ir.Program) -> list[RewriteRule]:
    return [RewriteRule.of(d) for d in program.decls if isinstance(d, ir.Rule)]
