"""Lexing and reading `.ks` text into s-expressions with spans (docs/reference.md §1).

The reader is iterative (an explicit stack), so nesting depth is unbounded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import LabrysError, Source, Span

_DELIMS = set('()[]";') | set(" \t\r\n\f\v")
_INT = re.compile(r"-?[0-9]+\Z")
_FLOAT = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z|-?[0-9]+[eE][+-]?[0-9]+\Z")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


@dataclass(frozen=True, slots=True)
class Atom:
    """A symbol, number or string; ``value`` is the literal's value."""

    kind: str  # "sym" | "int" | "float" | "str"
    value: object
    span: Span

    @property
    def text(self) -> str:
        return self.span.source.text[self.span.start:self.span.end]


@dataclass(frozen=True, slots=True)
class SList:
    bracket: str  # "(" or "["
    items: tuple["SExpr", ...]
    span: Span


SExpr = Atom | SList


def _skip_block_comment(text: str, i: int, src: Source) -> int:
    """``i`` points just past ``#|``; return the index just past the matching ``|#``."""
    depth, start = 1, i - 2
    while depth:
        if i >= len(text) - 1:
            raise LabrysError("unterminated block comment '#|'", Span(src, start, start + 2))
        pair = text[i:i + 2]
        if pair == "#|":
            depth, i = depth + 1, i + 2
        elif pair == "|#":
            depth, i = depth - 1, i + 2
        else:
            i += 1
    return i


def _read_string(text: str, i: int, src: Source) -> tuple[str, int]:
    """``i`` points at the opening quote; return the value and the end index."""
    out, j = [], i + 1
    while True:
        if j >= len(text):
            raise LabrysError("unterminated string literal", Span(src, i, i + 1))
        ch = text[j]
        if ch == '"':
            return "".join(out), j + 1
        if ch == "\\":
            esc = text[j + 1:j + 2]
            if not esc:
                raise LabrysError("unterminated string literal", Span(src, i, i + 1))
            if esc not in _ESCAPES:
                raise LabrysError(f"unknown escape '\\{esc}' in string", Span(src, j, j + 2))
            out.append(_ESCAPES[esc])
            j += 2
        else:
            out.append(ch)
            j += 1


def _atom(text: str, span: Span) -> Atom:
    if _INT.match(text):
        value = int(text)
        if not -(1 << 63) <= value < (1 << 63):
            raise LabrysError(f"Integer literal {text} does not fit in 64 bits", span)
        return Atom("int", value, span)
    if _FLOAT.match(text):
        return Atom("float", float(text), span)
    return Atom("sym", text, span)


_CLOSER = {"(": ")", "[": "]"}


def read(src: Source) -> list[SExpr]:
    """Read every top-level s-expression of ``src``."""
    text, n, i = src.text, len(src.text), 0
    stack: list[tuple[str, int, list]] = []  # (bracket, start, items)
    top: list[SExpr] = []
    while i < n:
        ch = text[i]
        if ch in " \t\r\n\f\v":
            i += 1
        elif ch == ";":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("#|", i):
            i = _skip_block_comment(text, i + 2, src)
        elif ch in "([":
            stack.append((ch, i, []))
            i += 1
        elif ch in ")]":
            if not stack:
                raise LabrysError(f"unexpected '{ch}' with no matching opening bracket", Span(src, i, i + 1))
            bracket, start, items = stack.pop()
            if _CLOSER[bracket] != ch:
                raise LabrysError(f"'{bracket}' closed by '{ch}'", Span(src, i, i + 1),
                                  (f"the '{bracket}' opened at {Span(src, start, start + 1)!r}",))
            node = SList(bracket, tuple(items), Span(src, start, i + 1))
            (stack[-1][2] if stack else top).append(node)
            i += 1
        else:
            if ch == '"':
                value, j = _read_string(text, i, src)
                node = Atom("str", value, Span(src, i, j))
            else:
                j = i
                while j < n and text[j] not in _DELIMS and not text.startswith("#|", j):
                    j += 1
                node = _atom(text[i:j], Span(src, i, j))
            (stack[-1][2] if stack else top).append(node)
            i = j
    if stack:
        bracket, start, _ = stack[-1]
        raise LabrysError(f"unclosed '{bracket}'", Span(src, start, start + 1))
    return top
