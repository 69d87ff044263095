"""Source positions and the one error type users ever see.

Every user mistake becomes a :class:`LabrysError` carrying a :class:`Span`;
``str(err)`` is ``file:line:col: error: message`` followed by the source
line and a caret, the format the CLI prints.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_NEWLINE = re.compile("\n")


@dataclass(frozen=True, eq=False)
class Source:
    """A named text, with line starts computed once for position look-ups."""

    name: str
    text: str
    line_starts: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        starts = [0] + [m.end() for m in _NEWLINE.finditer(self.text)]  # not a Python loop per character
        object.__setattr__(self, "line_starts", tuple(starts))

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        line = bisect.bisect_right(self.line_starts, offset) - 1
        return line + 1, offset - self.line_starts[line] + 1

    def line_text(self, line: int) -> str:
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]


@dataclass(frozen=True, slots=True)
class Span:  # slots: one object per token and node, no __dict__ (half the memory, less for the collector)
    source: Source
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.source.line_col(self.start)[0]

    @property
    def col(self) -> int:
        return self.source.line_col(self.start)[1]

    def __repr__(self) -> str:
        line, col = self.source.line_col(self.start)
        return f"{self.source.name}:{line}:{col}"

    def to(self, other: "Span | None") -> "Span":
        return self if other is None else Span(self.source, self.start, max(self.end, other.end))


class LabrysError(Exception):
    """A user-facing error: a message and, where known, the source span."""

    def __init__(self, message: str, span: Span | None = None, notes: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.span = span
        self.notes = notes

    def __str__(self) -> str:
        return format_error(self.message, self.span, self.notes)


def format_error(message: str, span: Span | None, notes: tuple[str, ...] = ()) -> str:
    if span is None:
        head = f"labrys: error: {message}"
        return "\n".join([head, *(f"  note: {n}" for n in notes)])
    line, col = span.source.line_col(span.start)
    text = span.source.line_text(line).expandtabs(1)
    end_line, end_col = span.source.line_col(max(span.start, span.end - 1))
    width = max(1, (end_col - col + 1) if end_line == line else len(text) - col + 1)
    caret = " " * (col - 1) + "^" + "~" * min(width - 1, max(0, len(text) - col))
    lines = [f"{span.source.name}:{line}:{col}: error: {message}", f"  {text}", f"  {caret}"]
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines)
