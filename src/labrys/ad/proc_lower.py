"""Lowering between the first-order core and the procedure language (Ellis,
Peyton Jones & Fitzgibbon's working notes §10, Fig. 20):

    x₁:S₁ … xₙ:Sₙ ⊢ e : T  (A-normal, single-use form)   ↦   x₁ … xₙ ⊢ P⟦e⟧ ⊣ r : T
    Γ ⊢ p ⊣ Δ                                             ↦   Γ ⊢ I⟦p⟧ : (Δ)   (back to the IR)

P⟦·⟧ reads a SUF block binding by binding, one case per construct of the
first-order core: a constant is ``Const``; a variable an alias (no statement);
a tuple ``(y₁, …, yₙ)`` a pair; a projection an unpair and an ``Elim`` of
every other component; ``dup`` is ``Dup`` then an unpair; ``elim`` is
``Elim``; a call is ``Call`` of the pair of its arguments; ``if`` is a
``Case`` on the Bool condition (Note [Bool as a sum] in :mod:`.proc_lang`),
both branches binding the same result.  SUF already made every variable used
exactly once and both branches of an ``if`` consume the same variables, which
is exactly the linear typing of Fig. 21.  Loops, vectors, function values,
sums and ``assert`` are not in Fig. 20: they are refused at their position.

I⟦·⟧ makes one ``let`` per statement (a pair is put back into its single
use, ``Dup`` is ``(tuple s s)``, ``Elim`` is nothing) and a Case binding Δ an
``if`` or ``case`` whose branches end in the tuple of Δ.
"""
from __future__ import annotations

from typing import Callable

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.traverse import FreshNames
from ..ir.types import BOOL, FLOAT, UNIT, TLam, TSum, TTensor, TTuple, Type
from ..util.deep import deep, gc_paused
from .proc_lang import ZERO, Call, Case, Const, Dup, Elim, Inj, Pair, Procedure, Unpair, consumed, produced
from .suf import LOOPS_WITH_LAMBDA, chain


def refuse(what: str, e: ir.Expr | None, span=None) -> LabrysError:
    return LabrysError(f"the procedure language (Ellis et al.'s Fig. 20) has no {what}",
                       e.span if e is not None and e.span is not None else span)


def _outside(t: Type) -> str | None:
    """What of ``t`` Fig. 20 does not have."""
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TTensor):
            return f"vectors ({x})"
        if isinstance(x, TLam):
            return f"function values ({x})"
        if isinstance(x, TSum):
            return f"sum types in the source program ({x})"
        if isinstance(x, TTuple):
            stack.extend(x.elems)
    return None


class Lower:
    """P⟦·⟧ of one def in SUF (typed, renamed apart)."""

    def __init__(self, fresh: FreshNames, span) -> None:
        self.fresh, self.span = fresh, span
        self.ren: dict[str, str] = {}   # aliases: a let of a variable binds no statement

    def name(self, x: str) -> str:
        while x in self.ren:
            x = self.ren[x]
        return x

    def atom(self, e: ir.Expr, out: list) -> str:
        """A variable holding the atom ``e`` (a constant gets its ``Const``)."""
        if isinstance(e, ir.Var):
            return self.name(e.name)
        if isinstance(e, ir.Const):
            x = self.fresh("k")
            out.append(Const(x, e.value, e.ctype))
            return x
        if isinstance(e, ir.Tuple):
            x = self.fresh("t")
            out.append(Pair(x, tuple(self.atom(a, out) for a in e.elems)))
            return x
        raise LabrysError("internal: the procedure lowering expects A-normal form", e.span)

    def block(self, e: ir.Expr, out: list, result: str | None) -> str:
        """The statements of a SUF block appended to ``out``; its value is bound to
        ``result`` (or to whatever variable holds it when ``result`` is None)."""
        bindings, tail = chain(e)
        target = {}
        if result is not None and isinstance(tail, ir.Var):
            target[tail.name] = result
        for binder, rhs, _span in bindings:
            if isinstance(binder, str):
                binder = target.get(binder, binder)
            self.binding(binder, rhs, out)
        if result is None:
            if isinstance(tail, ir.Var):
                return self.name(tail.name)
            result = self.fresh("r")
        if isinstance(tail, ir.Var):
            bound_here = any(b == tail.name for b, _, _ in bindings)
            src = self.name(result if bound_here else tail.name)
            self.ren.pop(result, None)  # the result is bound by a statement, not an alias
            if src != result:  # a variable bound outside: a move (a one-tuple and back)
                m = self.fresh("m")
                out += [Pair(m, (src,)), Unpair((result,), m)]
        else:
            self.binding(result, tail, out)
        return result

    def binding(self, binder, rhs: ir.Expr, out: list) -> None:
        if rhs.type is not None and (bad := _outside(rhs.type)):
            raise refuse(bad, rhs, self.span)
        match rhs:
            case ir.Var(y):
                if isinstance(binder, str):
                    self.ren[binder] = self.name(y)
                else:
                    out.append(Unpair(binder, self.name(y)))
            case ir.Const(value, ctype):
                self.bind(binder, Const, (value, ctype), out)
            case ir.Tuple():
                x = self.atom(rhs, out)
                self.bind(binder, None, x, out)
            case ir.Get(i, n, a):
                parts = tuple(self.fresh("p") for _ in range(n))
                out.append(Unpair(parts, self.atom(a, out)))
                out.extend(Elim(p) for k, p in enumerate(parts) if k != i - 1)
                self.bind(binder, None, parts[i - 1], out)
            case ir.Call("dup", a):
                t = self.fresh("t")
                out += [Dup(t, self.atom(a, out)), Unpair(binder, t)]
            case ir.Call("elim", a):
                out.append(Elim(self.atom(a, out)))
            case ir.Call(f, a):
                if f in LOOPS_WITH_LAMBDA or any(isinstance(x, ir.Lam) for x in ir.call_args(rhs)):
                    raise refuse(f"loops ({show_name(f)})", rhs, self.span)
                self.bind(binder, Call, (f, self.atom(a, out)), out)
            case ir.If(c, t, f):
                cond = self.atom(c, out)
                names = (binder,) if isinstance(binder, str) else binder
                result = names[0] if len(names) == 1 else self.fresh("t")
                branches = []
                for body in (t, f):
                    u = self.fresh("u")
                    stmts: list = [Elim(u)]
                    self.block(body, stmts, result)
                    branches += [u, tuple(stmts)]
                out.append(Case(cond, *branches, span=rhs.span))
                if len(names) != 1:
                    out.append(Unpair(names, result))
            case ir.Assert():
                raise refuse("assert", rhs, self.span)
            case ir.Lam() | ir.App() | ir.FnRef():
                raise refuse("function values", rhs, self.span)
            case ir.Inj() | ir.Case():
                raise refuse("sum types in the source program", rhs, self.span)
            case _:
                raise LabrysError("internal: the procedure lowering expects A-normal form", rhs.span)

    def bind(self, binder, make, args, out: list) -> None:
        """``binder = make(args)``; a tuple pattern through a fresh variable and an unpair."""
        x = binder if isinstance(binder, str) else self.fresh("t")
        if make is None:  # args is a variable: an alias
            if isinstance(binder, str):
                self.ren[binder] = args
                return
            out.append(Unpair(binder, args))
            return
        out.append(make(x, *args))
        if not isinstance(binder, str):
            out.append(Unpair(binder, x))


@deep
@gc_paused
def lower_def(d: ir.Def, fresh: FreshNames) -> tuple[Procedure, str]:
    """P⟦body⟧ of the SUF def ``d`` and the variable holding its result;
    ``params ⊢ p ⊣ result : T``."""
    for p in d.params:
        if bad := _outside(p.type):
            raise refuse(bad, None, p.span or d.span)
    if bad := _outside(d.ret):
        raise refuse(bad, None, d.span)
    out: list = []
    low = Lower(fresh, d.span)
    result = low.block(d.body, out, None)
    if result in {p.name for p in d.params}:
        r = fresh("r")
        out += [Pair(m := fresh("m"), (result,)), Unpair((r,), m)]
        result = r
    return tuple(out), result


# --- back to the IR ----------------------------------------------------------------


def interface(p: Procedure) -> tuple[list[str], list[str]]:
    """The free (Γ) and cofree (Δ) variable names of ``p``, syntactically."""
    free: list[str] = []
    avail: dict[str, None] = {}
    for s in p:
        if isinstance(s, Case):
            inner_free, inner_cofree = interface(s.left)
            uses = [s.var] + [x for x in inner_free if x != s.left_var]
            binds = inner_cofree
        else:
            uses, binds = list(consumed(s)), list(produced(s))
        for x in uses:
            if x in avail:
                del avail[x]
            else:
                free.append(x)
        avail.update(dict.fromkeys(binds))
    return free, list(avail)


def zero_of(t: Type) -> ir.Expr:
    """``Const 0 : t`` in the IR (no vectors here, so a constant); a sum's zero is
    ``Inl 0`` (Note [Zero of a sum] in proc_rev)."""
    if isinstance(t, TTuple):
        return ir.Tuple(tuple(zero_of(e) for e in t.elems))
    if isinstance(t, TSum):
        return ir.Inj(True, t, zero_of(t.left))
    return ir.const(0.0) if t == FLOAT else ir.Tuple(())


CallLowering = Callable[[Call, ir.Expr, dict], ir.Expr]


def _plain_call(s: Call, arg: ir.Expr, types: dict) -> ir.Expr:
    return ir.Call(s.func, arg)


@deep
@gc_paused
def to_ir(p: Procedure, results: list[str], types: dict[str, Type], call: CallLowering = _plain_call,
          as_tuple: bool = False) -> ir.Expr:
    """I⟦p⟧ with tail ``results`` (one variable, or their tuple; always a tuple if ``as_tuple``)."""
    return _to_ir(p, results, types, call, as_tuple)


def _to_ir(p: Procedure, results: list[str], types: dict[str, Type], call: CallLowering,
           as_tuple: bool = False) -> ir.Expr:
    inline: dict[str, ir.Expr] = {}   # pairs (and Dups) put back into their single use

    def use(x: str) -> ir.Expr:
        return inline.pop(x) if x in inline else ir.Var(x)

    lets: list[tuple] = []
    for s in p:
        match s:
            case Call(out, _, arg):
                lets.append((out, call(s, use(arg), types)))
            case Const(out, value, t):
                if value is ZERO:
                    rhs = zero_of(t)
                elif isinstance(value, tuple) or t == UNIT:
                    rhs = ir.Tuple(())
                else:
                    rhs = ir.Const(value, t)
                lets.append((out, rhs))
            case Elim():
                pass
            case Dup(out, var):
                if var in inline:
                    lets.append((var, inline.pop(var)))
                lets.append((out, ir.Tuple((ir.Var(var), ir.Var(var)))))
            case Pair(out, args):
                inline[out] = ir.Tuple(tuple(use(a) for a in args))
            case Unpair(outs, var):
                lets.append((outs if len(outs) != 1 else outs[0],
                             ir.Get(1, 1, use(var)) if len(outs) == 1 else use(var)))
            case Inj(out, left, sum_type, var):
                lets.append((out, ir.Inj(left, sum_type, use(var))))
            case Case(var, lv, lp, rv, rp):
                lets.extend(inline.items())  # both branches use them: bind them once, before
                inline.clear()
                _, delta = interface(lp)
                left = _to_ir(lp, delta, types, call)
                right = _to_ir(rp, delta, types, call)
                scrut = use(var)
                if types.get(var) == BOOL:
                    rhs = ir.If(scrut, ir.Let(lv, ir.Tuple(()), left), ir.Let(rv, ir.Tuple(()), right), span=s.span)
                else:
                    rhs = ir.Case(scrut, lv, left, rv, right, span=s.span)
                lets.append((tuple(delta) if len(delta) != 1 else delta[0], rhs))
    body = use(results[0]) if len(results) == 1 and not as_tuple else ir.Tuple(tuple(use(x) for x in results))
    for binder, rhs in reversed(lets):
        body = ir.Let(binder, rhs, body)
    return body
