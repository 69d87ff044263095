"""K3 of the AD map: split reverse mode by BOG AD (Ellis et al.'s working notes
§6.1, §11, Figs 24–26), as three derivations sharing their first passes:

    f : S → T
    [suffwdpass f] : S → (T, BOG)                the value and what the reverse pass needs
    [sufrevpass f] : (dT, BOG) → dS              the cotangent of the input, from the BOG
    [sufrev f]     : (S, dT) → dS                = let (t, b) = [suffwdpass f] s in [sufrevpass f] (dt, b)

The passes: A-normal form (shared with Knossos ``rev``), single-use form
(:mod:`.suf`), then the BOG forward or reverse pass (:mod:`.bog`, Fig. 24),
then the optimiser.  A call of a user function g becomes a call of
``[suffwdpass g]`` in the forward pass and of ``[sufrevpass g]`` in the
reverse pass — hand-written ones when the program defines them — so no
callee's primal is ever recomputed: on non-tail recursion ``[sufrev f]``
costs a constant times ``f`` where Knossos ``rev`` is quadratic
(``docs/split.md``).

Note [One split per function]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``[suffwdpass f]`` and ``[sufrevpass f]`` are made by two pipelines but must
agree on the layout of f's BOG.  Both read the same memo entry (per program,
per function): the SUF def and its split are computed once, by whichever
pipeline runs first, and the other takes its half.

Note [Two styles]
~~~~~~~~~~~~~~~~~
The reverse pass comes in Fig. 24's bindings style (the default) or Fig. 25's
continuation style (:mod:`.bog_cps`): the three derivations' strategies
``bindings`` and ``continuations``, picked by ``m.derive(..., strategy=...)``
for one function or by ``$LABRYS_SPLIT_STYLE`` for every function a program
derives.  A derived function's callees are generated in the default style
(a call ``[sufrevpass g]`` cannot name a style), so ``strategy=`` sets f's own
reverse pass: ``[sufrev f]`` in a style other than the default inlines f's
reverse pass in that style instead of calling ``[sufrevpass f]``.  The forward
pass and the BOG are the same in both styles; the memo is per style.  ``show
--stages`` names the style in the reverse pass's title.
"""
from __future__ import annotations

import os

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import V
from ..ir.names import DerivedName, erase_types
from ..ir.traverse import all_names
from ..ir.types import BOG, TBogOf, TTuple, Type
from ..opt.anf import rename_apart
from ..opt.simplify import simplify
from ..types.tangent import tangent_type
from . import knossos
from .bog import split
from .bog_calls import pass_name
from .bog_cps import BINDINGS, CONTINUATIONS, STYLES
from .pipeline import Pass, Work, fresh_for
from .suf import single_use_form


def _memo(work: Work, d: ir.Def) -> dict:
    table = work.generator.memo.setdefault("split", {})
    return table.setdefault((d.name, d.arg_type, work.strategy), {})


def _suf_pass(d: ir.Def, work: Work) -> ir.Def:
    knossos._require_core(d)
    memo = _memo(work, d)
    if "suf" not in memo:
        memo["suf"] = single_use_form(d, work.fresh)
    return memo["suf"]


def _halves(d: ir.Def, work: Work) -> tuple[ir.Def, ir.Def, Type]:
    entry = _memo(work, d)  # Note [One split per function]
    if "split" not in entry:
        # the single-use form may be memoised from another derivation's Work, whose fresh names
        # this Work's generator has not seen: a BOG named like one of its copies captured it
        work.fresh.avoid(all_names(d.body) | {p.name for p in d.params})
        entry["split"] = split(d, work.functions, work.fresh, style(work), entry.setdefault("notes", []))
    return entry["split"]


STYLE_ENV = "LABRYS_SPLIT_STYLE"


def default_style() -> str:
    """The reverse pass's style when none is asked for: ``$LABRYS_SPLIT_STYLE``, else
    the bindings style (Note [Two styles])."""
    chosen = os.environ.get(STYLE_ENV, "") or BINDINGS
    if chosen not in STYLES:
        raise LabrysError(f"${STYLE_ENV}={chosen!r}: choose one of {', '.join(STYLES)}")
    return chosen


def style(work: Work) -> str:
    return work.strategy or BINDINGS


def _reverse_title(work: Work) -> str:
    figure = "Fig. 25, continuation style" if style(work) == CONTINUATIONS else "Fig. 24, bindings style"
    notes = "".join(f"\n; {n}" for n in work.notes.get("split-notes", ()))
    return f"BOG reverse pass [sufrevpass f] ({figure}){notes}"


def _forward_pass(d: ir.Def, work: Work) -> ir.Def:
    return _halves(d, work)[0]


def _reverse_pass(d: ir.Def, work: Work) -> ir.Def:
    out = _halves(d, work)[1]
    work.notes["split-notes"] = _memo(work, d).get("notes", [])
    return out


def _wrapper(d: ir.Def, work: Work) -> ir.Def:
    """[sufrev f](s, dt) = let (t, b) = [suffwdpass f](s) in [sufrevpass f](dt, b)  (§6.1)."""
    base = pass_name(erase_types(d.name), d.arg_type, work.functions)
    fresh = fresh_for(d)  # not work.fresh: the same names whether or not the views ran
    s = ir.Param(fresh("x"), d.arg_type)
    dt = ir.Param(fresh("dt"), tangent_type(d.ret))
    t, b = fresh("t"), fresh("b")
    back = ir.Call(DerivedName("sufrevpass", base), ir.Tuple((V(dt.name), V(b))))
    if style(work) != default_style():
        # Note [Two styles]: [sufrevpass f] would be generated in the default style; f's own
        # reverse pass, in the style asked for, is inlined instead (its callees' stay default)
        fresh.avoid(all_names(d.body))
        rev = _halves(d, work)[1]
        back = rename_apart(ir.Let(rev.params[0].name, V(dt.name), ir.Let(rev.params[1].name, V(b), rev.body)),
                            fresh)
        back = simplify(back)
    body = ir.Let((t, b), ir.Call(DerivedName("suffwdpass", base), V(s.name)), back)
    return ir.Def(DerivedName("sufrev", base), tangent_type(d.arg_type), (s, dt), body, span=d.span)


def _optimise(d: ir.Def, work: Work) -> ir.Def:
    return d.with_body(simplify(d.body))


SUF = Pass("suf", "Single-use form (every variable used exactly once: dup, elim)", _suf_pass)
FORWARD = Pass("bog-forward", "BOG forward pass [suffwdpass f] (Fig. 24)", _forward_pass)
REVERSE = Pass("bog-reverse", _reverse_title, _reverse_pass)
FORWARD_PIPELINE = (knossos.ANF_TAIL, SUF, FORWARD,
                    Pass("optimise", "BOG forward pass (optimised)", _optimise))
REVERSE_PIPELINE = (knossos.ANF_TAIL, SUF, REVERSE,
                    Pass("optimise", "BOG reverse pass (optimised)", _optimise))
SUFREV_PIPELINE = (knossos.ANF_TAIL, SUF,
                   Pass(FORWARD.name, FORWARD.title, _forward_pass, source="suf", view=True),
                   Pass(REVERSE.name, REVERSE.title, _reverse_pass, source="suf", view=True),
                   Pass("sufrev", "Split reverse mode: [sufrev f] calls the two passes (§6.1)", _wrapper,
                        source="suf"))


STRATEGIES = {"strategies": STYLES, "default_strategy": default_style}  # the registry entries' (Note [Two styles])


def _bog_of(base, s: Type) -> Type:
    """The opaque BOG of ``[suffwdpass f]`` at S, tagged with f (Note [Concrete BOGs] in .bog_types)."""
    name = getattr(base, "name", None)
    return BOG if name is None else TBogOf(("fn", erase_types(name), s))


def forward_signature(s: Type, t: Type, base=None) -> tuple[Type, Type]:
    return s, TTuple((t, _bog_of(base, s)))


def reverse_signature(s: Type, t: Type, base=None) -> tuple[Type, Type]:
    return TTuple((tangent_type(t), _bog_of(base, s))), tangent_type(s)


forward_signature.per_function = reverse_signature.per_function = True



