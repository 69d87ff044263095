"""Lexing and reading `.ks` text into s-expressions with spans (docs/reference.md §1).

The reader is iterative (an explicit stack), so nesting depth is unbounded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import LabrysError, Source, Span

_DELIMS = set('()[]";') | set(" \t\r\n\f\v")
# Note [Reading a token at a time]: the blanks before a token and every token kind,
# tried in order (brackets and atoms, the common ones, first; a "#" line comment before
# an atom, which could also start with "#"), in one match; an atom runs to the next
# delimiter or "#|".
_TOKEN = re.compile(r"""[\ \t\r\n\f\v]*(?:
                       (?P<open>[(\[])
                      |(?P<close>[)\]])
                      |(?P<hash>\#(?=[\ \t\r\n]|\Z)[^\n]*)
                      |(?P<block>\#\|)
                      |(?P<atom>(?:[^()\[\]";\ \t\r\n\f\v\#]|\#(?!\|))+)
                      |(?P<comment>;[^\n]*)
                      |(?P<str>")
                      |(?P<end>\Z))""", re.VERBOSE)
_OPEN, _CLOSE, _ATOMTOK, _END = (_TOKEN.groupindex[k] for k in ("open", "close", "atom", "end"))
_ATOM = re.compile(r"(?:[^()\[\]\";\ \t\r\n\f\v\#]|\#(?!\|))+")
_INT = re.compile(r"-?[0-9]+\Z")
_FLOAT = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z|-?[0-9]+[eE][+-]?[0-9]+\Z"
                    r"|[+-]inf\.0\Z|\+nan\.0\Z")  # Note [Non-finite literals]
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


@dataclass(frozen=True, slots=True)
class Comment:
    """A comment, kept only when the formatter reads (``read(..., comments=True)``).
    ``trailing``: code precedes it on its line; ``hard``: a line comment, or a
    block comment that spans lines (nothing may follow it on its line)."""

    text: str
    span: Span
    trailing: bool

    @property
    def hard(self) -> bool:
        return self.text.startswith(";") or self.text.startswith("#") and not self.text.startswith("#|") \
            or "\n" in self.text


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


_NUMBER_START = frozenset("0123456789-+.")  # what a number literal can begin with


def _atom(text: str, span: Span) -> Atom:
    if text[0] not in _NUMBER_START:  # a symbol: the common case, without a regular expression
        return Atom("sym", text, span)
    if _INT.match(text):
        value = int(text)
        if not -(1 << 63) <= value < (1 << 63):
            raise LabrysError(f"Integer literal {text} does not fit in 64 bits", span)
        return Atom("int", value, span)
    if _FLOAT.match(text):
        return Atom("float", float(text.replace(".0", "") if text[1:4] in ("inf", "nan") else text), span)
    return Atom("sym", text, span)


_CLOSER = {"(": ")", "[": "]"}


# Note [Hash line comments]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# One program of the Knossos compiler's tests (lambda.ks) opens with a line
# "# Should be auto-translated ...".  The Knossos compiler's own lexer knows
# only ";" and "#| |#" comments, so it does not read that file either.  A "#"
# that begins a line and is followed by a blank (or ends the line) cannot
# start any token of the language, so labrys reads such a line as a comment,
# like ";".  "#|" still opens a block comment, and "#" elsewhere is unchanged.
def _hash_line_comment(text: str, i: int) -> bool:
    if text[i] != "#" or text[i + 1:i + 2] not in ("", " ", "\t", "\r", "\n"):
        return False
    return text[text.rfind("\n", 0, i) + 1:i].strip() == ""


def _comment(src: Source, i: int, j: int, items: list) -> None:
    line_start = src.text.rfind("\n", 0, i) + 1
    trailing = src.text[line_start:i].strip() != ""
    items.append(Comment(src.text[i:j].rstrip(), Span(src, i, j), trailing))


# Note [Reading brackets and atoms only]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most text has no strings and no comments: only brackets, atoms and blanks.  Such text
# is split into tokens by one ``findall`` (each token with the blanks before it, so
# positions are sums of lengths) instead of a match object per token: 25-30% less time
# on 10^5-deep programs.  Anything irregular (a bracket closed wrongly or never, a
# stray closer) returns None, and the general reader below reads the text again and
# reports the error with its position.
_SIMPLE_TOKENS = re.compile(r"([\ \t\r\n\f\v]*)(?:([(\[])|([)\]])|([^()\[\]\";\ \t\r\n\f\v\#]+))")
_NOT_SIMPLE = re.compile(r'["#;]')


def _read_simple(src: Source) -> list[SExpr] | None:
    stack: list[tuple[str, int, list]] = []  # (bracket, start, enclosing items)
    top: list[SExpr] = []
    items, i = top, 0
    for blanks, opener, closer, atom in _SIMPLE_TOKENS.findall(src.text):
        i += len(blanks)
        if opener:
            stack.append((opener, i, items))
            items, i = [], i + 1
        elif closer:
            if not stack or _CLOSER[stack[-1][0]] != closer:
                return None
            bracket, start, outer = stack.pop()
            outer.append(SList(bracket, tuple(items), Span(src, start, i + 1)))
            items, i = outer, i + 1
        else:
            j = i + len(atom)
            items.append(_atom(atom, Span(src, i, j)))
            i = j
    return None if stack else top


def read(src: Source, comments: bool = False) -> list[SExpr]:
    """Read every top-level s-expression of ``src`` (and, for the formatter, its
    comments as :class:`Comment` items where they occur).  One regular-expression
    match per token (Note [Reading a token at a time]): a character-at-a-time loop
    took 3.5 s of CPU on the 3 MB of 10^5 nested lets."""
    if not _NOT_SIMPLE.search(src.text):  # Note [Reading brackets and atoms only]
        simple = _read_simple(src)
        if simple is not None:
            return simple
    text, n, i = src.text, len(src.text), 0
    stack: list[tuple[str, int, list]] = []  # (bracket, start, items)
    top: list[SExpr] = []
    items = top
    match = _TOKEN.match
    while i < n:
        m = match(text, i)
        kind = m.lastindex  # the token's group: whitespace before it is part of the match
        i, j = m.start(kind), m.end()
        if kind == _OPEN:
            stack.append((text[i], i, []))
            items = stack[-1][2]
        elif kind == _CLOSE:
            ch = text[i]
            if not stack:
                raise LabrysError(f"unexpected '{ch}' with no matching opening bracket", Span(src, i, i + 1))
            bracket, start, inner = stack.pop()
            if _CLOSER[bracket] != ch:
                raise LabrysError(f"'{bracket}' closed by '{ch}'", Span(src, i, i + 1),
                                  (f"the '{bracket}' opened at {Span(src, start, start + 1)!r}",))
            items = stack[-1][2] if stack else top
            items.append(SList(bracket, tuple(inner), Span(src, start, j)))
        elif kind == _ATOMTOK:
            items.append(_atom(text[i:j], Span(src, i, j)))
        elif kind == _END:
            pass
        elif m.lastgroup == "hash" and not _hash_line_comment(text, i):  # a "#" inside an atom's place
            j = _ATOM.match(text, i).end()
            items.append(_atom(text[i:j], Span(src, i, j)))
        elif m.lastgroup in ("comment", "hash"):
            if comments:
                _comment(src, i, j, items)
        elif m.lastgroup == "block":
            j = _skip_block_comment(text, i + 2, src)
            if comments:
                _comment(src, i, j, items)
        else:  # a string
            value, j = _read_string(text, i, src)
            items.append(Atom("str", value, Span(src, i, j)))
        i = j
    if stack:
        bracket, start, _ = stack[-1]
        raise LabrysError(f"unclosed '{bracket}'", Span(src, start, start + 1))
    return top
