"""Print the IR as readable, re-parseable `.ks` text.

Two steps: each construct becomes a small document (an s-expression of
strings, one case per construct), then one generic layout routine prints a
document flat when it fits the line and broken Lisp-style when it does not.
Flat lengths are computed once, bottom-up, so printing is linear in the
program size even for very deep programs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.types import show_type
from ..util.deep import deep
from ..values import format_float

WIDTH = 80
MAX_BREAK_COLUMN = 48  # deeper than this, print flat (keeps output linear)


@dataclass(slots=True)
class Doc:
    items: list["Doc | str"]
    layout: str = "call"  # "call" | "let" | "body" | "lines" | "if"
    bracket: str = "()"
    width: int = field(default=0)

    def __post_init__(self) -> None:
        self.width = len(self.items) + 1 + sum(len(i) if isinstance(i, str) else i.width for i in self.items)


def _str_lit(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def _float_lit(x: float) -> str:
    """Note [Non-finite literals]: every double prints as a literal that reads back
    as the same double.  Finite ones print as ``repr`` does (shortest round trip,
    ``-0.0`` kept); the reader takes ``+inf.0``, ``-inf.0`` and ``+nan.0`` (Racket's
    spelling) for the others.  Printing them as ``(div 1.0 0.0)`` read back as a
    call, not the constant, so ``parse(show(p)) != p``."""
    if math.isnan(x):
        return "+nan.0"
    if math.isinf(x):
        return "+inf.0" if x > 0 else "-inf.0"
    return format_float(x)


def literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_lit(value)
    return _str_lit(str(value))


def _param(p: ir.Param | tuple[str, object]) -> Doc:
    name, t = (p.name, p.type) if isinstance(p, ir.Param) else p
    return Doc([name, ":", show_type(t)])


def _params(ps: tuple[ir.Param, ...]) -> Doc | str:
    return _param(ps[0]) if len(ps) == 1 else Doc([_param(p) for p in ps]) if ps else "()"


def _let_chain(e: ir.Let) -> Doc:
    bindings = []
    while isinstance(e, ir.Let):
        pat = e.binder if isinstance(e.binder, str) else Doc(list(e.binder)) if e.binder else "()"
        bindings.append(Doc([pat, expr_doc(e.rhs)]))
        e = e.body
    # Note [Let disambiguation]: ((x y) (z w)) would re-read as ONE binding
    # destructuring (z w), so a 2-binding group starting with (var var) nests.
    if len(bindings) == 2 and all(isinstance(i, str) for i in bindings[0].items):
        return Doc(["let", bindings[0], Doc(["let", bindings[1], expr_doc(e)], "let")], "let")
    group = bindings[0] if len(bindings) == 1 else Doc(bindings, "lines")
    return Doc(["let", group, expr_doc(e)], "let")


def expr_doc(e: ir.Expr) -> Doc | str:
    match e:
        case ir.Const(value):
            return literal(value)
        case ir.Var(name):
            return name
        case ir.Call(func, arg):
            args = arg.elems if isinstance(arg, ir.Tuple) and len(arg.elems) != 1 else (arg,)
            return Doc([show_name(func), *map(expr_doc, args)])
        case ir.App(func, arg):
            args = arg.elems if isinstance(arg, ir.Tuple) and len(arg.elems) != 1 else (arg,)
            return Doc([expr_doc(func), *map(expr_doc, args)])
        case ir.Lam(var, t, body):
            return Doc(["lam", _param((var, t)), expr_doc(body)], "body")
        case ir.Let():
            return _let_chain(e)
        case ir.If(c, t, f):
            return Doc(["if", expr_doc(c), expr_doc(t), expr_doc(f)], "if")
        case ir.Tuple(elems):
            return Doc(["tuple", *map(expr_doc, elems)])
        case ir.Get(i, n, arg):
            return Doc([f"get${i}${n}", expr_doc(arg)])
        case ir.Assert(c, body):
            return Doc(["assert", expr_doc(c), expr_doc(body)], "body")
        case ir.Inj(left, t, arg):
            return Doc(["inl" if left else "inr", show_type(t), expr_doc(arg)])
        case ir.Case(s, lv, lb, rv, rb):
            alt = lambda tag, v, b: Doc([Doc([tag, v]), expr_doc(b)], "body")  # noqa: E731
            return Doc(["case", expr_doc(s), alt("inl", lv, lb), alt("inr", rv, rb)], "if")
        case ir.FnRef(func):
            return Doc(["fn", show_name(func)])
    raise TypeError(f"not an expression: {e!r}")


def decl_doc(d: ir.Decl) -> Doc:
    match d:
        case ir.Def(name, ret, params, body):
            return Doc(["def", show_name(name), show_type(ret), _params(params), expr_doc(body)], "body")
        case ir.Edef(name, ret, arg):
            return Doc(["edef", show_name(name), show_type(ret), show_type(arg)])
        case ir.Gdef(deriv, name, wrt):
            return Doc(["gdef", deriv, show_name(name), *([f"(wrt {' '.join(wrt)})"] if wrt else [])])
        case ir.Rule(name, params, lhs, rhs):
            return Doc(["rule", _str_lit(name), _params(params), expr_doc(lhs), expr_doc(rhs)], "lines")
    raise TypeError(f"not a declaration: {d!r}")


def _flat(d: Doc | str, out: list[str]) -> None:
    if isinstance(d, str):
        out.append(d)
        return
    out.append(d.bracket[0])
    for k, item in enumerate(d.items):
        if k:
            out.append(" ")
        _flat(item, out)
    out.append(d.bracket[1])


def _layout(d: Doc | str, col: int, out: list[str]) -> None:
    """Append ``d`` to ``out``, starting at column ``col``."""
    if isinstance(d, str) or col + d.width <= WIDTH or col > MAX_BREAK_COLUMN:
        _flat(d, out)
        return
    items, nl = d.items, lambda c: out.append("\n" + " " * c)  # noqa: E731
    out.append(d.bracket[0])
    if d.layout == "lines":  # every item on its own line, aligned
        for k, item in enumerate(items):
            if k:
                nl(col + 1)
            _layout(item, col + 1, out)
    elif d.layout in ("let", "body"):  # head and all but the last on one line, then the body
        c = col + 1
        for k, item in enumerate(items[:-1]):
            if k:
                out.append(" ")
                c += 1
            _layout(item, c, out)
            c += item.width if isinstance(item, Doc) else len(item)
        nl(col + 2)
        _layout(items[-1], col + 2, out)
    else:  # "call" / "if": head and first argument, the rest aligned under it
        head = items[0]
        _layout(head, col + 1, out)
        hw = head.width if isinstance(head, Doc) else len(head)
        indent = col + 2 + hw if d.layout == "if" or hw <= 10 else col + 2
        if len(items) > 1:
            if indent == col + 2:
                nl(indent)
            else:
                out.append(" ")
            _layout(items[1], indent, out)
        for item in items[2:]:
            nl(indent)
            _layout(item, indent, out)
    out.append(d.bracket[1])


def render(d: Doc | str, col: int = 0) -> str:
    out: list[str] = []
    _layout(d, col, out)
    return "".join(out)


@deep
def show_expr(e: ir.Expr) -> str:
    return render(expr_doc(e))


@deep
def show_decl(d: ir.Decl) -> str:
    return render(decl_doc(d))


@deep
def show_program(p: ir.Program) -> str:
    return "\n\n".join(render(decl_doc(d)) for d in p.decls) + "\n"
