"""labrys's entries in a benchmark: every reverse derivation the registry holds,
on every backend there is, both found at run time so that new ones appear by
themselves."""
from __future__ import annotations

import importlib
import inspect
import weakref
from typing import Any, Callable

from ..api import Module, load
from ..errors import LabrysError
from .suite import LabrysProgram

# The final reverse algorithm of each paper, which ``labrys bench`` runs by default
# (Note [Bounded time] in labrys.bench.run): Knossos's reverse mode and its split
# form (Ellis et al.), Krawiec et al.'s Delta tape, Smeding & Vákár's dual-numbers
# reverse mode on a tape, and Vákár & Smeding's CHAD.  ``--deriv all`` adds the
# intermediate steps (deltarev1, deltarev2, dualrev1…5, procrev).
FINAL = ("rev", "sufrev", "deltarev", "dualrevtape", "chadrev")

# (module → {(derivation, wrt): derived function}): derived and compiled once per
# module, for the probe sizes and the full size alike
_DERIVED: "weakref.WeakKeyDictionary[Module, dict]" = weakref.WeakKeyDictionary()


def available_backends() -> list[str]:
    """``labrys.backends.BACKENDS`` (names, or a dict keyed by name) where it exists, else the interpreter."""
    try:
        backends = importlib.import_module("labrys.backends")
    except ImportError:
        return ["interp"]
    names = getattr(backends, "BACKENDS", None)
    return list(names) if names else ["interp"]


def reverse_derivations() -> list[tuple[str, Callable[[Any], Any]]]:
    """(derivation name, how to read its result) for every implemented reverse
    derivation of the registry."""
    from ..ad import REGISTRY

    return [(name, REGISTRY.get(name).convention.tangent) for name in REGISTRY.names("reverse")]


def load_module(program: LabrysProgram, backend: str) -> Module:
    """The program on ``backend`` (before backends existed, only the interpreter)."""
    if "backend" in inspect.signature(load).parameters:
        return load(program.path, backend=backend)
    if backend != "interp":
        raise LabrysError(f"backend '{backend}' is not available in this labrys")
    return load(program.path)


def objective(module: Module, program: LabrysProgram) -> Callable[[], Any]:
    f = module.function(program.function)
    return lambda: f(*program.args)


def gradient(module: Module, program: LabrysProgram, derivation: str, pick: Callable[[Any], Any]) -> Callable[[], Any]:
    """One reverse pass per cotangent of ``program`` (a gradient, or a Jacobian's rows).
    Deriving happens here, so a derivation that rejects the program raises now."""
    if program.derivative is not None:
        return program.derivative(module, derivation, pick)
    from ..ad import REGISTRY

    wrt = program.wrt if program.wrt and REGISTRY.get(derivation).activity else None
    derived = _DERIVED.setdefault(module, {})
    key = (derivation, program.function, wrt)
    if key not in derived:
        derived[key] = module.derive(derivation, program.function, wrt=wrt)
    back = derived[key]
    args = program.args[0] if len(program.args) == 1 else program.args
    read = (lambda g: g) if wrt else program.pick

    def run() -> Any:
        rows = [read(pick(back(args, ct))) for ct in program.cotangents]
        return rows[0] if len(rows) == 1 else rows
    return run
