"""Backends: how a checked program runs.  One interface, three implementations.

=========  ================================================================
interp     the reference interpreter: closures over frames, op-count meter
python     generated Python source on the interpreter's values (every program)
compiled   generated Python with explicit loops compiled by Numba; a function
           it cannot take runs on ``python``, with a logged note (``--verbose``)
=========  ================================================================

``compiled`` is the default; ``$LABRYS_BACKEND`` changes the default (the
test suite sets ``interp``).  See docs/backends.md.

A backend knows nothing of AD: it asks its :class:`Definitions` for the def a
function runs, generated or written (Note [Link step] in labrys.ad.link).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Protocol

from ..errors import LabrysError
from ..ir import nodes as ir
from ..types.checker import CheckedProgram, Signature

BACKENDS = ("interp", "python", "compiled")
DEFAULT = "compiled"


class Definitions(Protocol):
    def definition(self, sig: Signature) -> ir.Def | None:
        """The typed def the function ``sig`` runs; None for an edef."""


class Backend(Protocol):
    """Runs the functions of one checked program (originals and derived ones)."""

    name: str
    compile_seconds: float  # total time spent generating and compiling code

    def call(self, sig: Signature, value: Any) -> Any:
        """Run the function ``sig`` on one run-time value (a tuple for several parameters)."""

    def prepare(self, sig: Signature) -> None:
        """Compile ``sig`` now rather than on its first call."""

    def compile_def(self, d: ir.Def) -> Callable[[Any], Any]:
        """Run-time code for a typed def that is not in the program (e.g. a derived one)."""

    def reset(self) -> None:
        """Forget compiled code (an edef got a new implementation)."""


def default_backend() -> str:
    return os.environ.get("LABRYS_BACKEND") or DEFAULT


def make_backend(name: str | None, checked: CheckedProgram, externals: dict, definitions: Definitions) -> Backend:
    name = name or default_backend()
    if name == "interp":
        from .interp import Interpreter as cls
    elif name == "python":
        from .python import PythonBackend as cls
    elif name == "compiled":
        from .compiled import CompiledBackend as cls
    else:
        raise LabrysError(f"unknown backend '{name}'; choose one of {', '.join(BACKENDS)}")
    return cls(checked, externals, definitions)
