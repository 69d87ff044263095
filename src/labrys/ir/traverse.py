"""IR utilities written once for every pass: children, free variables,
fresh names, capture-avoiding substitution, alpha-equivalence.

All of them are structural recursion over :func:`children` / :func:`rebuild`;
public entry points run under :func:`~labrys.util.deep.deep` (Note [Deep
programs]).
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Callable, Iterable

from ..util.deep import deep
from .nodes import App, Assert, Call, Case, Const, Expr, FnRef, Get, If, Inj, Lam, Let, Tuple, Var

Binders = tuple[str, ...]


def children(e: Expr) -> tuple[tuple[Expr, Binders], ...]:
    """Each child with the variables the node binds around it."""
    try:
        return _CHILDREN[type(e)](e)
    except KeyError:
        raise TypeError(f"not an expression: {e!r}") from None


# Note [Children by type]: every pass asks for children at every node; a dict from
# the node's class (the IR classes have no subclasses) is several times cheaper
# than a match statement trying the classes in turn.  One entry per construct.
_CHILDREN: dict[type, Callable[[Expr], tuple[tuple[Expr, Binders], ...]]] = {
    Const: lambda e: (),
    Var: lambda e: (),
    FnRef: lambda e: (),
    Call: lambda e: ((e.arg, ()),),
    Get: lambda e: ((e.arg, ()),),
    Inj: lambda e: ((e.arg, ()),),
    App: lambda e: ((e.func, ()), (e.arg, ())),
    Lam: lambda e: ((e.body, (e.var,)),),
    Let: lambda e: ((e.rhs, ()), (e.body, e.names)),
    If: lambda e: ((e.cond, ()), (e.then, ()), (e.orelse, ())),
    Tuple: lambda e: tuple((x, ()) for x in e.elems),
    Assert: lambda e: ((e.cond, ()), (e.body, ())),
    Case: lambda e: ((e.scrut, ()), (e.left_body, (e.left_var,)), (e.right_body, (e.right_var,))),
}


def rebuild(e: Expr, kids: list[Expr]) -> Expr:
    """``e`` with its children replaced (same order as :func:`children`)."""
    meta = dict(type=e.type, span=e.span)
    match e:
        case Const() | Var() | FnRef():
            return e
        case Call(f, _):
            return Call(f, kids[0], **meta)
        case Get(i, n, _):
            return Get(i, n, kids[0], **meta)
        case Inj(left, t, _):
            return Inj(left, t, kids[0], **meta)
        case App():
            return App(kids[0], kids[1], **meta)
        case Lam(v, t, _):
            return Lam(v, t, kids[0], **meta)
        case Let(b, _, _):
            return Let(b, kids[0], kids[1], binding_span=e.binding_span, **meta)
        case If():
            return If(kids[0], kids[1], kids[2], **meta)
        case Tuple():
            return Tuple(tuple(kids), **meta)
        case Assert():
            return Assert(kids[0], kids[1], **meta)
        case Case(_, lv, _, rv, _):
            return Case(kids[0], lv, kids[1], rv, kids[2], **meta)
    raise TypeError(f"not an expression: {e!r}")


def _free(e: Expr, acc: set[str], bound: dict[str, int]) -> None:
    if isinstance(e, Var):
        if not bound.get(e.name):
            acc.add(e.name)
        return
    for child, binders in children(e):
        for b in binders:
            bound[b] = bound.get(b, 0) + 1
        _free(child, acc, bound)
        for b in binders:
            bound[b] -= 1


@deep
def free_vars(e: Expr) -> set[str]:
    acc: set[str] = set()
    _free(e, acc, {})
    return acc


def _free_table(e: Expr, table: dict[int, frozenset[str]], keep: Callable[[Expr, set[str]], bool]) -> set[str]:
    if isinstance(e, Var):
        return {e.name}
    acc: set[str] = set()
    for child, binders in children(e):
        s = _free_table(child, table, keep)
        s.difference_update(binders)
        if len(s) > len(acc):  # merge the smaller set into the larger: O(n log n) in all
            acc, s = s, acc
        acc |= s
    if keep(e, acc):
        table[id(e)] = frozenset(acc)
    return acc


@deep
def lambda_free_vars(e: Expr) -> dict[int, frozenset[str]]:
    """The free variables of every lambda in ``e`` (keyed by ``id``), in one pass:
    a pass that asked :func:`free_vars` at each of n nested lambdas was O(n^2)."""
    table: dict[int, frozenset[str]] = {}
    _free_table(e, table, lambda x, _: isinstance(x, Lam))
    return table


@deep
def free_vars_table(e: Expr, cap: int = 32) -> dict[int, frozenset[str]]:
    """The free variables of every compound sub-expression of ``e`` that has at
    most ``cap`` of them (keyed by ``id``; ask :func:`free_vars` for the others),
    in one pass, memory O(cap * size)."""
    table: dict[int, frozenset[str]] = {}
    _free_table(e, table, lambda x, acc: len(acc) <= cap and not isinstance(x, (Const, FnRef)))
    return table


def _fill_spans(e: Expr, span) -> Expr:
    own = e.span or span
    kids = [c for c, _ in children(e)]
    new = [_fill_spans(c, own) for c in kids]
    if e.span is not None and all(n is c for n, c in zip(new, kids)):
        return e
    r = rebuild(e, new) if kids else e
    return r if r.span is not None else dataclasses.replace(r, span=own)


@deep
def fill_spans(e: Expr, span) -> Expr:
    """``e`` with every node that has no span given its nearest enclosing node's
    (``span`` at the top): code that AD generates has new nodes without spans,
    and a run-time error in them must still name a place in the user's source
    (the construct it was derived from, or the function)."""
    return _fill_spans(e, span) if span is not None else e


def _all_names(e: Expr, acc: set[str]) -> None:
    if isinstance(e, Var):
        acc.add(e.name)
    for child, binders in children(e):
        acc.update(binders)
        _all_names(child, acc)


@deep
def all_names(e: Expr) -> set[str]:
    """Every variable name bound or used anywhere in ``e``."""
    acc: set[str] = set()
    _all_names(e, acc)
    return acc


class FreshNames:
    """Generates names ``base$N`` distinct from each other and from ``avoid``."""

    def __init__(self, avoid: Iterable[str] = ()):
        self.taken = set(avoid)
        self.counter = itertools.count(1)

    def __call__(self, base: str = "t") -> str:
        stem = base.split("$")[0] if "$" in base and base.split("$")[-1].isdigit() else base
        while True:
            name = f"{stem}${next(self.counter)}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def avoid(self, names: Iterable[str]) -> None:
        self.taken.update(names)


def _subst(e: Expr, sub: dict[str, Expr], sub_fv: set[str], fresh: FreshNames) -> Expr:
    if isinstance(e, Var):
        return sub.get(e.name, e)
    if not sub:
        return e
    if isinstance(e, Call) and isinstance(e.func, str) and e.func in sub:
        # an untyped call whose head is a substituted local (Note [Calls of local functions])
        new, arg = sub[e.func], _subst(e.arg, sub, sub_fv, fresh)
        if isinstance(new, Var):
            return Call(new.name, arg, type=e.type, span=e.span)
        return App(new, arg, type=e.type, span=e.span)
    kids = []
    renames: dict[str, str] = {}
    for child, binders in children(e):
        inner = sub
        if binders:
            inner = {k: v for k, v in sub.items() if k not in binders}
            for b in binders:  # rename a binder that would capture
                if b in sub_fv and inner:
                    renames[b] = renames.get(b) or fresh(b)
            if renames:
                inner = {**inner, **{b: Var(n, type=None) for b, n in renames.items() if b in binders}}
        kids.append(_subst(child, inner, sub_fv, fresh))
    out = rebuild(e, kids)
    return _rename_binders(out, renames) if renames else out


def _rename_binders(e: Expr, renames: dict[str, str]) -> Expr:
    r = lambda v: renames.get(v, v)  # noqa: E731
    meta = dict(type=e.type, span=e.span)
    match e:
        case Lam(v, t, body):
            return Lam(r(v), t, body, **meta)
        case Let(b, rhs, body):
            return Let(r(b) if isinstance(b, str) else tuple(map(r, b)), rhs, body,
                       binding_span=e.binding_span, **meta)
        case Case(s, lv, lb, rv, rb):
            return Case(s, r(lv), lb, r(rv), rb, **meta)
    return e


def nodes(e: Expr):
    """Every node of ``e`` (pre-order, with an explicit stack: any depth)."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(c for c, _ in children(x))


@deep
def substitute(e: Expr, sub: dict[str, Expr], fresh: FreshNames | None = None) -> Expr:
    """Capture-avoiding ``e[x := sub[x]]``; binders that would capture a free
    variable of a substituted expression are renamed apart."""
    sub_fv: set[str] = set()
    for v in sub.values():  # call heads too: in untyped IR (g x) may call a local g
        sub_fv |= free_vars(v) | {x.func for x in nodes(v) if isinstance(x, Call) and isinstance(x.func, str)}
    if fresh is None:
        fresh = FreshNames(all_names(e) | sub_fv | set(sub))
    return _subst(e, sub, sub_fv, fresh)


def _alpha(a: Expr, b: Expr, env_a: dict[str, int], env_b: dict[str, int], depth: int) -> bool:
    """``env_x`` maps a bound name to the depth of its binder (mutated, restored)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Var):
        da, db = env_a.get(a.name), env_b.get(b.name)
        return da == db and (da is not None or a.name == b.name)
    if isinstance(a, Call) and isinstance(a.func, str) and isinstance(b.func, str) \
            and (a.func in env_a or b.func in env_b):  # heads that are locals
        if env_a.get(a.func) != env_b.get(b.func):
            return False
    elif not _same_head(a, b):
        return False
    ka, kb = children(a), children(b)
    if len(ka) != len(kb):
        return False
    for (ca, ba), (cb, bb) in zip(ka, kb):
        if len(ba) != len(bb):
            return False
        saved = [(n, env_a.get(n)) for n in ba], [(n, env_b.get(n)) for n in bb]
        for i, (na, nb) in enumerate(zip(ba, bb)):
            env_a[na] = env_b[nb] = depth + i
        ok = _alpha(ca, cb, env_a, env_b, depth + len(ba))
        for env, old in zip((env_a, env_b), saved):
            for n, v in reversed(old):
                if v is None:
                    env.pop(n, None)
                else:
                    env[n] = v
        if not ok:
            return False
    return True


def _same_head(a: Expr, b: Expr) -> bool:
    """Equal apart from children and binder names."""
    match a:
        case Const():
            return a == b
        case Call(f, _) | FnRef(f):
            return f == b.func
        case Get(i, n, _):
            return (i, n) == (b.index, b.size)
        case Inj(left, t, _):
            return (left, t) == (b.left, b.sum_type)
        case Lam(_, t, _):
            return t == b.var_type
        case Let(binder, _, _):
            return isinstance(binder, str) == isinstance(b.binder, str)
    return True


@deep
def alpha_equal(a: Expr, b: Expr) -> bool:
    """Equality up to renaming of bound variables."""
    return _alpha(a, b, {}, {}, 0)


@deep
def map_bottom_up(e: Expr, f: Callable[[Expr], Expr]) -> Expr:
    """Rebuild ``e`` applying ``f`` to every node after its children."""

    def go(x: Expr) -> Expr:
        kids = children(x)
        if kids:
            x = rebuild(x, [go(c) for c, _ in kids])
        return f(x)

    return go(e)


def size(e: Expr) -> int:
    """Number of nodes: the measure rewriters and tests use (an explicit stack: any depth,
    on any thread, without a call per node through :func:`deep`)."""
    count, stack = 0, [e]
    while stack:
        x = stack.pop()
        count += 1
        stack.extend([c for c, _ in children(x)])
    return count


def fresh_for(d) -> FreshNames:
    """Fresh names for new binders in the def ``d``: distinct from its parameters and every name in its body."""
    return FreshNames(all_names(d.body) | {p.name for p in d.params})
