"""The type checker: infers and records the type of every expression,
resolves calls among user overloads and the prelude (docs/reference.md §3, §6).

    Σ; Γ ⊢ e : τ   ↦   the same expression with ``.type = τ`` on every node

Σ is the function table (defs, edefs, gdef-generated functions, primitives),
Γ the local variables (Σ itself, overloads and derived functions made on
demand: :mod:`labrys.types.functions`).  Checking returns a new, typed program; the input is
never mutated.  The checker knows primitives from the primitive table
(:mod:`labrys.types.primitives`) and derivations only through the
:class:`DerivationTable` it is given (the registry of labrys.ad, which lives
above this layer).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field

from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.names import DerivedName, Name, TypedName, erase_types, selected_type, show_name
from ..ir.types import BOOL, TLam, TSum, TTuple, Type
from ..util.deep import deep, gc_paused
from .aten import add_aten_prelude
from .compat import drop_redefinitions, implement_runtime_edefs, shape_as_size
from .functions import DerivationTable, Functions, NoDerivations, Signature
from .poly import Templates, is_polymorphic
from .primitives import Primitive, lookup


@dataclass(frozen=True)
class CheckedProgram:
    program: ir.Program  # every expression carries its type
    functions: Functions
    defs: dict = field(init=False, repr=False, compare=False)  # (name, arg type) -> typed def
    # Note [Facts the checker collects]: id(typed def body) -> BodyFacts, for the defs checked here
    facts: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "defs", {(d.name, d.arg_type): d for d in self.program.decls
                                          if isinstance(d, ir.Def)})

    def typed(self, d: ir.Def) -> ir.Def:
        """The typed version of a def of the (untyped) input program."""
        return self.defs[(d.name, d.arg_type)]


@dataclass(frozen=True, slots=True)
class BodyFacts:
    """What the checker saw while typing a def's body (Note [Facts the checker collects])."""

    body: ir.Expr       # the typed body (kept: the key is its id)
    spanned: bool       # every node has a source span
    lambdas: bool       # some node is a lambda


# Note [Facts the checker collects]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The checker visits every node of every def a program loads; the backends then walked
# each def again, once to give spanless nodes a position (Note [Positions in derived
# code]) and once for the free variables of its lambdas, about 1.5 s of CPU on 10^5
# nested lets.  For a def the user wrote every node has its span and most have no
# lambda, so the checker notes both as it goes (a test per node) and the backends skip
# those walks when the facts say they would change nothing.  Derived defs, made later,
# have no facts and are walked as before.


def _err(msg: str, span: Span | None, *notes: str) -> LabrysError:
    return LabrysError(msg, span, notes)


# Note [Calls of local functions]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Knossos keeps variables and functions in separate namespaces: (sin sin)
# calls the function sin on a variable sin.  A call (f x) therefore means an
# application of the local f only when f is a local of function type (§7);
# otherwise it calls the top-level function or primitive f.  (x) for a local
# non-function x is the variable (Note [Parenthesised atoms] in the parser).


class _Checker:
    def __init__(self, functions: Functions) -> None:
        self.functions = functions
        self.env: dict[str, list[Type]] = {}
        self.unspanned = self.lambdas = False  # Note [Facts the checker collects]
        self.call_types: dict[tuple, tuple[tuple[Type, ...], Type]] = {}  # Note [Call types by identity]

    def bind(self, names: tuple[str, ...], types: tuple[Type, ...]) -> None:
        for n, t in zip(names, types):
            self.env.setdefault(n, []).append(t)

    def unbind(self, names: tuple[str, ...]) -> None:
        for n in names:
            self.env[n].pop()

    def under(self, names: tuple[str, ...], types: tuple[Type, ...], e: ir.Expr, where: Span | None) -> ir.Expr:
        self.bind(names, types)
        try:
            return self.expr(e, where)
        finally:
            self.unbind(names)

    # Note [Checking by type, reusing typed nodes]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Every pass's output is checked again (Note [Pass driver]), so most nodes the checker
    # meets already carry the type it infers.  Such a node, whose children came back
    # unchanged, is returned as it is instead of being rebuilt: re-checking a typed term
    # allocates nothing (a frozen dataclass costs a few µs to build), and a node keeps its
    # identity across checks.  The construct is found by a dict from the node's class (the
    # IR classes have no subclasses), not a ``match`` trying thirteen classes in turn.
    def expr(self, e: ir.Expr, where: Span | None) -> ir.Expr:
        try:
            case = _CASES[type(e)]
        except KeyError:
            raise TypeError(f"not an expression: {e!r}") from None
        span = e.span
        if span is None:
            self.unspanned, span = True, where
        return case(self, e, span)

    def const(self, e: ir.Const, where: Span | None) -> ir.Expr:
        t = e.ctype
        return e if e.type == t else ir.Const(e.value, t, type=t, span=e.span)

    def var(self, e: ir.Var, where: Span | None) -> ir.Expr:
        name = e.name
        scope = self.env.get(name)
        if not scope:
            hint = ("to use the function as a value write (fn " + name + ")",) \
                if self.functions.candidates(name) or lookup(name) else ()
            raise _err(f"unknown variable '{name}'", where, *hint)
        t = scope[-1]
        return e if e.type is t or e.type == t else ir.Var(name, type=t, span=e.span)

    def call(self, e: ir.Call, where: Span | None) -> ir.Expr:
        func, arg = e.func, e.arg
        local = self.env.get(func) if isinstance(func, str) else None
        if local:  # Note [Calls of local functions]
            if isinstance(local[-1], TLam):
                return self.expr(ir.App(ir.Var(func, span=e.span), arg, span=e.span), where)
            if arg == ir.Tuple(()):
                return ir.Var(func, type=local[-1], span=e.span)  # Note [Parenthesised atoms]
            if not self.functions.candidates(func) and lookup(func) is None:
                raise _err(f"'{func}' is not a function: it is a local variable of type {local[-1]}", where)
        a = self.expr(arg, where)
        regrouped = self.flattened_derivative_call(func, a)
        if regrouped is not None:
            a = regrouped
        t = self.call_type(func, a.type, where)
        return e if a is arg and e.type == t else ir.Call(func, a, type=t, span=e.span)

    def app(self, e: ir.App, where: Span | None) -> ir.Expr:
        func, arg = e.func, e.arg
        f, a = self.expr(func, where), self.expr(arg, where)
        if not isinstance(f.type, TLam):
            raise _err(f"'{_show(func)}' is not a function: it has type {f.type}", where)
        if f.type.arg != a.type:
            raise _err(f"function '{_show(func)}' takes {f.type.arg}, but the argument has type {a.type}",
                       where)
        t = f.type.res
        return e if f is func and a is arg and e.type == t else ir.App(f, a, type=t, span=e.span)

    def lam(self, e: ir.Lam, where: Span | None) -> ir.Expr:
        var, t, body = e.var, e.var_type, e.body
        self.lambdas = True
        b = self.under((var,), (t,), body, where)
        if b is body and isinstance(e.type, TLam) and e.type.arg == t and e.type.res == b.type:
            return e
        return ir.Lam(var, t, b, type=TLam(t, b.type), span=e.span)

    def let(self, e: ir.Let, where: Span | None) -> ir.Expr:
        binder, rhs, body = e.binder, e.rhs, e.body
        r = self.expr(rhs, where)
        if isinstance(binder, str):
            names, types = (binder,), (r.type,)
        elif isinstance(r.type, TTuple) and len(r.type.elems) == len(binder):
            names, types = binder, r.type.elems
        else:
            raise _err(f"cannot destructure a value of type {r.type} into {len(binder)} variables",
                       e.binding_span or where)
        b = self.under(names, types, body, where)
        if r is rhs and b is body and e.type == b.type:
            return e
        return ir.Let(binder, r, b, type=b.type, span=e.span, binding_span=e.binding_span)

    def if_(self, e: ir.If, where: Span | None) -> ir.Expr:
        c, t, f = self.expr(e.cond, where), self.expr(e.then, where), self.expr(e.orelse, where)
        self.expect(c, BOOL, "the condition of 'if'", where)
        if t.type != f.type:
            raise _err(f"the branches of 'if' have different types: {t.type} and {f.type}", where)
        if c is e.cond and t is e.then and f is e.orelse and e.type == t.type:
            return e
        return ir.If(c, t, f, type=t.type, span=e.span)

    def tuple(self, e: ir.Tuple, where: Span | None) -> ir.Expr:
        elems = e.elems
        es = tuple(self.expr(x, where) for x in elems)
        t = TTuple(tuple(x.type for x in es))
        if e.type == t and all(x is y for x, y in zip(es, elems)):
            return e
        return ir.Tuple(es, type=t, span=e.span)

    def get(self, e: ir.Get, where: Span | None) -> ir.Expr:
        i, n, arg = e.index, e.size, e.arg
        a = self.expr(arg, where)
        if not (isinstance(a.type, TTuple) and len(a.type.elems) == n):
            raise _err(f"get${i}${n} needs a tuple of {n} elements, got {a.type}", where)
        t = a.type.elems[i - 1]
        return e if a is arg and e.type == t else ir.Get(i, n, a, type=t, span=e.span)

    def assert_(self, e: ir.Assert, where: Span | None) -> ir.Expr:
        c = self.expr(e.cond, where)
        self.expect(c, BOOL, "the condition of 'assert'", where)
        b = self.expr(e.body, where)
        if c is e.cond and b is e.body and e.type == b.type:
            return e
        return ir.Assert(c, b, type=b.type, span=e.span)

    def inj(self, e: ir.Inj, where: Span | None) -> ir.Expr:
        left, t, arg = e.left, e.sum_type, e.arg
        a = self.expr(arg, where)
        self.expect(a, t.left if left else t.right, f"the payload of '{'inl' if left else 'inr'}'", where)
        return e if a is arg and e.type == t else ir.Inj(left, t, a, type=t, span=e.span)

    def case(self, e: ir.Case, where: Span | None) -> ir.Expr:
        scrut, lv, lb, rv, rb = e.scrut, e.left_var, e.left_body, e.right_var, e.right_body
        s = self.expr(scrut, where)
        if not isinstance(s.type, TSum):
            raise _err(f"'case' needs a value of a Sum type, got {s.type}", s.span or where)
        l_ = self.under((lv,), (s.type.left,), lb, where)
        r_ = self.under((rv,), (s.type.right,), rb, where)
        if l_.type != r_.type:
            raise _err(f"the alternatives of 'case' have different types: {l_.type} and {r_.type}", where)
        if s is scrut and l_ is lb and r_ is rb and e.type == l_.type:
            return e
        return ir.Case(s, lv, l_, rv, r_, type=l_.type, span=e.span)

    def fn_ref(self, e: ir.FnRef, where: Span | None) -> ir.Expr:
        func = e.func
        try:
            sig = self.functions.by_name(func)
        except LabrysError as exc:
            raise exc if exc.span is not None else _err(exc.message, where) from None
        if sig is None:
            n = len(self.functions.candidates(func))
            why = "is ambiguous: name the overload as (fn [NAME TYPE])" if n > 1 \
                else "is not a defined function"
            raise _err(f"'{show_name(func)}' {why}", where)
        t = TLam(sig.arg, sig.ret)
        return e if e.type == t else ir.FnRef(func, type=t, span=e.span)

    def flattened_derivative_call(self, func: Name, a: ir.Expr) -> ir.Expr | None:
        """Older Knossos programs pass a derivative's arguments flattened:
        (fwd$f x y dx dy) for [fwd f] of f(x, y) means ([fwd f] (x y) (dx dy))."""
        if not (isinstance(func, DerivedName) and func.derivation in ("fwd", "rev") and isinstance(a, ir.Tuple)
                and self.functions.resolve(func, a.type) is None):
            return None
        base = self.functions.by_name(func.base)
        if base is None or not isinstance(base.arg, TTuple):
            return None
        k = len(base.arg.elems)
        tail = k if func.derivation == "fwd" else 1
        if len(a.elems) != k + tail:
            return None
        primal = ir.Tuple(a.elems[:k], type=TTuple(tuple(x.type for x in a.elems[:k])), span=a.span)
        second = ir.Tuple(a.elems[k:], type=TTuple(tuple(x.type for x in a.elems[k:])), span=a.span) \
            if tail > 1 else a.elems[k]
        pair = ir.Tuple((primal, second), type=TTuple((primal.type, second.type)), span=a.span)
        return pair if self.functions.resolve(func, pair.type) is not None else None

    def expect(self, e: ir.Expr, t: Type, what: str, where: Span | None) -> None:
        if e.type != t:
            raise _err(f"{what} must have type {t}, but has type {e.type}", e.span or where)

    def call_type(self, func: Name, arg: Type, where: Span | None) -> Type:
        # Note [Call types by identity]: a call's result type is fixed by its function and
        # argument type (a resolved call stays resolved: Note [Checking a checked def]); the
        # argument types of n calls of (add x 1.0) are n tuples of the same two type objects,
        # so the answer is remembered by the ids of the argument's parts, kept alive with it.
        parts = arg.elems if type(arg) is TTuple else (arg,)
        key = (func, *map(id, parts))
        known = self.call_types.get(key)
        if known is not None and len(known[0]) == len(parts) and all(map(operator.is_, known[0], parts)):
            return known[1]
        t = self._call_type(func, arg, where)
        self.call_types[key] = (parts, t)
        return t

    def _call_type(self, func: Name, arg: Type, where: Span | None) -> Type:
        try:
            target = self.functions.resolve(func, arg)
        except LabrysError as exc:  # a derivation that is unknown or not implemented yet
            raise exc if exc.span is not None else _err(exc.message, where) from None
        if isinstance(target, Signature):
            return target.ret
        if isinstance(target, Primitive):
            return target.typeof(arg)
        sigs = self.functions.candidates(func)
        prim = lookup(func)
        if not sigs and prim is None:
            raise _err(f"unknown function '{show_name(func)}'", where)
        if isinstance(func, TypedName) and func.type != arg:
            raise _err(f"{show_name(func)} is called with an argument of type {arg}", where)
        notes = tuple(f"candidate: {show_name(s.name)} takes {s.arg}" for s in sigs)
        if prim is not None:
            notes += (f"primitive {prim.name}: {prim.doc}",)
        raise _err(f"no overload of '{show_name(func)}' accepts an argument of type {arg}", where, *notes)


_CASES = {ir.Const: _Checker.const, ir.Var: _Checker.var, ir.Call: _Checker.call, ir.App: _Checker.app,
          ir.Lam: _Checker.lam, ir.Let: _Checker.let, ir.If: _Checker.if_, ir.Tuple: _Checker.tuple,
          ir.Get: _Checker.get, ir.Assert: _Checker.assert_, ir.Inj: _Checker.inj, ir.Case: _Checker.case,
          ir.FnRef: _Checker.fn_ref}


def _show(e: ir.Expr) -> str:
    return e.name if isinstance(e, ir.Var) else "expression"


def collect_functions(program: ir.Program, derivations: DerivationTable | None = None,
                      templates: Templates | None = None) -> Functions:
    """Σ from the declarations (defs and edefs first, then what gdefs generate)."""
    fs = Functions(derivations or NoDerivations(), templates=templates or Templates([]))
    for d in program.decls:
        if isinstance(d, ir.Def):
            _check_name_type(d.name, d.arg_type, d.span)
            fs.add(Signature(d.name, d.arg_type, d.ret, d, _primal_of_name(d.name)))
        elif isinstance(d, ir.Edef):
            prim = lookup(d.name)
            if prim is not None and prim.typeof(d.arg_type) == d.ret:
                continue  # re-declaring a primitive, as older programs do
            fs.add(Signature(d.name, d.arg_type, d.ret, d, _primal_of_name(d.name)))
    for d in program.decls:
        if isinstance(d, ir.Gdef):
            sig = _gdef_signature(d, fs)
            if sig is not None:
                fs.add(sig)
    return fs


def _check_name_type(name: Name, arg: Type, span: Span | None) -> None:
    if isinstance(name, TypedName) and name.type != arg:
        raise _err(f"{show_name(name)} is defined with argument type {arg}", span)


def _primal_of_name(name: Name) -> Type | None:
    return selected_type(name) if isinstance(name, DerivedName) else None


def _gdef_signature(d: ir.Gdef, fs: Functions) -> Signature | None:
    if isinstance(d.name, TypedName) and all(s.arg != d.name.type for s in fs.candidates(d.name)):
        fs.instantiate(d.name.name, d.name.type)   # a gdef of a polymorphic def at a type
    base = fs.by_name(d.name)
    if base is None or isinstance(base.decl, ir.Edef):
        what = "no def" if not fs.candidates(d.name) else "no single def"
        raise _err(f"gdef {d.derivation}: {what} matches {show_name(d.name)}", d.span,
                   "write the argument type: (gdef DERIVATION [NAME ARGTYPE])")
    try:
        conv = fs.signature(d.derivation, base, base.arg, d.wrt)
    except LabrysError as exc:  # unknown, or not implemented yet
        raise _err(f"gdef {d.derivation}: {exc.message}", d.span) from None
    if conv is None:
        raise _err(f"gdef {d.derivation}: the derivation does not apply to {show_name(base.name)} : "
                   f"{base.arg} -> {base.ret}", d.span)
    name = DerivedName(d.derivation, base.name if isinstance(base.name, TypedName) else erase_types(base.name),
                       d.wrt)
    return Signature(name, conv[0], conv[1], d, base.arg)


# Note [Checking a checked def]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A pass often checks the def it returns (CHAD's linearity lint, the simplifier's last
# sweep), and the pass driver checks it again (Note [Pass driver]).  Checking is
# idempotent, so the last def check_def returned, asked again against the same table,
# is returned at once: one remembered (table, def) pair, compared by identity.  A table
# only grows (instances, derived functions made on demand), which never changes how a
# call already resolved resolves.
_last_checked: list = [None, None]


@deep
def check_def(d: ir.Def, functions: Functions) -> ir.Def:
    """Type a (generated) def against an existing function table."""
    if _last_checked[1] is d and _last_checked[0] is functions:
        return d
    out = _check_decl(_Checker(functions), d)
    _last_checked[:] = [functions, out]
    return out


def _check_decl(c: _Checker, d: ir.Decl) -> ir.Decl:
    match d:
        case ir.Def(name, ret, params, body):
            names, types = tuple(p.name for p in params), tuple(p.type for p in params)
            b = c.under(names, types, body, d.span)
            as_size = shape_as_size(name, ret, b.type, body) if b.type != ret else None
            if as_size is not None:   # Note [A shape declared as a size] in types/compat.py
                b = c.under(names, types, as_size, d.span)
            if b.type != ret:
                raise _err(f"{show_name(name)} is declared to return {ret}, but its body has type {b.type}",
                           body.span or d.span)
            return d if b is body else ir.Def(name, ret, params, b, span=d.span)
        case ir.Rule(rname, params, lhs, rhs):
            names, types = tuple(p.name for p in params), tuple(p.type for p in params)
            lt, rt = c.under(names, types, lhs, d.span), c.under(names, types, rhs, d.span)
            if lt.type != rt.type:
                raise _err(f'rule "{rname}": the two sides have types {lt.type} and {rt.type}', d.span)
            return ir.Rule(rname, params, lt, rt, span=d.span)
    return d


@gc_paused
@deep
def check_program(program: ir.Program, derivations: DerivationTable | None = None) -> CheckedProgram:
    program = implement_runtime_edefs(drop_redefinitions(add_aten_prelude(program)))   # Notes in compat.py, aten.py
    templates = Templates([d for d in program.decls if is_polymorphic(d)])   # Note [Polymorphic defs]
    program = ir.Program(tuple(d for d in program.decls if not is_polymorphic(d)))
    functions = collect_functions(program, derivations, templates)
    checker = _Checker(functions)
    facts: dict[int, BodyFacts] = {}
    typed = [_check_noting(checker, d, facts) for d in program.decls]
    for inst in templates.made:   # grows while instances call other instances
        try:
            typed.append(_check_noting(checker, inst, facts))
        except LabrysError as exc:
            where = f"in the instance of the polymorphic def {show_name(inst.name)} at argument type {inst.arg_type}"
            raise LabrysError(exc.message, exc.span, (*exc.notes, where)) from None
    return CheckedProgram(ir.Program(tuple(typed)), functions, facts)


def _check_noting(c: _Checker, d: ir.Decl, facts: dict[int, BodyFacts]) -> ir.Decl:
    """_check_decl, noting what it saw of a def's body (Note [Facts the checker collects])."""
    c.unspanned = c.lambdas = False
    out = _check_decl(c, d)
    if isinstance(out, ir.Def):
        facts[id(out.body)] = BodyFacts(out.body, not c.unspanned, c.lambdas)
    return out


@deep
def check_expr(e: ir.Expr, functions: Functions, env: dict[str, Type] | None = None) -> ir.Expr:
    """Type an expression under local variables ``env`` (used by passes and tests)."""
    c = _Checker(functions)
    env = env or {}
    return c.under(tuple(env), tuple(env.values()), e, e.span)
