"""The optimiser's general-purpose rewrites (the rewrites Ellis, Peyton Jones & Fitzgibbon's working notes assume):
copy propagation, dead-let elimination, let-floating, tuple/projection
simplification, zero and unit laws, constant folding, and the sparse-vector
rules V1/V2/V8.

    Γ ⊢ e : τ   ↦   Γ ⊢ simplify(e) : τ

The input is typed and renamed apart (every let binder unique), which makes
substitution by an environment capture-free.  Rules that need a type look
at ``.type`` and skip nodes without one; callers re-check afterwards.
"""
from __future__ import annotations

from collections import Counter

from ..ir import nodes as ir
from ..ir.build import is_atom
from ..ir.traverse import children, nodes, rebuild
from ..ir.types import FLOAT, TLM, TTuple
from ..types.primitives import lookup
from ..util.deep import deep


def is_zero(e: ir.Expr) -> bool:
    """A zero tangent: 0.0, ``(ts_zero x)``, a unit, or a tuple of zeros."""
    match e:
        case ir.Const(0.0, t) if t == FLOAT:
            return True
        case ir.Call("ts_zero", _):
            return True
        case ir.Tuple(elems):
            return all(map(is_zero, elems))
    return False


def is_pure(e: ir.Expr) -> bool:
    """No assert and no call of an impure primitive (print, deltaLet: the primitive's entry says)."""
    return not any(isinstance(x, ir.Assert) or isinstance(x, ir.Call) and _impure(x.func) for x in nodes(e))


def _impure(f: object) -> bool:
    prim = lookup(f)
    return prim is not None and prim.impure


def variable_uses(e: ir.Expr) -> Counter:
    return Counter(x.name for x in nodes(e) if isinstance(x, ir.Var))


class _Simplifier:
    def __init__(self, uses: Counter) -> None:
        self.uses = uses
        self.changed = False
        self.tuples: dict[str, ir.Tuple] = {}  # let-bound tuples of atoms
        self.sizes: dict[str, ir.Expr] = {}  # v = (build n ..) / (constVec n x): v ↦ n (atom)
        self.fills: dict[str, ir.Expr] = {}  # v = (constVec n x): v ↦ x (atom)
        self.zeros: dict[str, ir.Expr] = {}  # v = (ts_zero x): Note [Let-bound zeros]

    def go(self, e: ir.Expr, env: dict[str, ir.Expr]) -> ir.Expr:
        match e:
            case ir.Var(name):
                return env.get(name, e)
            case ir.Let():
                return self.let_chain(e, env)
            case ir.Get(i, _, ir.Var(name)) if getattr(env.get(name, e.arg), "name", None) in self.tuples:
                self.changed = True  # (an atom the variable was copied from may be a constant: no name)
                return self.tuples[env.get(name, e.arg).name].elems[i - 1]
        kids = children(e)
        if kids:
            e = rebuild(e, [self.go(c, env) for c, _ in kids])
        return self.rewrite(e)

    def let_chain(self, e: ir.Let, env: dict[str, ir.Expr]) -> ir.Expr:
        bindings = []
        while isinstance(e, ir.Let):
            rhs = self.go(e.rhs, env)
            binder = e.binder
            while isinstance(rhs, ir.Let) and not (set(rhs.names) & set(e.names)):  # let-floating
                bindings.append((rhs.binder, rhs.rhs))
                rhs = rhs.body
                self.changed = True
            if isinstance(binder, str) and is_atom(rhs):
                env[binder] = rhs  # copy propagation
                self.changed = True
            elif isinstance(binder, tuple) and isinstance(rhs, ir.Var) and rhs.name in self.tuples:
                for b, x in zip(binder, self.tuples[rhs.name].elems):  # let (a, b) = t, t = (x, y)
                    if is_atom(x):
                        env[b] = x
                    else:
                        bindings.append((b, x))
                self.changed = True
            elif isinstance(binder, tuple) and isinstance(rhs, ir.Tuple) and len(rhs.elems) == len(binder):
                for b, x in zip(binder, rhs.elems):  # let (a, b) = (x, y)
                    if is_atom(x):
                        env[b] = x
                    else:
                        bindings.append((b, x))
                self.changed = True
            elif self.dead(binder) and is_pure(rhs):
                self.changed = True
            else:
                if isinstance(binder, str) and isinstance(rhs, ir.Call) and rhs.func == "ts_zero":
                    self.zeros[binder] = rhs
                if isinstance(binder, str) and isinstance(rhs, ir.Tuple) and \
                        (all(map(is_atom, rhs.elems)) or self.uses[binder] == 1 and is_pure(rhs)):
                    self.tuples[binder] = rhs
                if isinstance(binder, str) and isinstance(rhs, ir.Call) and rhs.func in ("build", "constVec") \
                        and isinstance(rhs.arg, ir.Tuple) and is_atom(rhs.arg.elems[0]):
                    self.sizes[binder] = rhs.arg.elems[0]
                    if rhs.func == "constVec" and is_atom(rhs.arg.elems[1]):
                        self.fills[binder] = rhs.arg.elems[1]
                bindings.append((binder, rhs))
            e = e.body
        body = self.go(e, env)
        for binder, rhs in reversed(bindings):
            body = ir.Let(binder, rhs, body, type=body.type)
        return body

    def dead(self, binder) -> bool:
        names = (binder,) if isinstance(binder, str) else binder
        return all(self.uses[n] == 0 for n in names)

    def rewrite(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Call) and e.func == "size" and isinstance(e.arg, ir.Var) and e.arg.name in self.sizes:
            self.changed = True  # V9: size (build n ..) = n
            return self.sizes[e.arg.name]
        if isinstance(e, ir.Call) and e.func == "index" and isinstance(e.arg, ir.Tuple) \
                and isinstance(e.arg.elems[1], ir.Var) and e.arg.elems[1].name in self.fills:
            self.changed = True  # index i (constVec n x) = x
            return self.fills[e.arg.elems[1].name]
        if isinstance(e, ir.Call) and e.func == "ts_add" and isinstance(e.arg, ir.Tuple):
            known = tuple(self.tuples.get(x.name, x) if isinstance(x, ir.Var) else x for x in e.arg.elems)
            if all(isinstance(x, ir.Tuple) for x in known):
                e = ir.Call("ts_add", ir.Tuple(known), type=e.type)
            elif any(isinstance(x, ir.Var) and x.name in self.zeros for x in e.arg.elems):
                zeroed = tuple(self.zeros.get(x.name, x) if isinstance(x, ir.Var) else x for x in e.arg.elems)
                new = _rewrite(ir.Call("ts_add", ir.Tuple(zeroed), type=e.type))
                kept = [x for x, z in zip(e.arg.elems, zeroed) if x is z]  # the operands not zeros
                if any(new is x for x in kept):
                    self.changed = True  # Note [Let-bound zeros]: ts_add z y = y, z let-bound
                    return new
        new = _rewrite(e)
        if new is not e:
            self.changed = True
            return new
        return e


# Note [Let-bound zeros]
# ~~~~~~~~~~~~~~~~~~~~~~~
# After ANF and CSE a zero cotangent is let-bound (``t = ts_zero x``) and the
# sum that adds it reads a variable: ``ts_add t c``.  The zero laws above look
# at the argument node itself, so they missed it, and the compiled code made
# the zeros and then a copy of ``c`` per loop iteration (the LSTM's reverse
# sweep: a 2l × b zero state and its sum at every time step).  ``zeros`` maps
# such a variable to its ``ts_zero`` call (binders are unique, the call is
# pure), the law is tried on the call, and only a result that drops the zero
# (the other operand, a variable or a constant) is kept; the dead ``t`` then
# goes with dead-let elimination.


def _rewrite(e: ir.Expr) -> ir.Expr:
    match e:
        case ir.Get(i, _, ir.Tuple(elems)):
            return elems[i - 1]
        case ir.If(ir.Const(True), t, _):
            return t
        case ir.If(ir.Const(False), _, f):
            return f
        case ir.If(_, t, f) if t == f:
            return t
        case ir.Call(f, arg) if isinstance(f, str):
            return _rewrite_call(e, f, arg)
    return e


def _args(arg: ir.Expr) -> tuple[ir.Expr, ...]:
    return arg.elems if isinstance(arg, ir.Tuple) else (arg,)


def _rewrite_call(e: ir.Call, f: str, arg: ir.Expr) -> ir.Expr:
    a = _args(arg)
    if f == "ts_zero" and arg.type == FLOAT:  # one argument, even a tuple literal: not a[0]
        return ir.const(0.0)
    if f == "ts_add" and len(a) == 2 and a[0].type == FLOAT and a[1].type == FLOAT:
        return ir.Call("add", arg, type=e.type)  # reads better; the same on Floats
    if f == "ts_add" and len(a) == 2 and isinstance(a[0], ir.Tuple) and isinstance(a[1], ir.Tuple) \
            and len(a[0].elems) == len(a[1].elems):  # componentwise
        return ir.Tuple(tuple(ir.Call("ts_add", ir.Tuple((x, y))) for x, y in zip(a[0].elems, a[1].elems)))
    if f == "ts_add" and len(a) == 2:
        if is_zero(a[1]):
            return a[0]
        if is_zero(a[0]) and a[0].type is not None and a[0].type == a[1].type:
            return a[1]
    if f in ("add", "sub") and len(a) == 2 and is_zero(a[1]) and a[0].type == e.type:
        return a[0]
    if f == "add" and len(a) == 2 and is_zero(a[0]) and a[1].type == e.type:
        return a[1]
    if f in ("mul", "ts_scale") and len(a) == 2:
        if _is_one(a[0]) and a[1].type == e.type:
            return a[1]
        if _is_one(a[1]) and a[0].type == e.type:
            return a[0]
        if (is_zero(a[0]) or is_zero(a[1])) and e.type == FLOAT:
            return ir.const(0.0)
        if is_zero(a[1]) and f == "ts_scale":
            return a[1]
    if f in ("neg", "ts_neg") and len(a) == 1:
        if isinstance(a[0], ir.Call) and a[0].func == f:
            return _args(a[0].arg)[0]
        if is_zero(a[0]):
            return a[0]
    if f == "div" and len(a) == 2 and _is_one(a[1]) and a[0].type == e.type:
        return a[0]
    if f == "div" and len(a) == 2 and is_zero(a[0]) and e.type == FLOAT:
        return ir.const(0.0)  # a structural zero, as for mul
    if f == "sub" and len(a) == 2 and is_zero(a[0]) and a[1].type == e.type == FLOAT:
        return ir.Call("neg", a[1], type=e.type)
    if f == "sum" and isinstance(a[0], ir.Call) and a[0].func == "deltaVec":
        return _args(a[0].arg)[2]  # V8
    if f == "index" and isinstance(a[1], ir.Call) and a[1].func == "build":
        n, body = _args(a[1].arg)  # V1: index j (build n (lam i e)) = let i = j in e
        if isinstance(body, ir.Lam):
            return ir.Let(body.var, a[0], body.body, type=e.type)
    if f == "sum" and isinstance(a[0], ir.Call) and a[0].func == "build":
        return ir.Call("sumbuild", a[0].arg, type=e.type)  # V2
    if all(isinstance(x, ir.Const) for x in a) and (p := lookup(f)) is not None and p.foldable:
        return _fold_constants(e, f, a)
    return e


def _is_one(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.ctype == FLOAT and e.value == 1.0


def _fold_constants(e: ir.Call, f: str, a: tuple[ir.Const, ...]) -> ir.Expr:
    prim = lookup(f)
    arg_type = a[0].ctype if len(a) == 1 else TTuple(tuple(x.ctype for x in a))
    if prim is None or prim.typeof(arg_type) is None:
        return e
    try:
        value = prim.impl(arg_type)(a[0].value if len(a) == 1 else tuple(x.value for x in a))
    except Exception:  # e.g. Integer division by zero: leave it to run time
        return e
    if isinstance(value, float) and value != value:
        return e
    return ir.const(value) if type(value) in (bool, int, float) else e


@deep
def simplify(e: ir.Expr, rounds: int = 8) -> ir.Expr:
    for _ in range(rounds):
        s = _Simplifier(variable_uses(e))
        e = s.go(e, {})
        if not s.changed:
            break
    return e


def contains_linear_map(e: ir.Expr) -> bool:
    """True when any node of ``e`` has a linear-map type (after checking)."""
    return any(isinstance(x.type, TLM) or isinstance(x, ir.Call) and isinstance(x.func, str)
               and x.func.startswith("lm") for x in nodes(e))

