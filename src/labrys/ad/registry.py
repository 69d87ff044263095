"""The registry of derivations: every AD algorithm of the seed papers, one record
each (:class:`labrys.ad.derivation.Derivation`), in one table.

Everything that lists or dispatches on algorithms iterates :data:`REGISTRY`:
the type checker (gdefs and derived signatures, through the
:class:`labrys.types.checker.DerivationTable` it is given), the generator
(:mod:`labrys.ad.derive`), ``labrys algorithms``, ``show``, ``verify``,
``cost``, ``demo``, ``bench``, ``adbench`` and the API's ``method=``.
Adding an algorithm is one module (its passes and type maps) plus one entry
here; ``tests/test_registry.py`` registers a toy one from the test file.

Note [Signatures after generation]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Most derivations know the type of ``[d f]`` from f's type alone.  Some do not:
the forward pass of split reverse mode returns f's result together with a
BOG whose type is whatever the generated code stores.  Such a derivation
registers ``signature=None``; when the checker meets its gdef (or a call),
the registry generates ``[d f]`` from f's typed def right then and takes the
type from the generated def.  This is Knossos's answer too (Note [GDef] in
ksc): a gdef is elaborated into its def during type checking.
"""
from __future__ import annotations

from typing import Iterator

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.types import Type
from ..types.checker import Functions, Signature, check_def
from ..types.primitives import Primitive
from . import (
    activity,
    chad,
    chad_types,
    cl,
    deltarev,
    deltarev1,
    deltarev2,
    dual_numbers,
    dualfwd,
    knossos,
    proc,
    shape,
    split,
)
from .derivation import (
    ELLIS,
    FIRST_ORDER,
    FWD,
    FWD_TUPLED,
    JACOBIAN,
    JACOBIAN_TUPLED,
    KRAWIEC,
    REV,
    SAME_TYPE,
    SHAPE,
    SMEDING,
    SPLIT_FORWARD,
    SPLIT_REVERSE,
    TRANSLATION,
    VAKAR,
    WHOLE_LANGUAGE,
    Derivation,
)
from .dual_numbers import translation_signature


class Registry:
    """The derivations by name, in the order they were registered."""

    def __init__(self, entries: tuple[Derivation, ...] = ()) -> None:
        self.entries: dict[str, Derivation] = {}
        for d in entries:
            self.register(d)

    def register(self, d: Derivation) -> Derivation:
        if d.name in self.entries:
            raise ValueError(f"derivation {d.name} registered twice")
        self.entries[d.name] = d
        return d

    def unregister(self, name: str) -> None:
        self.entries.pop(name, None)

    def __iter__(self) -> Iterator[Derivation]:
        return iter(list(self.entries.values()))

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def names(self, direction: str | None = None, internal: bool = False) -> list[str]:
        """Implemented derivations (of one calling direction, "forward" or "reverse")."""
        return [d.name for d in self if d.implemented and (internal or not d.internal)
                and (direction is None or d.convention.direction == direction)]

    def get(self, name: str) -> Derivation:
        """The derivation called ``name``; unknown or not implemented: a LabrysError."""
        d = self.entries.get(name)
        if d is None:
            raise LabrysError(f"unknown derivation '{name}'; known: {', '.join(self.names())}")
        if not d.implemented:
            raise LabrysError(f"derivation '{name}' ({d.summary}; {d.paper.cite()}) is not implemented yet")
        return d

    # --- labrys.types.checker.DerivationTable ----------------------------------------

    def signature(self, name: str, base: Signature | Primitive, arg: Type,
                  functions: Functions, wrt: tuple[str, ...] = ()) -> tuple[Type, Type] | None:
        d = self.get(name)
        if wrt:  # Note [Activity in names] in labrys.ad.activity
            if not d.activity:
                takes = ", ".join(e.name for e in self if e.activity)
                raise LabrysError(f"{name} does not take (wrt …); derivations that do: {takes}")
            full = self.signature(name, base, arg, functions)
            return None if full is None else (full[0], activity.wrt_result(activity.wrt_params(base, wrt, name)))
        ret = base.typeof(arg) if isinstance(base, Primitive) else base.ret
        if d.signature is not None:
            try:
                if getattr(d.signature, "per_function", False):  # Note [Concrete BOGs] in .bog_types
                    return d.signature(arg, ret, base)
                return d.signature(arg, ret)
            except ValueError:  # e.g. a linear map has no tangent type
                return None
        if isinstance(base, Primitive) or not isinstance(base.decl, ir.Def):
            return None
        from .derive import generate_alone  # Note [Signatures after generation]
        made = generate_alone(d, check_def(base.decl, functions), functions)
        return made.arg_type, made.ret


def _knossos(name: str, summary: str, where: str, convention, signature, pipeline=None,
             language: str = FIRST_ORDER, **more) -> Derivation:
    return Derivation(name, summary, "Knossos", ELLIS, where, convention, language, signature, pipeline,
                      treats=knossos.treats, **more)


def _krawiec(name: str, summary: str, where: str, convention, signature, pipeline, **more) -> Derivation:
    return Derivation(name, summary, "Krawiec et al.", KRAWIEC, where, convention, WHOLE_LANGUAGE, signature,
                      pipeline, treats=dual_numbers.treats, **more)


def _translation(module, summary: str, where: str, **more) -> Derivation:
    return _krawiec(module.REALS.derivation, summary, where, TRANSLATION, translation_signature(module.REALS),
                    module.TRANSLATION, internal=True, **more)


def _smeding_stages() -> tuple[Derivation, ...]:
    """Smeding & Vákár's seven versions, each with its translation [drN f] (internal)."""
    from . import dualrev, dualrev1, dualrev2, dualrev3, dualrev4, dualrev5, dualrevtape

    out = []
    for module, summary, where, runtime in (
            (dualrev1, "naive dual numbers: each real with a backpropagator function", "§5, Figs 3–6",
             "backpropagator closures"),
            (dualrev2, "linear factoring: backpropagator calls staged, each run once", "§6, Figs 7–8",
             "Staged maps keyed by creation tags"),
            (dualrev3, "IDs and the ID monad; a tree map of staged calls", "§6.2, Figs 8–9",
             "the ID counter and Staged maps"),
            (dualrev4, "Cayley-transformed backpropagators: updaters of Staged", "§7, Figs 10–11",
             "the ID counter and Staged updaters"),
            (dualrev5, "two mutable arrays replace the cotangent and the map", "§8, Figs 12–13",
             "the ID counter and the State arrays"),
            (dualrev, "no cotangent array, backpropagators as Contrib data", "§9.1–9.2, Figs 13–14",
             "the ID counter and Contrib DAGs"),
            (dualrevtape, "Contribs written to a tape in the forward pass", "§9.3, Figs 14–15",
             "the ID counter and the tape")):
        r = module.REALS
        out.append(Derivation(r.algorithm, summary, "Smeding & Vákár", SMEDING, where, REV, WHOLE_LANGUAGE,
                              knossos.rev_signature, module.PIPELINE, compiled=True,
                              runtime=runtime, treats=dual_numbers.treats))
        out.append(Derivation(r.derivation, f"{r.algorithm}'s translation [{r.derivation} f]", "Smeding & Vákár",
                              SMEDING, where, TRANSLATION, WHOLE_LANGUAGE, translation_signature(r),
                              module.TRANSLATION, compiled=True, internal=True,
                              treats=dual_numbers.treats))
    return tuple(out)


SPLIT = "§6.1, §11, Figs 23–26"
REGISTRY = Registry((
    # Ellis, Peyton Jones & Fitzgibbon: the Knossos compiler's AD (K1, K2, K5's fold; K3, K4 planned)
    _knossos("D", "the full Jacobian as a linear map", "Fig. 6", JACOBIAN, knossos.jacobian_signature,
             knossos.D_PIPELINE),
    _knossos("fwd", "forward mode: the Jacobian applied to dx, pushed through", "§6.1, Fig. 4", FWD,
             knossos.fwd_signature, knossos.FWD_PIPELINE, strategies=("tupled", "plain")),
    _knossos("rev", "reverse mode: the Jacobian transposed let by let", "§6.2, Fig. 5", REV,
             knossos.rev_signature, knossos.REV_PIPELINE, activity=True),
    _knossos("Dt", "the value with the full Jacobian (basic tupling)", "§5.3, Fig. 7", JACOBIAN_TUPLED,
             knossos.tupled(knossos.jacobian_signature), knossos.DT_PIPELINE),
    _knossos("fwdt", "forward mode returning the value too (polymorphic tupling)", "§5.4, Fig. 8", FWD_TUPLED,
             knossos.tupled(knossos.fwd_signature), knossos.FWDT_PIPELINE),
    _knossos("suffwdpass", "split reverse mode, forward pass: the value and its BOG", SPLIT, SPLIT_FORWARD,
             split.forward_signature, split.FORWARD_PIPELINE, **split.STRATEGIES),
    _knossos("sufrevpass", "split reverse mode, reverse pass from the BOG", SPLIT, SPLIT_REVERSE,
             split.reverse_signature, split.REVERSE_PIPELINE, **split.STRATEGIES),
    _knossos("sufrev", "split reverse mode: the two passes", SPLIT, REV, knossos.rev_signature,
             split.SUFREV_PIPELINE, **split.STRATEGIES),
    Derivation("CL", "conversion to the categorical combinator language and back", "Knossos", ELLIS,
               "§6, Figs 9–11", SAME_TYPE, FIRST_ORDER, cl.signature, cl.PIPELINE, treats=cl.treats),
    _knossos("proc", "f computed through the procedure language", "§10, Figs 20–22", SAME_TYPE,
             lambda s, t: (s, t), proc.PROC_PIPELINE, language=proc.LANGUAGE),
    _knossos("procrev", "reverse mode by the procedure language's translation F⟦p⟧; R⟦p⟧", "§10, Fig. 23", REV,
             knossos.rev_signature, proc.PROCREV_PIPELINE, compiled=False, language=proc.LANGUAGE),
    Derivation("shape", "the sizes of the result without its values", "Knossos", ELLIS,
               "the Knossos compiler (docs/reference.md §3)", SHAPE, WHOLE_LANGUAGE, shape.signature, shape.PIPELINE,
               treats=shape.treats),
    # Krawiec et al.: dual numbers forward, and reverse mode in three steps (V1, V2)
    _krawiec("dualfwd", "forward mode with dual numbers", "§4, Figs 3–4, 15", FWD, knossos.fwd_signature,
             dualfwd.PIPELINE),
    _krawiec("deltarev1", "reverse mode pairing each real with a whole cotangent (naive)", "§5, Figs 5–6, 15",
             REV, knossos.rev_signature, deltarev1.PIPELINE),
    _krawiec("deltarev2", "reverse mode with Delta, evaluated as a tree", "§6, Figs 7–8, 15", REV,
             knossos.rev_signature, deltarev2.PIPELINE, runtime="Delta values"),
    _krawiec("deltarev", "reverse mode with Delta and explicit sharing (the tape)", "§7, §10–11, Figs 9–11, 15",
             REV, knossos.rev_signature, deltarev.PIPELINE, runtime="the Delta tape"),
    _translation(dualfwd, "dualfwd's translation Fw[f]", "Fig. 3"),
    _translation(deltarev1, "deltarev1's translation D1[f]", "Fig. 5"),
    _translation(deltarev2, "deltarev2's translation D2[f]", "Fig. 7"),
    _translation(deltarev, "deltarev's translation D[f] into the tape monad", "Fig. 9"),
    # Smeding & Vákár: dual-numbers reverse AD in six steps (S1)
    *_smeding_stages(),
    # Vákár & Smeding: CHAD (C1, C2)
    Derivation("chadfwd", "combinatory homomorphic AD, forward mode", "CHAD", VAKAR, "§4–§7, §10", FWD,
               WHOLE_LANGUAGE, knossos.fwd_signature, chad.FWD_PIPELINE, compiled_where=chad.COMPILED_WHERE,
               treats=chad.treats, runtime="CHAD's linear layer"),
    Derivation("chadrev", "combinatory homomorphic AD, reverse mode", "CHAD", VAKAR, "§4–§7, §10", REV,
               WHOLE_LANGUAGE, knossos.rev_signature, chad.REV_PIPELINE, compiled_where=chad.COMPILED_WHERE,
               treats=chad.treats, runtime="CHAD's linear layer"),
    Derivation("chadF", "chadfwd's translation Fwd[f]", "CHAD", VAKAR, "§7.4", TRANSLATION, WHOLE_LANGUAGE,
               chad_types.fwd_translation_signature, chad.FWD_TRANSLATION, compiled_where=chad.COMPILED_WHERE,
               internal=True, treats=chad.treats),
    Derivation("chadR", "chadrev's translation Rev[f]", "CHAD", VAKAR, "§7.5", TRANSLATION, WHOLE_LANGUAGE,
               chad_types.rev_translation_signature, chad.REV_TRANSLATION, compiled_where=chad.COMPILED_WHERE,
               internal=True, treats=chad.treats),
))


def coverage(registry: Registry = REGISTRY) -> dict[str, dict[str, str]]:
    """For every primitive, how every implemented derivation treats a call of it
    ("rule", "zero", "structural", "own rule", "value" or "no rule")."""
    from ..types.primitives import PRIMITIVES

    return {name: {d.name: d.treats(p) for d in registry if d.implemented and d.treats is not None}
            for name, p in PRIMITIVES.items()}
