"""Spellings from programs written for the Knossos compiler that the parser
reads as labrys forms: ``($dummy T)`` and the symbolic operators of its
oldest test programs (``+``, ``*``, ``==``, ...)."""
from __future__ import annotations

from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.types import BOOL, FLOAT, INTEGER, STRING, TTensor, TTuple, Type

# Note [Symbolic operators]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# The oldest Knossos test programs write (+ x y), (* x y), (== n 1), (< a b).
# They are the prelude's add, mul, eq, lt, ... with the same overloading;
# (- x) with one argument is neg.  The parser renames them, so every later
# stage (and every error message) sees the ordinary names.
OPERATORS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "==": "eq", "!=": "ne",
             "<": "lt", ">": "gt", "<=": "lte", ">=": "gte"}


def operator_name(symbol: str, nargs: int) -> str | None:
    """The prelude name a symbolic operator stands for, or None."""
    if symbol == "-" and nargs == 1:
        return "neg"
    return OPERATORS.get(symbol)


# Note [$dummy]
# ~~~~~~~~~~~~~
# ($dummy T) is a placeholder value of type T that the program never looks
# at (Knossos generates it where a value is needed only for its type).
# labrys makes it a concrete value of T — zero, false, "", a tuple of those,
# an empty tensor — so it evaluates on every backend and has derivative zero.
def dummy_value(t: Type, span: Span) -> ir.Expr:
    if t == FLOAT:
        return ir.const(0.0, span=span)
    if t == INTEGER:
        return ir.const(0, span=span)
    if t == BOOL:
        return ir.const(False, span=span)
    if t == STRING:
        return ir.const("", span=span)
    if isinstance(t, TTuple):
        return ir.Tuple(tuple(dummy_value(e, span) for e in t.elems), span=span)
    if isinstance(t, TTensor):
        size = ir.const(0, span=span) if t.rank == 1 else \
            ir.Tuple(tuple(ir.const(0, span=span) for _ in range(t.rank)), span=span)
        return ir.Call("constVec", ir.Tuple((size, dummy_value(t.elem, span)), span=span), span=span)
    raise LabrysError(f"($dummy T) needs a data type (numbers, Bool, String, tuples, tensors), not {t}", span)
