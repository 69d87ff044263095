"""Parse `.ks` s-expressions into the IR (docs/reference.md §1–4, §7).

Every ``(f x)`` with a name in head position is a :class:`Call`; the checker
turns it into an :class:`App` when ``f`` is a local variable of function type
(Note [Calls of local functions] in the checker).  The parser tracks scope
only for older forms that pass function names bare.  Multi-binding lets
become nested :class:`Let` nodes.
"""
from __future__ import annotations

import re

from ..errors import LabrysError, Source, Span
from ..ir import nodes as ir
from ..ir.names import DerivedName, Name, TypedName
from ..ir.types import BASE_TYPES, TLM, TBase, TLam, TSum, TTensor, TTuple, Type
from ..util.deep import deep, gc_paused
from . import knossos_forms
from .knossos_forms import bind_sizes, dummy_value, operator_name, size_variables, type_applied
from .sexpr import Atom, SExpr, SList, read

_GET = re.compile(r"get\$([0-9]+)\$([0-9]+)\Z")
# Older Knossos programs spell [fwd f] as fwd$f (and [D $ranhashdoub] as D$$ranhashdoub).
_OLD_DERIVED = re.compile(r"(D|Dt|R|fwd|rev|revl|fwdt|revt|CL|shape|suffwdpass|sufrevpass|sufrev)\$(.+)\Z")
_TYPE_HEADS = {"Tuple", "Vec", "Tensor", "Lam", "Lambda", "LM", "Sum"}  # Lambda: lambda.ks's Lam
_KEYWORDS = {"let", "if", "tuple", "lam", "assert", "inl", "inr", "case", "fn",
             "def", "edef", "gdef", "rule", ":"}


def _err(msg: str, where: SExpr | Span) -> LabrysError:
    return LabrysError(msg, where if isinstance(where, Span) else where.span)


def _sym(x: SExpr, what: str) -> str:
    if isinstance(x, Atom) and x.kind == "sym":
        return x.value
    raise _err(f"expected {what}", x)


def _is_sym(x: SExpr, value: str | None = None) -> bool:
    return isinstance(x, Atom) and x.kind == "sym" and (value is None or x.value == value)


# --- types ------------------------------------------------------------------


def parse_type(x: SExpr) -> Type:
    if isinstance(x, Atom):
        if x.kind == "sym" and x.value in BASE_TYPES:
            return BASE_TYPES[x.value]
        if x.kind == "sym" and x.value in ("Tuple", "Allocator"):   # Note [Destination-passing style]
            return TTuple(())
        if x.kind == "sym" and x.value in knossos_forms.TYPE_VARIABLES.get():
            return TBase(x.value)
        raise _err(f"unknown type '{x.text}'", x)
    return _type_from_items(x.items, x)


def _type_from_items(items: tuple[SExpr, ...], where: SExpr | Span) -> Type:
    """A type written as a sequence: ``Tuple Float Float``, ``Vec (Vec Float)``."""
    if not items:
        raise _err("expected a type", where)
    head = items[0]
    if len(items) == 1:
        return parse_type(head)
    if not _is_sym(head) or head.value not in _TYPE_HEADS:
        raise _err("expected a type", head)
    args = items[1:]
    name = head.value

    def arity(k: int) -> None:
        if len(args) != k:
            raise _err(f"'{name}' takes {k} type argument{'s' * (k != 1)}, got {len(args)}", where)

    if name == "Tuple":
        return TTuple(tuple(parse_type(a) for a in args))
    if name == "Vec":
        if len(args) == 2:   # Note [Sized vectors]: (Vec n T) of the oldest Knossos programs
            return TTensor(1, parse_type(args[1]))
        arity(1)
        return TTensor(1, parse_type(args[0]))
    if name == "Tensor":
        arity(2)
        rank = args[0]
        if not (isinstance(rank, Atom) and rank.kind == "int" and rank.value >= 1):
            raise _err("a Tensor rank is a positive integer", rank)
        return TTensor(rank.value, parse_type(args[1]))
    arity(2)
    ctor = {"Lam": TLam, "Lambda": TLam, "LM": TLM, "Sum": TSum}[name]
    return ctor(parse_type(args[0]), parse_type(args[1]))


def _edef_arg_type(x: SExpr) -> Type:
    """``(Float Float)`` (old style list of types), ``(Tuple ...)``, ``Float``."""
    if isinstance(x, SList) and x.items and _is_sym(x.items[0]) and x.items[0].value in _TYPE_HEADS:
        return parse_type(x)
    if isinstance(x, SList):
        types = tuple(parse_type(t) for t in x.items)
        return types[0] if len(types) == 1 else TTuple(types)
    return parse_type(x)


# --- names and parameters ---------------------------------------------------


def _looks_like_type(x: SExpr) -> bool:
    if isinstance(x, Atom):
        return x.kind == "sym" and (x.value in BASE_TYPES or x.value in ("Tuple", "Allocator"))
    return bool(x.items) and _is_sym(x.items[0]) and x.items[0].value in _TYPE_HEADS


def parse_name(x: SExpr) -> Name:
    """``f``, ``[f T]``, ``[rev f]``, ``[fwd [f (Tuple Float Float)]]``."""
    if isinstance(x, Atom):
        name = _sym(x, "a function name")
        old = _OLD_DERIVED.match(name)
        return DerivedName(knossos_forms.OLD_DERIVATIONS.get(old.group(1), old.group(1)), old.group(2)) if old else name
    if x.bracket != "[" or len(x.items) < 2:
        raise _err("expected a function name such as f, [f Float] or [rev f]", x)
    head, rest = x.items[0], x.items[1:]
    if len(rest) == 2 and _is_wrt(rest[1]) and not _looks_like_type(rest[0]):
        return DerivedName(_sym(head, "a derivation name"), parse_name(rest[0]), parse_wrt(rest[1]))
    if len(rest) == 1 and not _looks_like_type(rest[0]):
        return DerivedName(_sym(head, "a derivation name"), parse_name(rest[0]))
    return TypedName(_sym(head, "a function name"), _type_from_items(rest, x))


def _is_wrt(x: SExpr) -> bool:
    return isinstance(x, SList) and bool(x.items) and _is_sym(x.items[0], "wrt")


def parse_wrt(x: SExpr) -> tuple[str, ...]:
    """``(wrt a b ...)``: the parameters a derivative is taken with respect to (docs/activity.md)."""
    if not _is_wrt(x) or len(x.items) < 2:
        raise _err("expected '(wrt PARAM ...)', naming at least one parameter", x)
    names = tuple(_sym(a, "a parameter name") for a in x.items[1:])
    for k, a in enumerate(names):
        if a in names[:k]:
            raise _err(f"parameter '{a}' appears twice in wrt", x.items[k + 1])
    return names


def _param(x: SExpr) -> ir.Param:
    if not (isinstance(x, SList) and len(x.items) >= 3 and _is_sym(x.items[1], ":")):
        raise _err("expected a parameter '(name : Type)'", x)
    name = _sym(x.items[0], "a parameter name")
    if name in _KEYWORDS or name in ("true", "false"):
        raise _err(f"'{name}' is a keyword and cannot name a parameter", x.items[0])
    return ir.Param(name, _type_from_items(x.items[2:], x), span=x.span)


def parse_params(x: SExpr) -> tuple[ir.Param, ...]:
    """``(x : T)``, ``((x : T) (y : U) ...)`` or ``()``."""
    if not isinstance(x, SList):
        raise _err("expected parameters: '(x : T)', '((x : T) (y : U))' or '()'", x)
    if len(x.items) >= 2 and _is_sym(x.items[1], ":"):
        return (_param(x),)
    params = tuple(_param(p) for p in x.items)
    seen: dict[str, ir.Param] = {}
    for p in params:
        if p.name in seen:
            raise _err(f"parameter '{p.name}' appears twice", p.span)
        seen[p.name] = p
    return params


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
            raise _err("a structured name like [f T] can only be called: write (fn [f T]) for its value", x)
        if not x.items:
            raise _err("empty expression '()'; the unit value is written (tuple)", x)
        head = x.items[0]
        if _is_sym(head):
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
            if x.value in _KEYWORDS:
                raise _err(f"'{x.value}' is a keyword, not a value", x)
            return ir.Var(x.value, span=x.span)
        return ir.const(x.value, span=x.span)

    def call(self, x: SList, head: SExpr, args: tuple[SExpr, ...]) -> ir.Expr:
        if isinstance(head, Atom) and head.kind != "sym" and not args:
            return self.atom(head)  # Note [Parenthesised atoms]: (0.0) is 0.0
        if isinstance(head, SList) and head.bracket == "(":
            raise _err("only a named function can be called; bind the function to a variable first", head)
        # a local's name is never an old-style derived name like D$f
        name = head.value if _is_sym(head) and self.scope.get(head.value) else parse_name(head)
        if isinstance(name, str) and not self.scope.get(name):
            name = operator_name(name, len(args)) or name   # Note [Symbolic operators]
        if len(args) >= 2 and _is_sym(args[0], "@") and not self.scope.get("@"):
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
            raise _err(f"malformed '{x.items[0].value}': expected {shape}", x)

    def form_let(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        self.arity(x, args, 2, "(let (x e) body) or (let ((x e) ...) body)")
        bindings, body = args
        if not isinstance(bindings, SList) or bindings.bracket != "(":
            raise _err("expected let bindings: (x e), ((a b) e) or ((x e) (y f) ...)", bindings)
        single = _binding_pattern(bindings)
        group = [bindings] if single is not None else list(bindings.items)
        if not group:
            raise _err("a let needs at least one binding", bindings)
        lets = []
        for b in group:
            pattern = _binding_pattern(b)
            if pattern is None:
                raise _err("expected a let binding (x e) or ((a b ...) e)", b)
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
            raise _err(f"get${i}${n}: the index must be between 1 and {n}", x.items[0])
        return ir.Get(i, n, self.expr(x.items[1]), span=x.span)

    def form_lam(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        self.arity(x, args, 2, "(lam (x : T) body)")
        p = _param(args[0])
        return ir.Lam(p.name, p.type, self.under((p.name,), args[1]), span=x.span)

    def form_assert(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        self.arity(x, args, 2, "(assert cond body)")
        return ir.Assert(self.expr(args[0]), self.expr(args[1]), span=x.span)

    def _inj(self, x: SList, args: tuple[SExpr, ...], left: bool) -> ir.Expr:
        self.arity(x, args, 2, f"({'inl' if left else 'inr'} (Sum A B) e)")
        t = parse_type(args[0])
        if not isinstance(t, TSum):
            raise _err("an injection carries its full (Sum A B) type", args[0])
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
                  and len(alt.items[0].items) == 2 and _is_sym(alt.items[0].items[0], tag))
            if not ok:
                raise _err(f"expected the alternative (({tag} x) body)", alt)
            var = _sym(alt.items[0].items[1], "a variable")
            alts.append((var, self.under((var,), alt.items[1])))
        (lv, lb), (rv, rb) = alts
        return ir.Case(scrut, lv, lb, rv, rb, span=x.span)

    def form_dummy(self, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
        """``($dummy T)``: Note [$dummy] in knossos_forms.py."""
        if not args:
            raise _err("malformed '$dummy': expected ($dummy TYPE)", x)
        return dummy_value(_type_from_items(args, x), x.span)

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
    if _is_sym(p) and p.value not in _KEYWORDS:
        return p.value
    if isinstance(p, SList) and p.bracket == "(" and all(_is_sym(v) and v.value not in _KEYWORDS for v in p.items):
        names = tuple(v.value for v in p.items)
        if len(set(names)) != len(names):
            raise _err("a tuple pattern binds each name once", p)
        return names
    return None


# --- declarations -----------------------------------------------------------


def _decl(x: SExpr) -> ir.Decl:
    if not (isinstance(x, SList) and x.items and _is_sym(x.items[0])):
        raise _err("expected a top-level declaration: (def ...), (edef ...), (gdef ...) or (rule ...)", x)
    kind, args = x.items[0].value, x.items[1:]
    if kind == "def" and len(args) == 5 and isinstance(args[1], SList) and args[1].bracket == "[":
        return knossos_forms.polymorphic_def(x, args, _decl)   # Note [Polymorphic defs] in types/poly.py
    if kind == "def":
        if len(args) != 4:
            raise _err("malformed def: expected (def NAME RETTYPE PARAMS BODY)", x)
        name, params = parse_name(args[0]), parse_params(args[2])
        sizes = size_variables(args[2], tuple(p.name for p in params))   # Note [Sized vectors]
        body = _ExprParser().under(tuple(p.name for p in params) + tuple(n for n, _ in sizes), args[3])
        return ir.Def(name, parse_type(args[1]), params, bind_sizes(sizes, body), span=x.span)
    if kind == "edef":
        if len(args) != 3:
            raise _err("malformed edef: expected (edef NAME RETTYPE ARGTYPE)", x)
        return ir.Edef(parse_name(args[0]), parse_type(args[1]), _edef_arg_type(args[2]), span=x.span)
    if kind == "gdef":
        if len(args) not in (2, 3):
            raise _err("malformed gdef: expected (gdef DERIVATION [NAME ARGTYPE]) or "
                       "(gdef DERIVATION [NAME ARGTYPE] (wrt PARAM ...))", x)
        wrt = parse_wrt(args[2]) if len(args) == 3 else ()
        return ir.Gdef(_sym(args[0], "a derivation name"), parse_name(args[1]), wrt, span=x.span)
    if kind == "rule":
        if len(args) != 4 or not (isinstance(args[0], Atom) and args[0].kind == "str"):
            raise _err('malformed rule: expected (rule "name" PARAMS LHS RHS)', x)
        params = parse_params(args[1])
        p = _ExprParser()
        names = tuple(q.name for q in params)
        return ir.Rule(args[0].value, params, p.under(names, args[2]), p.under(names, args[3]), span=x.span)
    raise _err(f"unknown declaration '{kind}': expected def, edef, gdef or rule", x.items[0])


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
        raise _err("expected exactly one expression", span)
    return _ExprParser().under(scope, items[0])
