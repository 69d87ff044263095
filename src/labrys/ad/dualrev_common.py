"""What Smeding & Vákár's seven versions share (Dual-numbers reverse AD, efficiently,
POPL 2023): the translation and the wrapper.

    Γ ⊢ t : τ   ↦   D[Γ] ⊢ D[t] : D[τ]        D[Float] = (Tuple Float image)

Smeding & Vákár's term table (Dual-Numbers Reverse AD, Efficiently, §6.2, Fig. 9) maps every construct homomorphically;
only a Float literal and a Float primitive do anything, and between versions
only ZERO (a literal's backpropagator), ⊕ and CALL differ.  That is exactly the
shape of Krawiec et al.'s translation in :mod:`.dual_numbers` (one translation
with pluggable reals): each version here is a :class:`BPReals` saying what a
literal's dual part is and how an op's dual part is built from its operands'
parts and partials, and the ID monad of D³ onwards lives in the run time (Note
[The ID monad in the run time] in :mod:`.dualrev_runtime`).  Scalarisation first
lowers vector arithmetic to scalar ops, build, index and folds (pitfall P12).

The wrapper ``[dualrevN f] (x, dt) = Gradient (x, [drN f] (Inputs x), dt)`` is
Krawiec et al.'s too: ``Inputs`` is Interleave (fresh run, IDs for the input's
reals), ``Gradient`` is Deinterleave, the output seeding and the resolve loop of
the version.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C
from ..ir.traverse import FreshNames
from ..ir.types import FLOAT, Type, has_function
from .delta_wrappers import rev_wrapper
from .dual_numbers import Reals, translation_pipeline, wrapper_pipeline

Terms = list[tuple[ir.Expr, ir.Expr]]  # (∂_k op(x⃗), the k-th operand's dual part)
Build = Callable[[Terms, FreshNames], ir.Expr]

def times(d: ir.Expr, z: ir.Expr) -> ir.Expr:
    """∂ · z, with ∂ = 1 left out."""
    return z if isinstance(d, ir.Const) and d.value == 1.0 and d.ctype == FLOAT else C("mul", d, z)


def _no_algebra(*_):
    raise TypeError("Smeding & Vákár's versions build an op's dual part in one piece (BPReals.build)")


@dataclass(frozen=True)
class BPReals(Reals):
    """A version of Smeding & Vákár: ``zero`` is ZERO (a call that draws the literal's
    ID where the version has IDs, P9) and ``build(terms, fresh)`` the op's dual part
    ``(ID, λz. CALL(j1,d1)(∂1·z) ⊕ … ⊕ CALL(jn,dn)(∂n·z))`` (§6.2, Fig. 9)."""
    build: Build = _no_algebra

    def combine(self, terms: Terms, fresh: FreshNames | None = None) -> ir.Expr:
        # Every op result takes its own ID, even with one operand and ∂ = 1 (Fig. 9).
        return self.zero if not terms else self.build(terms, fresh or FreshNames())


def reals(algorithm: str, derivation: str, image: Type, zero: ir.Expr, build: Build) -> BPReals:
    return BPReals(algorithm, derivation, image, zero, _no_algebra, _no_algebra, build=build)


def pipelines(r: BPReals, inputs: str, gradient: str, figure: str):
    """(the translation's pipeline, the derivation's pipeline)."""
    def wrapper(d: ir.Def) -> ir.Def:
        for what, t in (("argument", d.arg_type), ("result", d.ret)):
            if has_function(t):  # pitfall P13
                raise LabrysError(f"{r.algorithm} of a function with a function-typed {what} ({t}): Interleave "
                                  "and Deinterleave exist for first-order types only (Smeding & Vákár §5.3); "
                                  "differentiate a first-order caller of it", d.span)
        return rev_wrapper(d, r.algorithm, r.derivation, inputs, gradient)
    return translation_pipeline(r), wrapper_pipeline(r, wrapper, figure)
