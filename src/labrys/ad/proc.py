"""K6 of the AD map: the procedure language and its reverse translation (Ellis,
Peyton Jones & Fitzgibbon's working notes §10, Figs 20–23), as two derivations:

    f : S → T
    [proc f]    : S → T          f computed through the procedure language
    [procrev f] : (S, dT) → dS   the reverse translation F⟦p⟧; R⟦p⟧ of f's procedure

The passes: A-normal form and single-use form (shared with split mode,
:mod:`.split`), the lowering P⟦·⟧ to a procedure (:mod:`.proc_lower`), then
for ``procrev`` the forward and reverse translations (:mod:`.proc_rev`), and
the lowering I⟦·⟧ back to the IR.  Every procedure a pass makes is checked in
the linear typing ``Γ ⊢ p ⊣ Δ`` (:mod:`.proc_check`) before the pass returns
— the pass driver's lint step for this language, always on: an ill-typed
procedure is an internal error naming the pass.  ``labrys show FILE f
--deriv procrev --stages`` prints each procedure with its judgement.

Note [Procedures run as the IR]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``[proc f]`` could be run by the procedure evaluator
(:func:`.proc_check.run`); instead it is the procedure lowered back to the IR,
one ``let`` per statement.  That way it prints as `.ks`, runs on every
backend (interp, python, compiled) and is differentiated, verified and costed
like any other function, and the evaluator stays an independent oracle:
the tests check that evaluating the procedure and running ``[proc f]``
agree with f.  The same holds for ``[procrev f]``: the tape Υ is explicit in
the procedures (``F⟦p⟧ ⊣ Δ, Υ`` and ``Δ̄, Υ ⊢ R⟦p⟧``) and becomes ordinary
variables in the IR.

Note [Stable names]
~~~~~~~~~~~~~~~~~~~
The names the passes make come from the SUF def alone (``fresh_for``), not
from the shared ``work.fresh``: the SUF def is memoised per program (split
mode may have made it, with another run's names), and ``[procrev f]`` must
be the same def whether or not ``show --stages`` ran the F and R views,
which therefore draw their names from a copy.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import V
from ..ir.names import DerivedName, erase_types, show_name
from ..ir.traverse import FreshNames
from ..ir.types import BOG, TTuple, Type
from ..opt.anf import rename_apart
from ..opt.simplify import simplify
from ..types.checker import Functions, Signature
from ..types.primitives import Primitive, lookup
from ..types.tangent import is_constant_tangent, tangent_type, zero_tangent
from . import knossos, split
from .bog_calls import pass_name
from .pipeline import Pass, Work, fresh_for
from .proc_check import Judgement, judge
from .proc_lang import Call, Procedure, Split, show, show_judgement
from .proc_lower import lower_def, to_ir
from .proc_rev import procrev_procedure


def signature(functions: Functions):
    """``f : S → T`` for the checker: primitives, the program's functions and the
    split halves ``revf$f : S → (T, X)``, ``revr$f : (dT, X) → dS``."""
    def sig(func, arg: Type) -> Type | None:
        if isinstance(func, Split):
            tape = TTuple((func.arg, func.ret)) if lookup(func.func) is not None else BOG
            if func.forward:
                return TTuple((func.ret, tape)) if arg == func.arg else None
            return tangent_type(func.arg) if arg == TTuple((tangent_type(func.ret), tape)) else None
        try:
            found = functions.resolve(func, arg)
        except LabrysError:
            return None
        if isinstance(found, Primitive):
            return found.typeof(arg)
        return found.ret if isinstance(found, Signature) else None
    return sig


def checked(p: Procedure, given: dict[str, Type], functions: Functions, what: str, d: ir.Def,
            gamma: list[str], delta: list[str]) -> Judgement:
    """``Γ ⊢ p ⊣ Δ`` with the expected Γ and Δ, or an internal error naming the pass."""
    try:
        j = judge(p, given, signature(functions), d.span)
    except LabrysError as exc:
        raise LabrysError(f"internal: {what} of {show_name(d.name)} is not linearly typed: {exc.message}",
                          d.span) from None
    if sorted(x for x, _ in j.gamma) != sorted(gamma) or sorted(x for x, _ in j.delta) != sorted(delta):
        raise LabrysError(f"internal: {what} of {show_name(d.name)} has judgement "
                          f"{show_judgement(j.gamma, p, j.delta)}, not {', '.join(gamma)} ⊢ ⊣ {', '.join(delta)}",
                          d.span)
    return j


@dataclass
class Lowered:
    """What the passes hand on (``work.notes["proc"]``)."""

    suf: ir.Def
    p: Procedure
    result: str
    judgement: Judgement
    fresh: FreshNames


def _text(work: Work, stage: str, j: Judgement, p: Procedure) -> None:
    work.notes[("text", stage)] = show_judgement(j.gamma, p, j.delta) + "\n\n" + show(p)


def _base(d: ir.Def):
    return erase_types(d.name)


def _procedure(d: ir.Def, work: Work) -> ir.Def:
    """P⟦f⟧, checked, and I⟦P⟦f⟧⟧ = [proc f]."""
    fresh = fresh_for(d)  # Note [Stable names]
    p, result = lower_def(d, fresh)
    params = [x.name for x in d.params]
    j = checked(p, {x.name: x.type for x in d.params}, work.functions, "the procedure", d, params, [result])
    work.notes["proc"] = Lowered(d, p, result, j, fresh)
    _text(work, "procedure", j, p)
    body = rename_apart(to_ir(p, [result], j.types), fresh)  # a Case rebinds its Δ
    return ir.Def(DerivedName("proc", _base(d)), d.ret, d.params, body, span=d.span)


def _rev_parts(work: Work):
    low: Lowered = work.notes["proc"]
    if "rev" not in work.notes:
        d = low.suf
        params = [x.name for x in d.params]
        xs = params[0] if len(params) == 1 else low.fresh("x")
        dt = low.fresh("dt")
        work.notes["rev"] = (xs, dt, procrev_procedure(low.p, params, low.result, xs, dt, low.judgement.types,
                                                       low.fresh))
    return work.notes["rev"]


def _forward(d: ir.Def, work: Work) -> ir.Def:
    """F⟦p⟧ : Γ ⊢ F⟦p⟧ ⊣ Δ, Υ_p, as a def S → (T, Υ_p)."""
    low: Lowered = work.notes["proc"]
    _, _, (fwd, _, _, tapes, _, rv) = _rev_parts(work)
    d0 = low.suf
    j = checked(fwd, {x.name: x.type for x in d0.params}, work.functions, "F⟦p⟧", d0,
                [x.name for x in d0.params], [low.result, *tapes])
    _text(work, "F", j, fwd)
    fresh = FreshNames(low.fresh.taken)  # a view: leaves the names of [procrev f] alone
    body = rename_apart(to_ir(fwd, [low.result, *tapes], j.types, _split_call(work.functions, fresh, d0),
                              as_tuple=True), fresh)
    ret = TTuple((d0.ret, *(rv.tape_types[u] for u in tapes)))
    return ir.Def(DerivedName("procF", _base(d0)), ret, d0.params, body, span=d0.span)


def _reverse(d: ir.Def, work: Work) -> ir.Def:
    """R⟦p⟧ : Δ̄, Υ_p ⊢ R⟦p⟧ ⊣ Γ̄, as a def (dT, Υ_p…) → dS."""
    low: Lowered = work.notes["proc"]
    _, dt, (_, rev, _, tapes, _, rv) = _rev_parts(work)
    d0 = low.suf
    given = {dt: tangent_type(d0.ret), **{u: rv.tape_types[u] for u in tapes}}
    bars = [rv.bar(x.name) for x in d0.params]
    j = checked(rev, given, work.functions, "R⟦p⟧", d0, list(given), bars)
    _text(work, "R", j, rev)
    fresh = FreshNames(low.fresh.taken)  # a view: leaves the names of [procrev f] alone
    body = rename_apart(to_ir(rev, bars, j.types, _split_call(work.functions, fresh, d0)), fresh)
    params = tuple(ir.Param(x, t) for x, t in given.items())
    return ir.Def(DerivedName("procR", _base(d0)), tangent_type(d0.arg_type), params, body, span=d0.span)


def _procrev(d: ir.Def, work: Work) -> ir.Def:
    """[procrev f](xs, dt) = (params) = xs; F⟦p⟧; Elim result; R⟦p⟧ — one procedure, lowered."""
    low: Lowered = work.notes["proc"]
    xs, dt, (_, _, whole, _, out, _) = _rev_parts(work)
    d0 = low.suf
    params = (ir.Param(xs, d0.arg_type), ir.Param(dt, tangent_type(d0.ret)))
    j = checked(whole, {x.name: x.type for x in params}, work.functions, "[procrev f]'s procedure", d0,
                [xs, dt], [out])
    _text(work, "procrev", j, whole)
    body = rename_apart(to_ir(whole, [out], j.types, _split_call(work.functions, low.fresh, d0)), low.fresh)
    return ir.Def(DerivedName("procrev", _base(d0)), tangent_type(d0.arg_type), params, body, span=d0.span)


def _optimise(d: ir.Def, work: Work) -> ir.Def:
    return d.with_body(simplify(d.body))


def _no_hand_written_rev(functions: Functions, base, f: Split, d: ir.Def) -> None:
    """A callee g with a hand-written ``[rev g]`` (and no hand-written split pair) is
    refused: its split pair would be generated from g's body, ignoring the derivative
    the user wrote, which every other reverse mode calls."""
    rev = functions.resolve(DerivedName("rev", base), TTuple((f.arg, tangent_type(f.ret))))
    pair = functions.resolve(DerivedName("suffwdpass", base), f.arg)
    written = [isinstance(x, Signature) and isinstance(x.decl, ir.Def) for x in (rev, pair)]
    if written[0] and not written[1]:
        raise LabrysError(f"procrev does not call a hand-written [rev {show_name(base)}] (the procedure language "
                          "calls split pairs: write [suffwdpass g] and [sufrevpass g], or use rev or sufrev)",
                          d.span)


def _split_call(functions: Functions, fresh: FreshNames, d: ir.Def):
    """I⟦·⟧ of ``revf$f`` / ``revr$f`` (Note [Callees' split pairs] in proc_rev)."""
    def lower(s: Call, arg: ir.Expr, types: dict) -> ir.Expr:
        f = s.func
        if not isinstance(f, Split):
            return ir.Call(f, arg)
        prim = lookup(f.func)
        if prim is None:
            base = pass_name(erase_types(f.func), f.arg, functions)
            _no_hand_written_rev(functions, base, f, d)
            return ir.Call(DerivedName("suffwdpass" if f.forward else "sufrevpass", base), arg)
        if f.forward:  # revf$p(a) = (p(a), (a, p(a)))
            y = fresh("y")
            if isinstance(arg, ir.Tuple):  # the arguments stay spread: (p a b), as the backends like
                names = tuple(fresh("a") for _ in arg.elems)
                a = ir.Tuple(tuple(V(x) for x in names))
                bind = [(names, arg)]
            else:
                a = V(fresh("a"))
                bind = [(a.name, arg)]
            body = ir.Let(y, ir.Call(f.func, a), ir.Tuple((V(y), ir.Tuple((a, V(y))))))
            for binder, rhs in reversed(bind):
                body = ir.Let(binder, rhs, body)
            return body
        return _primitive_reverse(prim, f, arg, fresh, d)
    return lower


def _primitive_reverse(prim: Primitive, f: Split, arg: ir.Expr, fresh: FreshNames, d: ir.Def) -> ir.Expr:
    """revr$p(dy, (a, y)): p's reverse rule (Note [Derivative rules])."""
    dy, tape, ta, ty = fresh("dy"), fresh("tape"), fresh("a"), fresh("y")
    spreads = isinstance(f.arg, TTuple) and getattr(prim.impl(f.arg), "spreads", False)
    types = f.arg.elems if spreads else (f.arg,)
    names = tuple(fresh("a") for _ in types) if spreads else (ta,)
    args = tuple(V(x, t) for x, t in zip(names, types))
    if prim.nondiff or all(is_constant_tangent(t) for t in types):
        parts = tuple(zero_tangent(a, t) for a, t in zip(args, types))
    elif "rev" not in prim.rules:
        raise LabrysError(f"procrev: the primitive '{prim.name}' has no derivative rule", d.span)
    else:
        parts = prim.rules["rev"](args, V(dy), types, V(ty))
        parts = tuple(zero_tangent(a, t) if p is None or is_constant_tangent(t) else p
                      for a, t, p in zip(args, types, parts))
    body = parts[0] if len(parts) == 1 and not spreads else ir.Tuple(parts)
    if spreads:
        body = ir.Let(names, V(ta), body)
    return ir.Let((dy, tape), arg, ir.Let((ta, ty), V(tape), body))


LANGUAGE = "first-order, no vectors"  # Fig. 20: reals, tuples, sums; loops and vectors are refused
PROCEDURE = Pass("procedure", "The procedure P⟦f⟧ and its judgement Γ ⊢ p ⊣ Δ (Figs 20–22)", _procedure)
PROC_PIPELINE = (knossos.ANF_TAIL, split.SUF, PROCEDURE)
PROCREV_PIPELINE = (knossos.ANF_TAIL, split.SUF, PROCEDURE,
                    Pass("F", "Forward translation Γ ⊢ F⟦p⟧ ⊣ Δ, Υ (Fig. 23)", _forward, view=True),
                    Pass("R", "Reverse translation Δ̄, Υ ⊢ R⟦p⟧ ⊣ Γ̄ (Fig. 23)", _reverse, view=True),
                    Pass("procrev", "[procrev f]: F⟦p⟧; R⟦p⟧ as one procedure, lowered to .ks", _procrev,
                         source="procedure"),
                    Pass("optimise", "[procrev f] (optimised)", _optimise))
