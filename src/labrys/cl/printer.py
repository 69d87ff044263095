"""The printer of CL terms, in the notes' notation (Fig. 9):
``L(z, (F(get$1$2), F(get$2$2)) ; F(mul), P[1,3/3] ; (F(get$2$2), F(get$1$2)) ; F(add))``.

:func:`labrys.cl.parser.parse` reads it back: ``parse(show(c)) == c``.  A term
that does not fit the width is broken after its commas and after each ``;``
(the parts of a composition at one column); the body of a let starts a new line at the let's own column, so a chain of
lets reads downwards as in `.ks` and a 10⁴-long chain does not drift right.
"""
from __future__ import annotations

from ..ir.names import show_name
from ..ir.types import show_type
from ..syntax.printer import literal
from ..util.deep import deep, gc_paused
from .syntax import Assert, Build, CLDef, Comp, Fold, Func, Identity, If, Konst, Let, Prune, Term, Tup

WIDTH = 100


def _head(c: Term) -> str:
    """The text of a leaf, or the opening of a compound term."""
    match c:
        case Identity():
            return "I"
        case Konst(value):
            return f"K({literal(value)})"
        case Prune(picks, n):
            return f"P[{','.join(map(str, picks))}/{n}]"
        case Func(name):
            return f"F({show_name(name)})"
        case If():
            return "IF("
        case Let(var):
            return f"L({var}, "
        case Build():
            return "B("
        case Fold(var):
            return f"FOLD({var}, "
        case Assert():
            return "ASSERT("
    return "("


def _flat_lengths(c: Term) -> dict[int, int]:
    """The one-line length of every sub-term (by id), iteratively."""
    size: dict[int, int] = {}
    order, stack = [], [c]
    while stack:
        x = stack.pop()
        if id(x) not in size:
            size[id(x)] = -1
            order.append(x)
            stack.extend(x.kids())
    for x in reversed(order):
        kids = [size[id(k)] for k in x.kids()]
        match x:
            case Comp():
                size[id(x)] = sum(kids) + 3 * (len(kids) - 1)
            case Tup():
                size[id(x)] = 2 + sum(kids) + 2 * max(len(kids) - 1, 0) + (1 if len(kids) == 1 else 0)
            case Build(_, var):
                size[id(x)] = len("B(") + sum(kids) + len(var) + 4 + 1
            case _:
                size[id(x)] = len(_head(x)) + sum(kids) + 2 * max(len(kids) - 1, 0) + (1 if kids else 0)
    return size


class _Printer:
    def __init__(self, c: Term, width: int) -> None:
        self.size, self.width, self.out = _flat_lengths(c), width, []

    def fits(self, c: Term, col: int) -> bool:
        return col + self.size[id(c)] <= self.width

    def term(self, c: Term, col: int) -> None:
        flat = self.fits(c, col)
        out = self.out
        match c:
            case Comp(parts):  # broken: one part a line, all at one column (a let chain does not drift)
                for k, p in enumerate(parts):
                    if k:
                        out.append(" ; " if flat else " ;\n" + " " * col)
                    self.term(p, col)
            case Tup(elems):
                out.append("(")
                self.items(elems, col + 1, flat)
                out.append(",)" if len(elems) == 1 else ")")
            case Let(var, rhs, body):
                out.append(_head(c))
                self.term(rhs, col + len(_head(c)))
                out.append(", " if flat else ",\n" + " " * col)
                self.term(body, col if not flat else col)
                out.append(")")
            case Build(size, var, body):
                out.append("B(")
                self.items((size, var, body), col + 2, flat)
                out.append(")")
            case If() | Fold() | Assert():
                head = _head(c)
                out.append(head)
                self.items(c.kids(), col + len(head) if flat or not isinstance(c, Fold) else col + 2, flat)
                out.append(")")
            case _:
                out.append(_head(c))

    def items(self, items, col: int, flat: bool) -> None:
        for k, x in enumerate(items):
            if k:
                self.out.append(", " if flat else ",\n" + " " * col)
            if isinstance(x, str):
                self.out.append(x)
            else:
                self.term(x, col)


@deep
@gc_paused
def show(c: Term, width: int = WIDTH, col: int = 0) -> str:
    """The text of ``c`` (lines of at most ``width`` characters where possible)."""
    p = _Printer(c, width)
    p.term(c, col)
    return "".join(p.out)


def show_def(d: CLDef, width: int = WIDTH) -> str:
    """``def f : S ⇒ T =`` and the term on the next lines."""
    return (f"def {show_name(d.name)} : {show_type(d.arg)} ⇒ {show_type(d.ret)} =\n  "
            + show(d.body, width, 2))
