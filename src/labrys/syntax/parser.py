"""Parse `.ks` s-expressions into the IR (docs/reference.md §1–4, §7).

Every ``(f x)`` with a name in head position is a :class:`Call`; the checker
turns it into an :class:`App` when ``f`` is a local variable of function type
(Note [Calls of local functions] in the checker).  The parser tracks scope
only for older forms that pass function names bare.  Multi-binding lets
become nested :class:`Let` nodes.
"""
from __future__ import annotations

import re

from ..errors import Source, Span
from ..ir import nodes as ir
from ..ir.types import TSum
from ..util.deep import deep, gc_paused
from . import knossos_forms
from .knossos_forms import bind_sizes, dummy_value, operator_name, size_variables, type_applied
from .parse_names import (
    KEYWORDS,
    edef_arg_type,
    error_at,
    is_symbol,
    parse_name,
    parse_param,
    parse_params,
    parse_type,
    parse_wrt,
    symbol,
    type_from_items,
)
from .sexpr import Atom, SExpr, SList, read

_GET = re.compile(r"get\$([0-9]+)\$([0-9]+)\Z")
# --- expressions ------------------------------------------------------------


class _ExprParser:
    def __init__(self) -> None:
        self.scope: dict[str, int] = {}

    def bind(self, names: tuple[str, ...]) -> None:
        for n in names:
            self.scope[n] = self.scope.get(n, 0) + 1

    def unbind(self, names: tuple[str, ...]) -> None:
        for n in names:
            self.scope[n] -= 1

    def under(self, names: tuple[str, ...], x: SExpr) -> ir.Expr:
        self.bind(names)
        try:
            return self.expr(x)
        finally:
            self.unbind(names)

    def expr(self, x: SExpr) -> ir.Expr:
        if isinstance(x, Atom):
            return self.atom(x)
        if x.bracket == "[":
            raise error_at("a structured name like [f T] can only be called: write (fn [f T]) for its value", x)
        if not x.items:
            raise error_at("empty expression '()'; the unit value is written (tuple)", x)
        head = x.items[0]
        if is_symbol(head):
            form = _FORMS.get(head.value)
            if form is not None and not self.scope.get(head.value):
                return form(self, x, x.items[1:])
            m = _GET.match(head.value)
            if m and not self.scope.get(head.value):
                return self.form_get(x, int(m.group(1)), int(m.group(2)))
        return self.call(x, head, x.items[1:])

    def atom(self, x: Atom) -> ir.Expr:
        if x.kind == "sym":
            if x.value in ("true", "false"):
                return ir.const(x.value == "true", span=x.span)
            if x.value in KEYWORDS:
                raise error_at(f"'{x.value}' is a keyword, not a value", x)
            return ir.Var(x.value, span=x.span)
        return ir.const(x.value, span=x.span)

    def call(self, x: SList, head: SExpr, args: tuple[SExpr, ...]) -> ir.Expr:
        if isinstance(head, Atom) and head.kind != "sym" and not args:
            return self.atom(head)  # Note [Parenthesised atoms]: (0.0) is 0.0
        if isinstance(head, SList) and head.bracket == "(":
            raise error_at("only a named function can be called; bind the function to a variable first", head)
        # a local's name is never an old-style derived name like D$f
        name = head.value if is_symbol(head) and self.scope.get(head.value) else parse_name(head)
        if isinstance(name, str) and not self.scope.get(name):
            name = operator_name(name, len(args)) or name   # Note [Symbolic operators]
        if len(args) >= 2 and is_symbol(args[0], "@") and not self.scope.get("@"):
            name, args = type_applied(name, parse_type(args[1])), args[2:]   # Note [Type applications]
        if name in _OLD_FUNCTION_ARGS:
            return self.old_function_args(x, name, args)
        return ir.Call(name, self.arg(x, args), span=x.span)

    def arg(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        parsed = [self.expr(a) for a in args]
        return parsed[0] if len(parsed) == 1 else ir.Tuple(tuple(parsed), span=x.span)

    def old_function_args(self, x: SList, name: str, args: tuple[SExpr, ...]) -> ir.Expr:
        """Older programs pass function names bare: ``($trace mul@ff x x)`` means
        ``($trace (mul@ff x x))`` and ``($check f rev$f x dx df)`` passes f, rev$f."""
        def is_fn(a: SExpr) -> bool:
            return isinstance(a, Atom) and a.kind == "sym" and not self.scope.get(a.value) \
                and a.value not in ("true", "false")
        if name == "$trace" and len(args) > 1 and is_fn(args[0]):
            inner = SList("(", args, Span(x.span.source, args[0].span.start, args[-1].span.end))
            return ir.Call(name, self.expr(inner), span=x.span)
        if name == "$check" and len(args) >= 2:
            fns = [ir.FnRef(parse_name(a), span=a.span) if is_fn(a) else self.expr(a) for a in args[:2]]
            rest = [self.expr(a) for a in args[2:]]
            return ir.Call(name, ir.Tuple(tuple(fns + rest), span=x.span), span=x.span)
        return ir.Call(name, self.arg(x, args), span=x.span)

    def arity(self, x: SList, args: tuple, k: int, shape: str) -> None:
        if len(args) != k:
            raise error_at(f"malformed '{x.items[0].value}': expected {shape}", x)

    def form_let(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        self.arity(x, args, 2, "(let (x e) body) or (let ((x e) ...) body)")
        bindings, body = args
        if not isinstance(bindings, SList) or bindings.bracket != "(":
            raise error_at("expected let bindings: (x e), ((a b) e) or ((x e) (y f) ...)", bindings)
        single = _binding_pattern(bindings)
        group = [bindings] if single is not None else list(bindings.items)
        if not group:
            raise error_at("a let needs at least one binding", bindings)
        lets = []
        for b in group:
            pattern = _binding_pattern(b)
            if pattern is None:
                raise error_at("expected a let binding (x e) or ((a b ...) e)", b)
            rhs = self.expr(b.items[1])
            lets.append((pattern, rhs, b.span))
            self.bind(pattern if isinstance(pattern, tuple) else (pattern,))
        try:
            result = self.expr(body)
        finally:
            for pattern, _, _ in lets:
                self.unbind(pattern if isinstance(pattern, tuple) else (pattern,))
        for k, (pattern, rhs, span) in reversed(list(enumerate(lets))):
            whole = x.span if k == 0 else Span(span.source, span.start, x.span.end)
            result = ir.Let(pattern, rhs, result, span=whole, binding_span=span)
        return result

    def form_if(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        self.arity(x, args, 3, "(if cond then else)")
        return ir.If(*(self.expr(a) for a in args), span=x.span)

    def form_tuple(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        return ir.Tuple(tuple(self.expr(a) for a in args), span=x.span)

    def form_get(self, x: SList, i: int, n: int) -> ir.Expr:
        self.arity(x, x.items[1:], 1, "(get$i$n e)")
        if not 1 <= i <= n:
            raise error_at(f"get${i}${n}: the index must be between 1 and {n}", x.items[0])
        return ir.Get(i, n, self.expr(x.items[1]), span=x.span)

    def form_lam(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        self.arity(x, args, 2, "(lam (x : T) body)")
        p = parse_param(args[0])
        return ir.Lam(p.name, p.type, self.under((p.name,), args[1]), span=x.span)

    def form_assert(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        self.arity(x, args, 2, "(assert cond body)")
        return ir.Assert(self.expr(args[0]), self.expr(args[1]), span=x.span)

    def _inj(self, x: SList, args: tuple[SExpr, ...], left: bool) -> ir.Expr:
        self.arity(x, args, 2, f"({'inl' if left else 'inr'} (Sum A B) e)")
        t = parse_type(args[0])
        if not isinstance(t, TSum):
            raise error_at("an injection carries its full (Sum A B) type", args[0])
        return ir.Inj(left, t, self.expr(args[1]), span=x.span)

    def form_inl(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        return self._inj(x, args, True)

    def form_inr(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        return self._inj(x, args, False)

    def form_case(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        self.arity(x, args, 3, "(case e ((inl x) e1) ((inr y) e2))")
        scrut = self.expr(args[0])
        alts = []
        for alt, tag in zip(args[1:], ("inl", "inr")):
            ok = (isinstance(alt, SList) and len(alt.items) == 2 and isinstance(alt.items[0], SList)
                  and len(alt.items[0].items) == 2 and is_symbol(alt.items[0].items[0], tag))
            if not ok:
                raise error_at(f"expected the alternative (({tag} x) body)", alt)
            var = symbol(alt.items[0].items[1], "a variable")
            alts.append((var, self.under((var,), alt.items[1])))
        (lv, lb), (rv, rb) = alts
        return ir.Case(scrut, lv, lb, rv, rb, span=x.span)

    def form_dummy(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        """``($dummy T)``: Note [$dummy] in knossos_forms.py."""
        if not args:
            raise error_at("malformed '$dummy': expected ($dummy TYPE)", x)
        return dummy_value(type_from_items(args, x), x.span)

    def form_fn(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        self.arity(x, args, 1, "(fn NAME) or (fn [NAME T])")
        return ir.FnRef(parse_name(args[0]), span=x.span)


_OLD_FUNCTION_ARGS = ("$trace", "$check")

# Note [Parenthesised atoms]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# Older Knossos programs write (0.0) for 0.0 and (x) for a variable x.  A
# parenthesised literal is the literal.  (x) parses as a call of x on
# (tuple), which the checker reads as the variable when x is a local that is
# not a function (see _Checker, case Call).

_FORMS = {name: getattr(_ExprParser, "form_" + name)
          for name in ("let", "if", "tuple", "lam", "assert", "inl", "inr", "case", "fn")}
_FORMS["$dummy"] = _ExprParser.form_dummy
_FORMS.update(knossos_forms.LINEAR_FORMS, **knossos_forms.DPS_FORMS)   # Notes in knossos_forms.py


def _binding_pattern(b: SExpr) -> str | tuple[str, ...] | None:
    """The pattern of a binding ``(x e)`` / ``((a b) e)``, or None if ``b`` is not one."""
    if not (isinstance(b, SList) and b.bracket == "(" and len(b.items) == 2):
        return None
    p = b.items[0]
    if is_symbol(p) and p.value not in KEYWORDS:
        return p.value
    if isinstance(p, SList) and p.bracket == "(" and all(is_symbol(v) and v.value not in KEYWORDS for v in p.items):
        names = tuple(v.value for v in p.items)
        if len(set(names)) != len(names):
            raise error_at("a tuple pattern binds each name once", p)
        return names
    return None


# --- declarations -----------------------------------------------------------


def _decl(x: SExpr) -> ir.Decl:
    if not (isinstance(x, SList) and x.items and is_symbol(x.items[0])):
        raise error_at("expected a top-level declaration: (def ...), (edef ...), (gdef ...) or (rule ...)", x)
    kind, args = x.items[0].value, x.items[1:]
    if kind == "def" and len(args) == 5 and isinstance(args[1], SList) and args[1].bracket == "[":
        return knossos_forms.polymorphic_def(x, args, _decl)   # Note [Polymorphic defs] in types/poly.py
    if kind == "def":
        if len(args) != 4:
            raise error_at("malformed def: expected (def NAME RETTYPE PARAMS BODY)", x)
        name, params = parse_name(args[0]), parse_params(args[2])
        sizes = size_variables(args[2], tuple(p.name for p in params))   # Note [Sized vectors]
        body = _ExprParser().under(tuple(p.name for p in params) + tuple(n for n, _ in sizes), args[3])
        return ir.Def(name, parse_type(args[1]), params, bind_sizes(sizes, body), span=x.span)
    if kind == "edef":
        if len(args) != 3:
            raise error_at("malformed edef: expected (edef NAME RETTYPE ARGTYPE)", x)
        return ir.Edef(parse_name(args[0]), parse_type(args[1]), edef_arg_type(args[2]), span=x.span)
    if kind == "gdef":
        if len(args) not in (2, 3):
            raise error_at("malformed gdef: expected (gdef DERIVATION [NAME ARGTYPE]) or "
                       "(gdef DERIVATION [NAME ARGTYPE] (wrt PARAM ...))", x)
        wrt = parse_wrt(args[2]) if len(args) == 3 else ()
        return ir.Gdef(symbol(args[0], "a derivation name"), parse_name(args[1]), wrt, span=x.span)
    if kind == "rule":
        if len(args) != 4 or not (isinstance(args[0], Atom) and args[0].kind == "str"):
            raise error_at('malformed rule: expected (rule "name" PARAMS LHS RHS)', x)
        params = parse_params(args[1])
        p = _ExprParser()
        names = tuple(q.name for q in params)
        return ir.Rule(args[0].value, params, p.under(names, args[2]), p.under(names, args[3]), span=x.span)
    raise error_at(f"unknown declaration '{kind}': expected def, edef, gdef or rule", x.items[0])


@gc_paused
@deep
def parse_program(text: str, filename: str = "<input>") -> ir.Program:
    """Parse a whole `.ks` file."""
    src = Source(filename, text)
    return ir.Program(tuple(_decl(x) for x in read(src)))


@deep
def parse_expr(text: str, filename: str = "<expr>", scope: tuple[str, ...] = ()) -> ir.Expr:
    """Parse one expression (used for CLI arguments and tests)."""
    items = read(Source(filename, text))
    if len(items) != 1:
        span = items[1].span if len(items) > 1 else Span(Source(filename, text), 0, len(text))
        raise error_at("expected exactly one expression", span)
    return _ExprParser().under(scope, items[0])
