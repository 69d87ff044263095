"""What a derivation is: the record the registry holds for each AD algorithm
(:mod:`labrys.ad.registry` lists them all).

A derivation turns a function ``f : S → T`` into a derived function
``[name f]`` in the same IR.  Its record says where it comes from (paper and
figure), how the derived function is called (its :class:`Convention`), which
programs it accepts, the type of ``[name f]`` (a type map owned by the
algorithm's module), and the pipeline of passes that makes it
(:mod:`labrys.ad.pipeline`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..ir.types import Type

FIRST_ORDER = "first-order core"
WHOLE_LANGUAGE = "whole language"


@dataclass(frozen=True)
class Paper:
    authors: str
    year: int
    title: str

    def cite(self) -> str:
        return f"{self.authors} ({self.year})"

    def short(self) -> str:
        """``Krawiec et al. (2022)``; two authors are both named."""
        names = self.authors.replace(" & ", ", ").split(", ")
        return f"{names[0] if len(names) == 1 else ' & '.join(names) if len(names) == 2 else names[0] + ' et al.'}" \
               f" ({self.year})"


ELLIS = Paper("Ellis, Peyton Jones & Fitzgibbon", 2020, "Working notes on automatic differentiation "
              "(October 2020)")
KNOSSOS_2019 = Paper("Ellis, Peyton Jones & Fitzgibbon", 2019, "Working notes on automatic differentiation "
                     "(June 2019, with the Demo)")
KRAWIEC = Paper("Krawiec, Krishnaswami, Peyton Jones, Ellis, Fitzgibbon & Eisenberg", 2022,
                "Provably correct, asymptotically efficient, higher-order reverse-mode automatic differentiation")
SMEDING = Paper("Smeding & Vákár", 2023, "Dual-numbers reverse AD, efficiently")
VAKAR = Paper("Vákár & Smeding", 2022, "CHAD: combinatory homomorphic automatic differentiation")


def _same(out: Any) -> Any:
    return out


@dataclass(frozen=True)
class Convention:
    """How a derived function ``[d f]`` of ``f : S → T`` is called.

    ``direction`` says whether it computes a directional derivative from a
    tangent (``"forward"``: (x, dx) ↦ dy) or a cotangent of the input from
    one of the output (``"reverse"``: (x, dy) ↦ dx); tools that compare
    algorithms (verify, cost, the API's grad/jvp/vjp) use exactly these two,
    with ``tangent`` picking dy out of a tupled result.
    """

    name: str
    shape: str
    direction: str | None = None
    tangent: Callable[[Any], Any] = _same


FWD = Convention("fwd-like", "(S, dS) → dT", "forward")
REV = Convention("rev-like", "(S, dT) → dS", "reverse")
FWD_TUPLED = Convention("tupled fwd", "(S, dS) → (T, dT)", "forward", lambda out: out[1])
JACOBIAN = Convention("D-like", "S → LM dS dT")
JACOBIAN_TUPLED = Convention("tupled D", "S → (T, LM dS dT)")
TRANSLATION = Convention("translation", "D[S] → D[T]")
SAME_TYPE = Convention("same type", "S → T")
SHAPE = Convention("shape", "S → shape T")
SPLIT_FORWARD = Convention("split forward pass", "S → (T, BOG)")
SPLIT_REVERSE = Convention("split reverse pass", "(dT, BOG) → dS")

Signature = Callable[[Type, Type], tuple[Type, Type]]


@dataclass(frozen=True)
class Derivation:
    """One AD algorithm (or one stage of a paper's sequence of algorithms).

    ``signature(S, T)`` is the (argument, result) type of ``[name f]``; None
    means it is known only once the derived function is generated (Note
    [Signatures after generation] in labrys.ad.registry).  ``pipeline`` is
    None for a derivation that is registered (so names, papers and gdefs
    are known) but not implemented yet.
    """

    name: str
    summary: str
    family: str
    paper: Paper
    where: str
    convention: Convention
    language: str
    signature: Signature | None
    pipeline: tuple | None = None                 # tuple[Pass, ...], see labrys.ad.pipeline
    compiled: bool = True                         # its code runs on the compiled backend (else on python)
    compiled_where: str = ""                      # when only some of its code compiles: which (for `algorithms`)
    runtime: str = ""                             # the run-time support it needs, if any
    strategies: tuple[str, ...] = ()              # alternative ways to generate it, the default first
    default_strategy: Callable[[], str] | None = None  # the default when it is not the first (e.g. from $ENV)
    internal: bool = False                        # a step other derivations call ([dual f]), not a user's
    treats: Callable[[Any], str] | None = None    # how it treats a call of each primitive (registry.coverage)
    activity: bool = False                        # takes (wrt PARAM ...): cotangents of those parameters only

    @property
    def implemented(self) -> bool:
        return self.pipeline is not None

    @property
    def status(self) -> str:
        return "implemented" if self.implemented else "planned"
