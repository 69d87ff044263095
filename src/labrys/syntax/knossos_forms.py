"""Spellings from programs written for the Knossos compiler that the parser
reads as labrys forms: ``($dummy T)``, the symbolic operators of its oldest
test programs (``+``, ``*``, ``==``, ...), sized vectors, type applications,
the linear-types experiment (``revl$f``, ``untuple``, ``forRange``),
destination-passing style (``dps$build``, ``$allocateAndEmplace``) and the
type variables of polymorphic defs."""
from __future__ import annotations

from contextvars import ContextVar

from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.names import DerivedName, TypedName
from ..ir.traverse import free_vars
from ..ir.types import BOOL, FLOAT, INTEGER, STRING, TTensor, TTuple, Type
from .sexpr import Atom, SExpr, SList

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


# Note [The linear-types experiment]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A few Knossos test programs (prqv.ks, forRange.ks, vprod.ks) come from an
# experiment with linear types in the Knossos compiler: a reverse mode written
# revl$f, a loop (forRange n acc0 (lam (i_acc : Tuple Integer A) ...)), a
# tuple-unpacking (untuple (a b) e body) and (indexL i v), which returns the
# vector together with its element so that v is used once.  revl$f has the
# calling convention of rev$f ((x, dr) -> dx) and computes the same function,
# so labrys reads it as [rev f]; forRange is ifold with its arguments in
# another order; untuple is a tuple let; indexL is a primitive
# (prelude/knossos.py) with derivative rules.
OLD_DERIVATIONS = {"revl": "rev"}


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


# Note [Type applications]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# (f @ T args) calls the overload of f at argument type T, as [f T] does;
# (fwd$f @ T args) is [fwd [f T]].
def type_applied(name, t: Type):
    if isinstance(name, DerivedName):
        return DerivedName(name.derivation, type_applied(name.base, t))
    return TypedName(name, t)


# Note [Sized vectors]
# ~~~~~~~~~~~~~~~~~~~~
# The oldest Knossos programs write a vector's size in its type: (Vec n Float),
# (Vec 2 Float), (Vec (mul 2 n) Float).  labrys reads the type as (Vec Float),
# and a size that is a plain name, in a parameter's type, becomes a variable of
# the body bound to that parameter's size — (v : Vec n Float) binds n to
# (size v), an inner (Vec m (Vec p T)) binds p to the size of its first row —
# unless a parameter has that name already.  Sizes in the result type are not
# checked.
def size_variables(params: SExpr, taken: tuple[str, ...]) -> list[tuple[str, ir.Expr]]:
    """(name, expression) for each size variable the parameters' types introduce."""
    out: list[tuple[str, ir.Expr]] = []
    items = params.items if isinstance(params, SList) else ()
    singles = [params] if len(items) >= 2 and isinstance(items[1], Atom) and items[1].value == ":" else list(items)
    for p in singles:
        if not (isinstance(p, SList) and len(p.items) >= 3 and isinstance(p.items[0], Atom)):
            continue
        where = ir.Var(p.items[0].value, span=p.span)
        ty = p.items[2:] if len(p.items) > 3 else (p.items[2].items if isinstance(p.items[2], SList) else ())
        _sizes_in(ty, where, taken, out, p.span)
    return out


def _sizes_in(items, where: ir.Expr, taken, out, span) -> None:
    """Walk a written type: ``Vec n T`` at ``where`` binds n to (size where)."""
    if len(items) == 3 and isinstance(items[0], Atom) and items[0].value == "Vec":
        n, elem = items[1], items[2]
        if isinstance(n, Atom) and n.kind == "sym" and n.value not in taken and n.value not in {x for x, _ in out}:
            out.append((n.value, ir.Call("size", where, span=span)))
        if isinstance(elem, SList):
            first = ir.Call("index", ir.Tuple((ir.const(0, span=span), where), span=span), span=span)
            _sizes_in(elem.items, first, taken, out, span)
    elif len(items) >= 2 and isinstance(items[0], Atom) and items[0].value == "Tuple":
        for k, e in enumerate(items[1:]):
            if isinstance(e, SList):
                _sizes_in(e.items, ir.Get(k + 1, len(items) - 1, where, span=span), taken, out, span)


def bind_sizes(sizes: list[tuple[str, ir.Expr]], body: ir.Expr) -> ir.Expr:
    for name, e in reversed(sizes):
        body = ir.Let(name, e, body, span=body.span)
    return body


# The forms of Note [The linear-types experiment]; each takes the expression
# parser, the whole form and its arguments, as the parser's own forms do.
def form_untuple(p, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
    """``(untuple (a b ...) e body)``: ``(let ((a b ...) e) body)``."""
    pattern = args[0] if len(args) == 3 else None
    names = tuple(v.value for v in pattern.items if isinstance(v, Atom) and v.kind == "sym") \
        if isinstance(pattern, SList) and pattern.bracket == "(" else ()
    if pattern is None or not names or len(names) != len(pattern.items):
        raise LabrysError("malformed 'untuple': expected (untuple (a b ...) e body)", x.span)
    if len(set(names)) != len(names):
        raise LabrysError("a tuple pattern binds each name once", pattern.span)
    rhs = p.expr(args[1])
    return ir.Let(names, rhs, p.under(names, args[2]), span=x.span,
                  binding_span=Span(x.span.source, pattern.span.start, args[1].span.end))


def form_for_range(p, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
    """``(forRange n acc0 (lam (i_acc : Tuple Integer A) body))``: ``(ifold n
    (lam (acc_i : Tuple A Integer) body[i_acc := (tuple i acc)]) acc0)``."""
    f = args[2] if len(args) == 3 else None
    if not (isinstance(f, SList) and f.items and isinstance(f.items[0], Atom) and f.items[0].value == "lam"):
        raise LabrysError("malformed 'forRange': expected (forRange n acc0 (lam (i_acc : Tuple Integer A) body))",
                          x.span)
    lam = p.expr(f)
    t = lam.var_type if isinstance(lam, ir.Lam) else None
    if not (isinstance(t, TTuple) and len(t.elems) == 2 and t.elems[0] == INTEGER):
        raise LabrysError("forRange: the loop body takes (Tuple Integer A): the index and the accumulator",
                          f.span)
    acc_i = _fresh("acc_i", free_vars(lam.body) | {lam.var})
    pair = ir.Tuple((ir.Get(2, 2, ir.Var(acc_i, span=f.span), span=f.span),
                     ir.Get(1, 2, ir.Var(acc_i, span=f.span), span=f.span)), span=f.span)
    body = ir.Let(lam.var, pair, lam.body, span=f.span)
    step = ir.Lam(acc_i, TTuple((t.elems[1], INTEGER)), body, span=f.span)
    return ir.Call("ifold", ir.Tuple((p.expr(args[0]), step, p.expr(args[1])), span=x.span), span=x.span)


LINEAR_FORMS = {"untuple": form_untuple, "forRange": form_for_range}


# Note [Destination-passing style]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# dps.ks, a Knossos test program, writes functions in destination-passing
# style: each takes an Allocator to build its result in, (dps$build dest
# (tuple n (lam (dest_i : Tuple Allocator Integer) e))) builds a vector whose
# element i is e, computed with (tuple dest i), and ($allocateAndEmplace bytes
# (lam (dest : Allocator) e)) runs e with a fresh allocator of that many
# bytes.  labrys values need no allocator: an Allocator is the empty tuple,
# dps$build is build, and $allocateAndEmplace calls its function on (tuple)
# (the size is evaluated and not otherwise used).
def form_dps_build(p, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
    pair = args[1] if len(args) == 2 else None
    items = pair.items if isinstance(pair, SList) and pair.bracket == "(" else ()
    if not (len(items) == 3 and isinstance(items[0], Atom) and items[0].value == "tuple"
            and _is_lam(items[2])):
        raise LabrysError("malformed 'dps$build': expected (dps$build DEST (tuple N (lam (dest_i : Tuple Allocator "
                          "Integer) e)))", x.span)
    f = p.expr(items[2])
    taken = free_vars(f) | {f.var}
    dest, i = _fresh("dest", taken), _fresh("i", taken)
    body = ir.Let(f.var, ir.Tuple((ir.Var(dest, span=x.span), ir.Var(i, span=x.span)), span=x.span), f.body,
                  span=f.span)
    build = ir.Call("build", ir.Tuple((p.expr(items[1]), ir.Lam(i, INTEGER, body, span=f.span)), span=x.span),
                    span=x.span)
    return ir.Let(dest, p.expr(args[0]), build, span=x.span)


def form_allocate_and_emplace(p, x: SList, args: tuple[SExpr, ...]) -> ir.Expr:
    if not (len(args) == 2 and _is_lam(args[1])):
        raise LabrysError("malformed '$allocateAndEmplace': expected ($allocateAndEmplace BYTES "
                          "(lam (dest : Allocator) e))", x.span)
    f = p.expr(args[1])
    size = _fresh("bytes", free_vars(f) | {f.var})
    return ir.Let(size, p.expr(args[0]), ir.Let(f.var, ir.Tuple((), span=x.span), f.body, span=x.span), span=x.span)


def _is_lam(x: SExpr) -> bool:
    return isinstance(x, SList) and bool(x.items) and isinstance(x.items[0], Atom) and x.items[0].value == "lam"


def _fresh(base: str, taken: set[str]) -> str:
    while base in taken:
        base += "'"
    return base


DPS_FORMS = {"dps$build": form_dps_build, "$allocateAndEmplace": form_allocate_and_emplace}


# Note [Polymorphic defs] is in types/poly.py.  While the parser reads a
# polymorphic def, its type variables are names of types.
TYPE_VARIABLES: ContextVar[frozenset[str]] = ContextVar("TYPE_VARIABLES", default=frozenset())


def polymorphic_def(x: SList, args: tuple[SExpr, ...], parse_decl) -> ir.Def:
    """``(def NAME [a b ...] RET PARAMS BODY)``, parsed as the def without the
    type variables, in which they are types."""
    names = []
    for v in args[1].items:
        if not (isinstance(v, Atom) and v.kind == "sym") or v.value in BASE_TYPES_AND_HEADS or v.value in names:
            raise LabrysError("expected distinct type variables such as [a b]", v.span)
        names.append(v.value)
    if not names:
        raise LabrysError("a polymorphic def names at least one type variable: (def f [a] ...)", args[1].span)
    token = TYPE_VARIABLES.set(frozenset(names))
    try:
        d = parse_decl(SList(x.bracket, (x.items[0], args[0], *args[2:]), x.span))
    finally:
        TYPE_VARIABLES.reset(token)
    return d


BASE_TYPES_AND_HEADS = {"Float", "Integer", "Bool", "String", "Tuple", "Vec", "Tensor", "Lam", "Lambda", "LM", "Sum",
                        "Allocator"}
