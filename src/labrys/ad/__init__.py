"""Automatic differentiation: every algorithm is a registered derivation
(:mod:`.registry`) that turns a function into a derived function in the same
IR, by a pipeline of passes (:mod:`.pipeline`); :class:`Derivations` makes
them for one program and :class:`Linker` closes the set a backend needs
(docs/architecture.md)."""
from . import deltas, dual_io  # noqa: F401  (the run-time primitives of Krawiec et al.'s algorithms)
from .derive import Derivations, primitive_rule_def
from .link import Linker
from .pipeline import Derived
from .registry import REGISTRY

__all__ = ["REGISTRY", "Derivations", "Derived", "Linker", "primitive_rule_def"]
