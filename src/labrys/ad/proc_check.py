"""The linear typing of the procedure language, ``Γ ⊢ p ⊣ Δ`` (Ellis, Peyton
Jones & Fitzgibbon's working notes, Fig. 21, with the Case rule the notes
leave out), and an evaluator.

    Γ ⊢ p ⊣ Δ :  Γ = the variables p uses and does not bind first (free),
                 Δ = the variables p binds and does not use later (cofree);
    linear: every variable is used exactly once after it is bound — no
    implicit copy (Dup) or drop (Elim).

Rules, one case per statement in Fig. 21's order: Call (``a:S ⊢ b = Call f a
⊣ b:T`` for ``f : S → T``), Dup, Const, Elim, pair, unpair, Inl, Inr, the
sequence ``Γ₁ ⊢ p₁ ⊣ Ξ,Δ₁  Γ₂,Ξ ⊢ p₂ ⊣ Δ₂  ⟹  Γ₁,Γ₂ ⊢ p₁;p₂ ⊣ Δ₁,Δ₂``, and

    x:T₁⊕T₂, Γ ⊢ Case x (Inl y p₁) (Inr z p₂) ⊣ Δ
        iff  y:T₁, Γ ⊢ p₁ ⊣ Δ  and  z:T₂, Γ ⊢ p₂ ⊣ Δ

(both branches consume the same Γ and bind the same Δ).

Note [Case binds its variable]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The checker treats the pattern variable y as bound by the Case at the start
of p₁ (as if ``y = …`` began the branch), not as a free variable.  When p₁
uses y the two readings agree; when it does not, y is in p₁'s Δ, which is
what Fig. 23's reverse of ``a = Inl b``, ``Case ā (Inl b̄ ·) (…)``, needs: an
empty branch that hands its payload on as b̄.  Fig. 21 has no identity rule
that would type ``y:T ⊢ · ⊣ y:T`` otherwise.  A sequence is
checked left to right with the set of bound-and-not-yet-used variables, so a
10^4-statement procedure is one loop; only a Case recurses (run under
:func:`labrys.util.deep.deep`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..errors import LabrysError
from ..ir.types import BOOL, FLOAT, INTEGER, UNIT, TSum, TTuple, Type
from ..types.primitives import lookup
from ..util.deep import deep, gc_paused
from ..values import Inj as InjValue
from .proc_lang import ZERO, Call, Case, Const, Dup, Elim, Inj, Pair, Procedure, Split, Unpair, show_type

Signature = Callable[[Any, Type], "Type | None"]  # (function, argument type) -> result type


@dataclass
class Judgement:
    """``Γ ⊢ p ⊣ Δ``, each context in order, and the type of every variable of p."""

    gamma: list[tuple[str, Type]]
    delta: list[tuple[str, Type]]
    types: dict[str, Type]


def primitive_signature(func, arg: Type) -> Type | None:
    p = lookup(func)
    return p.typeof(arg) if p is not None else None


def case_payloads(t: Type) -> tuple[Type, Type] | None:
    """The branch types of a Case on ``t`` (Note [Bool as a sum] in proc_lang)."""
    if isinstance(t, TSum):
        return t.left, t.right
    if t == BOOL:
        return UNIT, UNIT
    return None


class _Checker:
    def __init__(self, given: dict[str, Type], signature: Signature, types: dict[str, Type], span) -> None:
        self.given, self.signature, self.types, self.span = given, signature, types, span
        self.avail: dict[str, Type] = {}      # bound, not yet used (in order: Δ so far)
        self.gamma: list[tuple[str, Type]] = []
        self.seen: set[str] = set()           # every variable bound or used so far

    def error(self, message: str) -> LabrysError:
        return LabrysError(f"procedure: {message}", self.span)

    def use(self, x: str) -> Type:
        if x in self.avail:
            return self.avail.pop(x)
        if x in self.seen:
            raise self.error(f"'{x}' is used twice (the typing is linear: Dup it first)")
        if x not in self.given:
            raise self.error(f"'{x}' is used but never bound")
        self.seen.add(x)
        self.types.setdefault(x, self.given[x])
        self.gamma.append((x, self.given[x]))
        return self.given[x]

    def bind(self, x: str, t: Type) -> None:
        if x in self.seen or x in self.avail:
            raise self.error(f"'{x}' is bound twice")
        self.seen.add(x)
        self.avail[x] = t
        self.types[x] = t

    def run(self, p: Procedure) -> Judgement:
        for s in p:
            self.statement(s)
        return Judgement(self.gamma, list(self.avail.items()), self.types)

    def statement(self, s) -> None:
        match s:
            case Call(out, func, arg):
                a = self.use(arg)
                t = self.signature(func, a)
                if t is None:
                    raise self.error(f"{func} does not accept an argument of type {show_type(a)}")
                self.bind(out, t)
            case Dup(out, var):
                a = self.use(var)
                self.bind(out, TTuple((a, a)))
            case Const(out, _, t):
                self.bind(out, t)
            case Elim(var):
                self.use(var)
            case Pair(out, args):
                self.bind(out, TTuple(tuple(self.use(a) for a in args)))
            case Unpair(outs, var):
                t = self.use(var)
                if not isinstance(t, TTuple) or len(t.elems) != len(outs):
                    raise self.error(f"({', '.join(outs)}) = {var}: {var} has type {show_type(t)}")
                for x, e in zip(outs, t.elems):
                    self.bind(x, e)
            case Inj(out, left, sum_type, var):
                t = self.use(var)
                want = sum_type.left if left else sum_type.right
                if t != want:
                    raise self.error(f"{out} = {'Inl' if left else 'Inr'} {var}: {var} has type "
                                     f"{show_type(t)}, not {show_type(want)}")
                self.bind(out, sum_type)
            case Case():
                self.case(s)
            case _:
                raise TypeError(f"not a statement: {s!r}")

    def case(self, s: Case) -> None:
        t = self.use(s.var)
        payloads = case_payloads(t)
        if payloads is None:
            raise self.error(f"Case {s.var}: {s.var} has type {show_type(t)}, not a sum")
        visible = {**self.given, **self.avail}
        outs = []
        for var, body, payload in ((s.left_var, s.left, payloads[0]), (s.right_var, s.right, payloads[1])):
            if var in visible or var in self.seen:
                raise self.error(f"'{var}' is bound twice")
            inner = _Checker(visible, self.signature, self.types, s.span or self.span)
            inner.bind(var, payload)  # Note [Case binds its variable]
            j = inner.run(body)
            outs.append(([x for x, _ in j.gamma], j.delta))
        (g1, d1), (g2, d2) = outs
        if set(g1) != set(g2):
            raise self.error(f"Case {s.var}: the branches use different variables ({', '.join(sorted(g1))} | "
                             f"{', '.join(sorted(g2))}); Elim in one branch what only the other uses")
        if dict(d1) != dict(d2):
            raise self.error(f"Case {s.var}: the branches bind different variables or types")
        for x in g1:
            self.use(x)
        for x, ty in d1:
            self.bind(x, ty)


def _judge(p: Procedure, given, signature, types, span) -> Judgement:
    return _Checker(given, signature, types, span).run(p)


@deep
@gc_paused
def judge(p: Procedure, given: dict[str, Type], signature: Signature = primitive_signature,
          span=None) -> Judgement:
    """``Γ ⊢ p ⊣ Δ``: Γ and Δ of ``p``, the types of free variables read from
    ``given``; a :class:`LabrysError` where the linear typing fails."""
    return _judge(p, given, signature, {}, span)


# --- evaluation ------------------------------------------------------------------


def zero_value(t: Type):
    """The value of ``Const 0 : t`` (a sum's zero is ``Inl 0``: Note [Zero of a sum] in proc_rev)."""
    if t == FLOAT:
        return 0.0
    if isinstance(t, TTuple):
        return tuple(zero_value(e) for e in t.elems)
    if isinstance(t, TSum):
        return InjValue(True, zero_value(t.left))
    if t == INTEGER:
        return 0
    raise LabrysError(f"procedure: no zero of type {show_type(t)}")


def call_primitive(func, value, arg_type: Type):
    p = lookup(func)
    if p is None:
        raise LabrysError(f"procedure: {func} is not a primitive (give run() a call function)")
    return p.impl(arg_type)(value)


@deep
@gc_paused
def run(p: Procedure, env: dict[str, Any], types: dict[str, Type],
        call: Callable[[Any, Any, Type], Any] = call_primitive) -> dict[str, Any]:
    """Run ``p`` from the values of its free variables; the values of every variable
    it leaves bound (its Δ).  ``types`` are the checker's; ``call(f, value, type)``
    runs a call (primitives by default)."""
    env = dict(env)
    _run(p, env, types, call)
    return env


def _run(p: Procedure, env: dict, types: dict, call) -> None:
    for s in p:
        match s:
            case Call(out, func, arg):
                if isinstance(func, Split):
                    raise LabrysError(f"procedure: {func} runs only once lowered to the IR")
                t = types.get(arg)
                env[out] = call(func, env.pop(arg), t)
            case Const(out, value, t):
                env[out] = zero_value(t) if value is ZERO else value
            case Elim(var):
                env.pop(var)
            case Dup(out, var):
                v = env.pop(var)
                env[out] = (v, v)
            case Pair(out, args):
                env[out] = tuple(env.pop(a) for a in args)
            case Unpair(outs, var):
                env.update(zip(outs, env.pop(var)))
            case Inj(out, left, _, var):
                env[out] = InjValue(left, env.pop(var))
            case Case(var, lv, lp, rv, rp):
                v = env.pop(var)
                if isinstance(v, bool):
                    v = InjValue(v, ())
                env[lv if v.left else rv] = v.value
                _run(lp if v.left else rp, env, types, call)
