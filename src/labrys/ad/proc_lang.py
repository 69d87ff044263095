"""The procedure language of Ellis, Peyton Jones & Fitzgibbon's working notes
(§10, Fig. 20): its statements, a printer and a reader.

    statement ::= x = Call f y | x = Const k | Elim y | x = Dup y
                | x = (y₁, …, yₙ) | (x₁, …, xₙ) = z | x = Inl y | x = Inr y
                | Case x (Inl y procedure) (Inr z procedure)
    procedure ::= statement ; … ; statement
    τ         ::= ℝ | (τ₁, …, τₙ) | τ₁ ⊕ τ₂   (and ℤ, Bool = () ⊕ (): Note [Bool as a sum])

Every argument is a variable: there are no compound expressions (the notes'
"analogous to ANF").  A procedure is a tuple of statements; the typing
``Γ ⊢ p ⊣ Δ`` is :mod:`.proc_check`, the lowering from the IR
:mod:`.proc_lower`, the reverse translation F⟦p⟧ / R⟦p⟧ :mod:`.proc_rev`.

Note [n-ary tuples]
~~~~~~~~~~~~~~~~~~~
Fig. 20 has pairs; labrys's IR has n-ary tuples (the notes' §7 says the
implementation does too), so the pair and unpair statements are n-ary, the
unit ``x = ()`` included.  With n = 2 they are the figure's rules.

Note [Bool as a sum]
~~~~~~~~~~~~~~~~~~~~
Fig. 20's only sum eliminator is Case, so a condition is a value of the sum
``() ⊕ ()``: ``true`` is ``Inl ()``.  labrys keeps the IR's ``Bool`` type for
it (comparisons return Bool) and Case accepts a Bool scrutinee with a ``()``
payload in each branch; ``if c a b`` becomes
``Case c (Inl u (Elim u; a)) (Inr v (Elim v; b))``.  Bool's cotangent is
``()``, as for Integer (``labrys.types.tangent``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import LabrysError, Source, Span
from ..ir.names import Name, show_name
from ..ir.types import BOOL, FLOAT, INTEGER, TSum, TTuple, Type

# --- statements (Fig. 20) -------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """``x = Call f y``; ``f`` is a primitive, a function of the program, or a
    :class:`Split` half (F⟦p⟧ and R⟦p⟧'s ``revf$f``, ``revr$f``)."""

    out: str
    func: "Name | Split"
    arg: str


@dataclass(frozen=True)
class Const:
    """``x = Const k : τ``; ``value`` is :data:`ZERO` for the typed zero of R⟦Elim a⟧."""

    out: str
    value: object
    type: Type


@dataclass(frozen=True)
class Elim:
    var: str


@dataclass(frozen=True)
class Dup:
    out: str
    var: str


@dataclass(frozen=True)
class Pair:
    """``x = (y₁, …, yₙ)`` (Note [n-ary tuples])."""

    out: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Unpair:
    """``(x₁, …, xₙ) = z``."""

    outs: tuple[str, ...]
    var: str


@dataclass(frozen=True)
class Inj:
    """``x = Inl y`` (``left``) or ``x = Inr y``, into ``sum_type``."""

    out: str
    left: bool
    sum_type: Type
    var: str


@dataclass(frozen=True)
class Case:
    """``Case x (Inl y p₁) (Inr z p₂)``; ``span`` is where the IR's ``if`` was."""

    var: str
    left_var: str
    left: tuple
    right_var: str
    right: tuple
    span: Span | None = None


Statement = Call | Const | Elim | Dup | Pair | Unpair | Inj | Case
Procedure = tuple  # of Statement


@dataclass(frozen=True)
class Split:
    """``revf$f`` (``forward``) or ``revr$f`` of Fig. 23 for a primitive or function f."""

    forward: bool
    func: Name
    arg: Type | None = None   # f's argument type S
    ret: Type | None = None   # f's result type T

    def __str__(self) -> str:
        return f"{'revf' if self.forward else 'revr'}${show_name(self.func)}"


class _Zero:
    def __repr__(self) -> str:
        return "0"


ZERO = _Zero()  # the typed zero ``Const 0`` of R⟦Elim a⟧ at any cotangent type


def produced(s: Statement) -> tuple[str, ...]:
    """The variables a (non-Case) statement binds."""
    match s:
        case Call(out) | Const(out) | Dup(out) | Pair(out) | Inj(out):
            return (out,)
        case Unpair(outs):
            return outs
    return ()


def consumed(s: Statement) -> tuple[str, ...]:
    """The variables a (non-Case) statement uses."""
    match s:
        case Call(_, _, arg) | Elim(arg) | Dup(_, arg) | Unpair(_, arg) | Inj(_, _, _, arg):
            return (arg,)
        case Pair(_, args):
            return args
        case Case(var):
            return (var,)
    return ()


# --- printing ------------------------------------------------------------------


def show_type(t: Type) -> str:
    """ℝ, ℤ, Bool, (τ₁, τ₂), τ₁ ⊕ τ₂ — the notation of Fig. 20."""
    if t == FLOAT:
        return "ℝ"
    if t == INTEGER:
        return "ℤ"
    if t == BOOL:
        return "Bool"
    if isinstance(t, TTuple):
        return "(" + ", ".join(show_type(e) for e in t.elems) + ")"
    if isinstance(t, TSum):
        return f"({show_type(t.left)} ⊕ {show_type(t.right)})"
    return str(t)


def _show_value(v: object, t: Type) -> str:
    if v is ZERO:
        return "0"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, tuple):
        return "(" + ", ".join(_show_value(x, e) for x, e in zip(v, t.elems)) + ")"
    if isinstance(v, float) and abs(v) < 1e15 and v == int(v):  # (inf and nan print as repr)
        return str(int(v))
    return repr(v)


def show_statement(s: Statement, indent: str = "") -> list[str]:
    match s:
        case Call(out, func, arg):
            return [f"{indent}{out} = Call {func if isinstance(func, Split) else show_name(func)} {arg}"]
        case Const(out, value, t):
            shown = _show_value(value, t)
            return [f"{indent}{out} = Const {shown}" + ("" if t == FLOAT else f" : {show_type(t)}")]
        case Elim(var):
            return [f"{indent}Elim {var}"]
        case Dup(out, var):
            return [f"{indent}{out} = Dup {var}"]
        case Pair(out, args):
            return [f"{indent}{out} = ({', '.join(args)})"]
        case Unpair(outs, var):
            return [f"{indent}({', '.join(outs)}) = {var}"]
        case Inj(out, left, _, var):
            return [f"{indent}{out} = {'Inl' if left else 'Inr'} {var}"]
        case Case(var, lv, lp, rv, rp):
            inner = indent + "    "
            return ([f"{indent}Case {var}", f"{indent}  (Inl {lv}"] + show_procedure(lp, inner) +
                    [f"{indent}  )", f"{indent}  (Inr {rv}"] + show_procedure(rp, inner) + [f"{indent}  )"])
    raise TypeError(f"not a statement: {s!r}")


def show_procedure(p: Procedure, indent: str = "") -> list[str]:
    out: list[str] = []
    for s in p:
        out += show_statement(s, indent)
    return out or [indent + "·"]


def show(p: Procedure) -> str:
    return "\n".join(show_procedure(p))


def show_context(ctx: list[tuple[str, Type]]) -> str:
    return ", ".join(f"{x} : {show_type(t)}" for x, t in ctx) or "·"


def show_judgement(gamma, p: Procedure, delta) -> str:
    """``Γ ⊢ p ⊣ Δ`` with p written ``·`` (Fig. 22's captions)."""
    return f"{show_context(gamma)} ⊢ · ⊣ {show_context(delta)}"


# --- reading ---------------------------------------------------------------------

_TOKEN = re.compile(r"[ \t\r]*(?:(\n)|([();,=:])|(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|([^\s();,=:]+))")


def parse(text: str, name: str = "<procedure>") -> Procedure:
    """A procedure from its text (statements separated by ``;`` or new lines).
    ``Inl``/``Inr`` need a sum type and are built in Python, not read."""
    source = Source(name, text)
    tokens: list[tuple[str, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise LabrysError("procedure: unexpected character", Span(source, pos, pos + 1))
        tok = m.group(1) and ";" or m.group(2) or m.group(3) or m.group(4)
        if tok:
            tokens.append((tok, m.start(m.lastindex)))
        pos = m.end()
    return _Reader(tokens, source).procedure(top=True)


class _Reader:
    def __init__(self, tokens: list[tuple[str, int]], source: Source) -> None:
        self.tokens, self.i, self.source = tokens, 0, source

    def error(self, message: str) -> LabrysError:
        at = self.tokens[self.i][1] if self.i < len(self.tokens) else len(self.source.text)
        return LabrysError(f"procedure: {message}", Span(self.source, at, at + 1))

    def peek(self, k: int = 0) -> str | None:
        return self.tokens[self.i + k][0] if self.i + k < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or expected is not None and tok != expected:
            raise self.error(f"expected {expected or 'more'}, found {tok or 'the end'}")
        self.i += 1
        return tok

    def name(self) -> str:
        tok = self.take()
        if not re.match(r"^[^\W\d]", tok):
            self.i -= 1
            raise self.error(f"expected a variable, found {tok}")
        return tok

    def procedure(self, top: bool = False) -> Procedure:
        out = []
        while True:
            while self.peek() == ";":
                self.take()
            if self.peek() is None or self.peek() == ")":
                if top and self.peek() == ")":
                    raise self.error("unbalanced )")
                return tuple(out)
            out.append(self.statement())

    def names(self) -> tuple[str, ...]:
        self.take("(")
        out = []
        while self.peek() != ")":
            out.append(self.name())
            if self.peek() == ",":
                self.take()
        self.take(")")
        return tuple(out)

    def statement(self) -> Statement:
        if self.peek() == "Elim":
            self.take()
            return Elim(self.name())
        if self.peek() == "Case":
            self.take()
            var = self.name()
            branches = []
            for tag in ("Inl", "Inr"):
                self.take("(")
                self.take(tag)
                v = self.name()
                branches += [v, self.procedure()]
                self.take(")")
            return Case(var, *branches)
        if self.peek() == "(":
            outs = self.names()
            self.take("=")
            return Unpair(outs, self.name())
        out = self.name()
        self.take("=")
        head = self.peek()
        if head == "(":
            return Pair(out, self.names())
        self.take()
        if head == "Call":
            func = self.take()
            arg = self.name()
            if self.peek() not in (None, ";", ")"):
                raise self.error("a Call takes one variable: make a pair of the arguments first")
            return Call(out, func, arg)
        if head == "Const":
            tok = self.take()
            if tok in ("true", "false"):
                return Const(out, tok == "true", BOOL)
            try:
                return Const(out, float(tok), FLOAT)
            except ValueError:
                raise self.error(f"expected a number, true or false after Const, found {tok}") from None
        if head == "Dup":
            return Dup(out, self.name())
        if head in ("Inl", "Inr"):
            raise self.error("Inl and Inr need their sum type: build them with labrys.ad.proc_lang.Inj")
        raise self.error(f"expected Call, Const, Dup or a tuple after '=', found {head}")
