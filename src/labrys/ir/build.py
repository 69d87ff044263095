"""Small constructors for building IR in passes and derivative rules."""
from __future__ import annotations

from .names import Name
from .nodes import Const, Expr, Get, If, Lam, Let, Tuple, Var, call, const
from .types import INTEGER, TTensor, TTuple, Type

UNIT = Tuple(())
ZERO = const(0.0)
ONE = const(1.0)


def C(func: Name, *args: Expr) -> Expr:
    """``(func args...)``."""
    return call(func, *args)


def V(name: str, t: Type | None = None) -> Var:
    return Var(name, type=t)


def tup(*elems: Expr) -> Tuple:
    return Tuple(tuple(elems))


def get(i: int, n: int, e: Expr) -> Expr:
    """1-based projection, simplified on a tuple literal."""
    return e.elems[i - 1] if isinstance(e, Tuple) else Get(i, n, e)


def let(binder: str | tuple[str, ...], rhs: Expr, body: Expr) -> Let:
    return Let(binder, rhs, body)


def lam(var: str, t: Type, body: Expr) -> Lam:
    return Lam(var, t, body)


def if_(c: Expr, t: Expr, f: Expr) -> If:
    return If(c, t, f)


def index_type(t: TTensor) -> Type:
    return INTEGER if t.rank == 1 else TTuple((INTEGER,) * t.rank)


def is_atom(e: Expr) -> bool:
    """Variables, constants and the unit ``(tuple)``: free to duplicate."""
    return isinstance(e, (Var, Const)) or isinstance(e, Tuple) and not e.elems
