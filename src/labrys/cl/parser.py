"""The parser of CL terms in the printer's notation (:mod:`labrys.cl.printer`).

Names inside ``F(…)`` and literals inside ``K(…)`` are `.ks` text, read by the
`.ks` reader (``F([f (Tuple Float Float)])``, ``K(-0.5)``, ``K("x")``).
Mistakes are LabrysErrors at ``file:line:col``.
"""
from __future__ import annotations

import re

from ..errors import LabrysError, Source, Span
from ..ir.types import BOOL, FLOAT, INTEGER, STRING
from ..syntax.parser import parse_name
from ..syntax.sexpr import Atom, read
from ..util.deep import deep, gc_paused
from .syntax import Assert, Build, Fold, Func, I, If, Konst, Let, Prune, Term, Tup, comp

_TOKEN = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_$']*)|(?P<int>[0-9]+)|(?P<punct>[()\[\],;/]))")
_KEYWORDS = {"I", "K", "P", "F", "IF", "L", "B", "FOLD", "ASSERT"}


class _Parser:
    def __init__(self, text: str, filename: str) -> None:
        self.src = Source(filename, text)
        self.text, self.i = text, 0

    def error(self, msg: str, at: int | None = None) -> LabrysError:
        at = self.i if at is None else at
        return LabrysError(msg, Span(self.src, at, min(at + 1, len(self.text))))

    def skip(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def peek(self) -> str | None:
        self.skip()
        m = _TOKEN.match(self.text, self.i)
        return m.group(m.lastgroup) if m else None

    def take(self, what: str | None = None) -> str:
        self.skip()
        m = _TOKEN.match(self.text, self.i)
        if m is None or (what is not None and m.group(m.lastgroup) != what):
            found = repr(self.text[self.i:self.i + 12]) if self.i < len(self.text) else "the end"
            raise self.error(f"CL: expected {what or 'a term'}, found {found}")
        self.i = m.end()
        return m.group(m.lastgroup)

    def raw(self, what: str) -> tuple[str, int]:
        """The text up to the ``)`` closing the one just read (brackets and strings balanced)."""
        start, depth, k = self.i, 0, self.i
        while k < len(self.text):
            ch = self.text[k]
            if ch == '"':
                k += 1
                while k < len(self.text) and self.text[k] != '"':
                    k += 2 if self.text[k] == "\\" else 1
            elif ch in "([":
                depth += 1
            elif ch in ")]":
                if depth == 0:
                    self.i = k + 1
                    return self.text[start:k], start
                depth -= 1
            k += 1
        raise self.error(f"CL: unclosed {what}", start)

    def sexpr(self, what: str, parse=lambda x: x):
        """``parse`` of the one `.ks` s-expression up to the closing parenthesis."""
        text, start = self.raw(what)
        try:
            items = read(Source(self.src.name, text))
            if len(items) != 1:
                raise self.error(f"CL: expected one {what}", start)
            return parse(items[0])
        except LabrysError as exc:  # positioned in the CL text
            raise self.error(exc.message, start) from None

    def term(self) -> Term:
        parts = [self.atom()]
        while self.peek() == ";":
            self.take(";")
            parts.append(self.atom())
        return comp(*parts)

    def atom(self) -> Term:
        at = self.i
        tok = self.take()
        if tok == "(":
            elems, comma = [], False
            while self.peek() != ")":
                elems.append(self.term())
                if self.peek() != ",":
                    break
                self.take(",")
                comma = True
            self.take(")")
            del comma  # "(c)" and "(c,)" are both the 1-tuple: a parenthesis is always a tuple
            return Tup(tuple(elems))
        if tok not in _KEYWORDS:
            raise self.error(f"CL: expected a term (I, K, P, F, IF, L, B, FOLD, ASSERT or a tuple), found {tok!r}",
                             at)
        if tok == "I":
            return I
        if tok == "P":
            self.take("[")
            picks = []
            while self.peek() != "/":
                picks.append(int(self.take()))
                if self.peek() == ",":
                    self.take(",")
            self.take("/")
            n = int(self.take())
            self.take("]")
            if any(not 1 <= p <= n for p in picks):
                raise self.error(f"CL: P[…/{n}] picks a component outside 1…{n}", at)
            return Prune(tuple(picks), n)
        self.take("(")
        if tok == "K":
            return self.sexpr("constant", self.konst)
        if tok == "F":
            return Func(self.sexpr("function name", parse_name))
        if tok == "IF":
            c, t, e = self.term(), self.comma_term(), self.comma_term()
            out: Term = If(c, t, e)
        elif tok == "L":
            x = self.name()
            out = Let(x, self.comma_term(), self.comma_term())
        elif tok == "B":
            size = self.term()
            self.take(",")
            out = Build(size, self.name(), self.comma_term())
        elif tok == "FOLD":
            x = self.name()
            out = Fold(x, self.comma_term(), self.comma_term(), self.comma_term())
        else:
            out = Assert(self.term(), self.comma_term())
        self.take(")")
        return out

    def comma_term(self) -> Term:
        self.take(",")
        return self.term()

    def name(self) -> str:
        """A bound variable: the text up to the next comma (`.ks` names may hold $ . - …)."""
        self.skip()
        at, end = self.i, self.text.find(",", self.i)
        name = self.text[at:end].strip() if end >= 0 else ""
        if not name or any(ch.isspace() or ch in "()[];" for ch in name):
            raise self.error("CL: expected a variable name and a comma", at)
        self.i = end
        return name

    def konst(self, x) -> Konst:
        if isinstance(x, Atom):
            if x.kind == "int":
                return Konst(x.value, INTEGER)
            if x.kind == "float":
                return Konst(x.value, FLOAT)
            if x.kind == "str":
                return Konst(x.value, STRING)
            if x.value in ("true", "false"):
                return Konst(x.value == "true", BOOL)
        raise LabrysError("CL: K(…) takes a literal: an Integer, a Float, a Bool or a String", x.span)


@deep
@gc_paused
def parse(text: str, filename: str = "<cl>") -> Term:
    """The CL term written in ``text``."""
    p = _Parser(text, filename)
    out = p.term()
    p.skip()
    if p.i != len(text):
        raise p.error(f"CL: unexpected {text[p.i:p.i + 12]!r} after the term")
    return out
