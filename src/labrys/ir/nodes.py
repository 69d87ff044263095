"""The immutable IR shared by every pass and backend.

Expressions are frozen dataclasses.  Two fields are left out of equality and
hashing: ``type`` (filled in by the type checker, see
:mod:`labrys.types.checker`) and ``span`` (where the node came from), so
``parse(print(p)) == p`` holds "up to spans" by construction.

A call ``(f a b)`` has ONE argument, the tuple ``(tuple a b)``
(docs/reference.md §3); ``(f)`` has the unit tuple.  A call of a local variable of
``Lam`` type is an :class:`App`; the parser tells the two apart by scope.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Span
from .names import Name
from .types import BOOL, FLOAT, INTEGER, STRING, TSum, Type

_meta = dict(default=None, compare=False, repr=False, kw_only=True)


class Expr:
    """Base of expression nodes.

    Note [Iterative equality]: ``==`` and ``hash`` on expressions walk the
    tree with an explicit stack (hashes are cached), so comparing or hashing
    a 10^4-deep program works on any thread; dataclass-generated versions
    would recurse in C and can overflow the stack.
    """

    __slots__ = ()
    type: Type | None
    span: Span | None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and _structurally_equal(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return _structural_hash(self)

    def __repr__(self) -> str:  # the printer (labrys.syntax.printer.show_expr) shows the whole tree
        head = " ".join(str(h) for h in _head(self))
        return f"<{type(self).__name__}{' ' + head if head else ''}>"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Const(Expr):
    value: float | int | bool | str
    ctype: Type  # part of equality: 1, 1.0 and True are equal in Python
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Var(Expr):
    name: str
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Call(Expr):
    """Call of a top-level function or primitive ``func`` on one argument."""

    func: Name
    arg: Expr
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class App(Expr):
    """Application of a first-class function value (docs/reference.md §7)."""

    func: Expr
    arg: Expr
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Lam(Expr):
    var: str
    var_type: Type
    body: Expr
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Let(Expr):
    """``let x = rhs in body``, or with a tuple pattern ``(x y z)``."""

    binder: str | tuple[str, ...]
    rhs: Expr
    body: Expr
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    binding_span: Span | None = field(**_meta)  # the (PATTERN EXPR) part
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.binder,) if isinstance(self.binder, str) else self.binder


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class If(Expr):
    cond: Expr
    then: Expr
    orelse: Expr
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Tuple(Expr):
    elems: tuple[Expr, ...]
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Get(Expr):
    """``get$index$size``: 1-based projection out of a ``size``-tuple."""

    index: int
    size: int
    arg: Expr
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Assert(Expr):
    cond: Expr
    body: Expr
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Inj(Expr):
    """``(inl (Sum A B) e)`` when ``left``, else ``(inr (Sum A B) e)``."""

    left: bool
    sum_type: TSum
    arg: Expr
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Case(Expr):
    scrut: Expr
    left_var: str
    left_body: Expr
    right_var: str
    right_body: Expr
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class FnRef(Expr):
    """``(fn NAME)``: a top-level function as a first-class value."""

    func: Name
    type: Type | None = field(**_meta)
    span: Span | None = field(**_meta)
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)


# The fields of each node that are not sub-expressions (compared before children).
_HEAD = {Const: ("value", "ctype"), Var: ("name",), Call: ("func",), App: (), Lam: ("var", "var_type"),
         Let: ("binder",), If: (), Tuple: (), Get: ("index", "size"), Assert: (), Inj: ("left", "sum_type"),
         Case: ("left_var", "right_var"), FnRef: ("func",)}


def _head(e: Expr) -> tuple:
    h = tuple(getattr(e, f) for f in _HEAD[type(e)])
    if type(e) is Const and isinstance(e.value, float):
        return (repr(e.value), e.ctype)  # distinguishes -0.0 from 0.0 and equates nan with nan
    return h


def _kids(e: Expr) -> tuple[Expr, ...]:
    return tuple(c for c, _ in _children(e))


def _structurally_equal(a: Expr, b: Expr) -> bool:
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is not type(y) or _head(x) != _head(y):
            return False
        if x._hash is not None and y._hash is not None and x._hash != y._hash:
            return False
        kx, ky = _kids(x), _kids(y)
        if len(kx) != len(ky):
            return False
        stack.extend(zip(kx, ky))
    return True


def _structural_hash(e: Expr) -> int:
    if e._hash is not None:
        return e._hash
    order, stack = [], [e]
    while stack:  # post-order: every child is hashed before its parent
        x = stack.pop()
        if x._hash is None:
            order.append(x)
            stack.extend(_kids(x))
    for x in reversed(order):
        if x._hash is None:
            h = hash((type(x).__name__, _head(x), tuple(k._hash for k in _kids(x))))
            object.__setattr__(x, "_hash", h)
    return e._hash


# --- declarations -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    type: Type
    span: Span | None = field(**_meta)


def params_type(params: tuple[Param, ...]) -> Type:
    """One parameter has its own type; zero or several make a tuple (§3)."""
    from .types import TTuple

    return params[0].type if len(params) == 1 else TTuple(tuple(p.type for p in params))


@dataclass(frozen=True, slots=True)
class Def:
    name: Name
    ret: Type
    params: tuple[Param, ...]
    body: Expr
    span: Span | None = field(**_meta)

    @property
    def arg_type(self) -> Type:
        return params_type(self.params)

    def with_body(self, body: Expr) -> Def:
        """This def with another body (a pass's output)."""
        return Def(self.name, self.ret, self.params, body, span=self.span)


@dataclass(frozen=True, slots=True)
class Edef:
    name: Name
    ret: Type
    arg_type: Type
    span: Span | None = field(**_meta)


@dataclass(frozen=True, slots=True)
class Gdef:
    derivation: str
    name: Name  # usually [f T]
    wrt: tuple[str, ...] = ()  # (gdef rev [f T] (wrt a b)): with respect to these parameters only
    span: Span | None = field(**_meta)


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    params: tuple[Param, ...]
    lhs: Expr
    rhs: Expr
    span: Span | None = field(**_meta)


Decl = Def | Edef | Gdef | Rule


@dataclass(frozen=True, slots=True)
class Program:
    decls: tuple[Decl, ...]


# --- smart constructors -----------------------------------------------------

_CONST_TYPES = {bool: BOOL, int: INTEGER, float: FLOAT, str: STRING}


def const(value: float | int | bool | str, span: Span | None = None) -> Const:
    t = _CONST_TYPES[type(value)]
    return Const(value, t, type=t, span=span)


def call(func: Name, *args: Expr, span: Span | None = None) -> Call:
    """``call(f, a, b)`` is ``(f a b)``: several arguments make one tuple."""
    return Call(func, args[0] if len(args) == 1 else Tuple(tuple(args)), span=span)


def call_args(e: Call) -> tuple[Expr, ...]:
    """The arguments as written: a tuple argument is spread."""
    return e.arg.elems if isinstance(e.arg, Tuple) else (e.arg,)


# traverse builds on the node classes above; equality and hashing use its children()
from .traverse import children as _children  # noqa: E402
