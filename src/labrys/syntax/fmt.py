"""`labrys fmt`: lay out a `.ks` file without losing anything the user wrote.

Note [Formatting s-expressions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The formatter works on the s-expressions the reader makes (with the comments
kept, ``read(..., comments=True)``), not on the IR: every token is printed as
it was written (a literal keeps its spelling, ``1e400`` stays ``1e400``), so
the program cannot change, and only whitespace moves.  :func:`format_source`
still re-parses its output and compares the IR with the input's, so a layout
bug is reported, never written.

Layout: a list with no comment inside is printed by the IR printer's layout
engine (:mod:`labrys.syntax.printer`), flat when it fits, broken Lisp-style
(``def``/``lam`` bodies indented, ``if`` branches aligned, binding groups one
per line) when not.  A comment stays attached to the nearest construct:

* an own-line comment stays on its own line, before the item that follows it
  (or before the closing bracket if nothing follows);
* a trailing comment (code before it on its line) stays after the item it
  followed, on the same line;
* a single-line block comment ``#| ... |#`` is a token like any other.

A list holding a line comment (or a block comment spanning lines) cannot be
flat, so it is printed one item per line.  Between top-level forms one blank
line; a comment block keeps a blank line before the next form only if it had
one.  The result is a function of the s-expressions and the comments'
attachment only, so formatting is idempotent.
"""
from __future__ import annotations

import os
import tempfile

from ..errors import LabrysError, Source
from ..util.deep import deep, gc_paused
from .parser import parse_program
from .printer import Doc, render
from .sexpr import Atom, Comment, SList, read

_BODY_HEADS = {"def", "lam", "assert"}
_HEAD_LINE = {"def": 4, "edef": 4, "lam": 2, "if": 2, "case": 2, "assert": 2, "rule": 2}  # items on the first line
_MAX_INDENT = 60  # comment-holding lists deeper than this are not indented further


def _text(x: Atom | Comment) -> str:
    return x.text if isinstance(x, Comment) else x.span.source.text[x.span.start:x.span.end]


def _head(x: SList) -> str | None:
    return x.items[0].value if x.items and isinstance(x.items[0], Atom) and x.items[0].kind == "sym" else None


def _hard(x, memo: dict[int, bool]) -> bool:
    """Does ``x`` hold a comment that forbids printing it on one line?"""
    if isinstance(x, Comment):
        return x.hard
    if isinstance(x, Atom):
        return False
    key = id(x)
    if key not in memo:
        memo[key] = any(_hard(i, memo) for i in x.items)
    return memo[key]


def _doc(x, group: bool = False) -> Doc | str:
    """A comment-free s-expression as a layout document (the IR printer's styles)."""
    if not isinstance(x, SList):
        return _text(x)
    head = _head(x)
    items = list(x.items)
    if head == "let" and len(items) == 3 and isinstance(items[1], SList) and items[1].items \
            and all(isinstance(b, SList) for b in items[1].items):
        return Doc(["let", _doc(items[1], group=True), _doc(items[2])], "let", x.bracket + _close(x))
    layout = ("lines" if group or head == "rule" else "body" if head in _BODY_HEADS
              else "let" if head == "let" else "if" if head in ("if", "case") else "call")
    if head == "case":
        return Doc([_doc(items[0]), *(_doc(i) for i in items[1:2]),
                    *(_alt(i) for i in items[2:])], layout, x.bracket + _close(x))
    return Doc([_doc(i) for i in items], layout, x.bracket + _close(x))


def _alt(x) -> Doc | str:
    if isinstance(x, SList) and len(x.items) == 2:
        return Doc([_doc(x.items[0]), _doc(x.items[1])], "body", x.bracket + _close(x))
    return _doc(x)


def _close(x: SList) -> str:
    return "]" if x.bracket == "[" else ")"


class _Out:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.col = 0

    def write(self, s: str) -> None:
        self.parts.append(s)
        nl = s.rfind("\n")
        self.col = self.col + len(s) if nl < 0 else len(s) - nl - 1

    def newline(self, indent: int) -> None:
        self.write("\n" + " " * min(indent, _MAX_INDENT))


def _emit(x, out: _Out, memo: dict[int, bool]) -> None:
    if not isinstance(x, SList) or not _hard(x, memo):
        out.write(render(_doc(x), out.col) if isinstance(x, SList) else _text(x))
        return
    # Note [Formatting s-expressions]: a list holding a comment, the head's line
    # (e.g. `def f Float (x : Float)`) then one item per line
    start = out.col
    indent = start + (1 if x.items and isinstance(x.items[0], SList) else 2)
    on_head_line = _HEAD_LINE.get(_head(x) or "", 1)
    out.write(x.bracket)
    after_hard = False
    for k, item in enumerate(x.items):
        if k and isinstance(item, Comment) and item.trailing and not after_hard:
            out.write(" ")
        elif k and (k >= on_head_line or after_hard or _hard(item, memo) or isinstance(item, Comment)):
            out.newline(indent)
        elif k:
            out.write(" ")
        _emit(item, out, memo)
        after_hard = isinstance(item, Comment) and item.hard
        if isinstance(item, Comment) or _hard(item, memo):
            on_head_line = 0  # after a comment, every item on its own line
    if after_hard:
        out.newline(start)
    out.write(_close(x))


@gc_paused
@deep
def format_text(text: str, filename: str = "<input>") -> str:
    """``text`` laid out canonically, every comment kept (Note [Formatting s-expressions])."""
    src = Source(filename, text)
    items = read(src, comments=True)
    out, memo = _Out(), {}
    prev = None
    for item in items:
        if prev is not None:
            if isinstance(item, Comment) and item.trailing:
                out.write(" ")
            elif isinstance(prev, SList) and isinstance(item, SList) or "\n\n" in _between(text, prev, item):
                out.write("\n\n")
            else:
                out.write("\n")
        _emit(item, out, memo)
        prev = item
    return "".join(out.parts) + "\n" if items else ""


def _between(text: str, a, b) -> str:
    gap = text[a.span.end:b.span.start]
    return "\n".join(line.strip() for line in gap.split("\n"))


@deep
def format_source(text: str, filename: str = "<input>") -> str:
    """Format ``text`` after checking it parses; the output is checked to parse to
    the same program (positioned errors for a file that does not parse)."""
    before = parse_program(text, filename)
    out = format_text(text, filename)
    if parse_program(out, filename) != before:
        raise LabrysError(f"{filename}: formatting would change the program; the file is left as it is "
                          "(a bug in labrys fmt: please report it)")
    return out


def write_atomically(path: str, text: str) -> None:
    """Replace ``path``'s contents with ``text``: a temporary file in the same
    folder, then a rename, so a reader never sees a half-written file."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
        fd, tmp = tempfile.mkstemp(prefix=".labrys-fmt-", suffix=".ks", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise LabrysError(f"cannot write {path}: {exc.strerror or exc}") from None
