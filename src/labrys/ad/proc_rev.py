"""The reverse translation of the procedure language (Ellis, Peyton Jones &
Fitzgibbon's working notes §10, Fig. 23, with the Case rule the notes leave
out, written by the recipe of the other rules):

    Γ ⊢ p ⊣ Δ   ↦   Γ ⊢ F⟦p⟧ ⊣ Δ, Υ_p        (forward: p, keeping the tape Υ_p)
                    Δ̄, Υ_p ⊢ R⟦p⟧ ⊣ Γ̄        (reverse: cotangents, statements reversed)

x̄ is x's cotangent variable, of type dT (``labrys.types.tangent``); Υ_p are
the *tape variables*, explicit in both judgements.  One case per statement in
Fig. 23's order:

    b = Call f a      F: bt = Call revf$f a; (b, τ) = bt       Υ = τ
                      R: bt′ = (b̄, τ); ā = Call revr$f bt′
    t = Dup s         F: same                                   R: s̄ = Call add t̄
    a = Const k       F: same                                   R: Elim ā
    Elim a            F: same                                   R: ā = Const 0
    b = (a₁, a₂)      F: same                                   R: (ā₁, ā₂) = b̄
    (a₁, a₂) = b      F: same                                   R: b̄ = (ā₁, ā₂)
    a = Inl b         F: same      R: Case ā (Inl b̄ ·) (Inr z̄ (Elim z̄; b̄ = Const 0))   (Inr symmetric)
    p₁; p₂            F: F⟦p₁⟧; F⟦p₂⟧   Υ₁, Υ₂                  R: R⟦p₂⟧; R⟦p₁⟧
    Case x (Inl y p₁) (Inr z p₂)
                      F: Case x (Inl y (F⟦p₁⟧; u = (Υ₁); τ = Inl u)) (Inr z (F⟦p₂⟧; u = (Υ₂); τ = Inr u))
                      R: Case τ (Inl u ((Υ₁) = u; R⟦p₁⟧; x̄ = Inl ȳ)) (Inr u ((Υ₂) = u; R⟦p₂⟧; x̄ = Inr z̄))

``revf$f : S → (T, X)`` and ``revr$f : (dT, X) → dS`` are f's split pair
(§6.1): for a primitive, the tape X is ``(S, T)`` (its argument and result)
and ``revr$f`` is its reverse rule (Note [Derivative rules] in
``labrys.types.primitives``); for a function of the program they are
``[suffwdpass f]`` and ``[sufrevpass f]`` (Note [Callees' split pairs]).

Note [Callees' split pairs]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
Fig. 23 calls ``rf$f`` and ``rr$f`` without saying where they come from.
The BOG split of the same notes (§6.1, §11) is exactly such a pair, written
or generated per function and recursive-safe (its tape is the opaque BOG), so
a call of g in ``[procrev f]`` uses ``[suffwdpass g]`` / ``[sufrevpass g]``
— hand-written ones when the program defines them.  f itself goes through
the procedure language; its callees through BOG AD, whose results agree.

Note [Zero of a sum]
~~~~~~~~~~~~~~~~~~~~
The cotangent of ``T₁ ⊕ T₂`` is ``dT₁ ⊕ dT₂``, and ``Const 0`` at that type
has no canonical tag.  labrys uses ``Inl 0``: R⟦a = Inl b⟧ then gives b̄ = 0
and R⟦a = Inr b⟧ takes its Inl branch, which also gives b̄ = 0 — zero either
way, as the cotangent of a value the branch does not use must be.  A Bool (Note [Bool as a sum] in proc_lang) has
cotangent ``()``, so R of a Case on a Bool ends ``Elim ȳ; x̄ = Const 0``.
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir.traverse import FreshNames
from ..ir.types import BOG, BOOL, TSum, TTuple, Type
from ..types.primitives import lookup
from ..types.tangent import tangent_type
from .proc_lang import ZERO, Call, Case, Const, Dup, Elim, Inj, Pair, Procedure, Split, Unpair


class Reverse:
    """F⟦·⟧ and R⟦·⟧ of one procedure; ``types`` are its checker's."""

    def __init__(self, types: dict[str, Type], fresh: FreshNames, bars: dict[str, str] | None = None) -> None:
        self.types, self.fresh = types, fresh
        self.bars: dict[str, str] = dict(bars or {})
        self.tape_types: dict[str, Type] = {}

    def bar(self, x: str) -> str:
        """x̄, the cotangent variable of x."""
        if x not in self.bars:
            self.bars[x] = self.fresh("d" + x.split("$")[0])
        return self.bars[x]

    def d(self, x: str) -> Type:
        return tangent_type(self.types[x])

    def tape(self, base: str, t: Type) -> str:
        v = self.fresh(base)
        self.tape_types[v] = t
        return v

    def procedure(self, p: Procedure) -> tuple[list, list, list[str]]:
        """F⟦p⟧, R⟦p⟧ and Υ_p."""
        fwd, revs, tapes = [], [], []
        for s in p:
            f, r, u = self.statement(s)
            fwd += f
            revs.append(r)
            tapes += u
        rev = [x for r in reversed(revs) for x in r]
        return fwd, rev, tapes

    def statement(self, s) -> tuple[list, list, list[str]]:
        match s:
            case Call(b, func, a):
                if isinstance(func, Split):
                    raise LabrysError(f"internal: procrev of a split half {func}")
                arg_t, ret_t = self.types[a], self.types[b]
                prim = lookup(func) is not None
                tau = self.tape("tape", TTuple((arg_t, ret_t)) if prim else BOG)
                bt, bt2 = self.fresh("bt"), self.fresh("bt")
                fwd = [Call(bt, Split(True, func, arg_t, ret_t), a), Unpair((b, tau), bt)]
                rev = [Pair(bt2, (self.bar(b), tau)), Call(self.bar(a), Split(False, func, arg_t, ret_t), bt2)]
                return fwd, rev, [tau]
            case Dup(t, src):
                return [s], [Call(self.bar(src), "add", self.bar(t))], []
            case Const(a):
                return [s], [Elim(self.bar(a))], []
            case Elim(a):
                return [s], [Const(self.bar(a), ZERO, self.d(a))], []
            case Pair(b, args):
                return [s], [Unpair(tuple(self.bar(a) for a in args), self.bar(b))], []
            case Unpair(outs, b):
                return [s], [Pair(self.bar(b), tuple(self.bar(a) for a in outs))], []
            case Inj(a, left, _, b):
                z = self.fresh("dz")
                zero = (Elim(z), Const(self.bar(b), ZERO, self.d(b)))
                branches = (self.bar(b), (), z, zero) if left else (z, zero, self.bar(b), ())
                return [s], [Case(self.bar(a), *branches)], []
            case Case():
                return self.case(s)
        raise TypeError(f"not a statement: {s!r}")

    def case(self, s: Case) -> tuple[list, list, list[str]]:
        f1, r1, u1 = self.procedure(s.left)
        f2, r2, u2 = self.procedure(s.right)
        t1 = TTuple(tuple(self.tape_types[u] for u in u1))
        t2 = TTuple(tuple(self.tape_types[u] for u in u2))
        tau = self.tape("tape", TSum(t1, t2))
        fwd_branches, rev_branches = [], []
        for left, var, f, r, us in ((True, s.left_var, f1, r1, u1), (False, s.right_var, f2, r2, u2)):
            u = self.fresh("u")
            fwd_branches += [var, tuple(f) + (Pair(u, tuple(us)), Inj(tau, left, TSum(t1, t2), u))]
            back = [Unpair(tuple(us), u)] + r
            xt = self.types[s.var]
            if xt == BOOL:
                back += [Elim(self.bar(var)), Const(self.bar(s.var), ZERO, tangent_type(xt))]
            else:
                back.append(Inj(self.bar(s.var), left, tangent_type(xt), self.bar(var)))
            rev_branches += [u, tuple(back)]
        return ([Case(s.var, *fwd_branches, span=s.span)], [Case(tau, *rev_branches, span=s.span)], [tau])


def procrev_procedure(p: Procedure, params: list[str], result: str, xs: str, dt: str, types: dict[str, Type],
                      fresh: FreshNames) -> tuple[Procedure, Procedure, Procedure, list[str], str, Reverse]:
    """F⟦p⟧, R⟦p⟧ and the whole ``[procrev f]`` procedure

        xs : S, dt : dT ⊢ (params) = xs; F⟦p⟧; Elim result; R⟦p⟧[result̄ := dt]; dxs = (params̄) ⊣ dxs : dS

    with Υ_p and the variable holding dS."""
    rv = Reverse(types, fresh, {result: dt})
    fwd, rev, tapes = rv.procedure(p)
    whole = list(fwd) + [Elim(result)] + list(rev)
    if len(params) == 1:  # xs is the parameter itself
        out = rv.bar(params[0])
    else:
        whole = [Unpair(tuple(params), xs)] + whole
        out = fresh("dx")
        whole.append(Pair(out, tuple(rv.bar(x) for x in params)))
    return tuple(fwd), tuple(rev), tuple(whole), tapes, out, rv
