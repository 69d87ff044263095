"""The ``python`` backend: every def, original or derived, becomes generated
Python source (:mod:`labrys.backends.pysource`), compiled with ``compile``
and run on the interpreter's value representation, so it accepts every
program the interpreter does and gives the same results.

It shares the interpreter's function table (one lazily filled cell per
signature, the ``definitions`` of derived functions, ``externals`` for
edefs); only :meth:`compile_def` differs.  Primitive calls are not metered
(the op-count meter is the interpreter's business: ``labrys cost``).
"""
from __future__ import annotations

import itertools
import linecache
import logging
import time
from typing import Any, Callable

from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.names import show_name
from ..types.checker import Signature
from ..util.deep import deep
from ..values import Inj, PrimError
from .interp import PRIMITIVE_FAILURES, Interpreter, missing_edef, with_spans
from .pysource import Hooks, Namespace, PyModuleSource

_serial = itertools.count(1)


class PythonBackend(Interpreter, Hooks):
    name = "python"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.compile_seconds = 0.0
        self.sources: dict[str, str] = {}  # show_name(def) -> generated source, for inspection

    # --- Hooks: how generated code reaches functions and primitives -----------------

    def callee(self, e: ir.Call, ns: Namespace) -> tuple[str, str | None]:
        target = self.functions.resolve(e.func, e.arg.type)
        if isinstance(target, Signature):
            if isinstance(target.decl, ir.Edef) and self.external(target) is None:
                return ns.add("f", missing_edef(target, e.span)), None
            return ns.add("c", self.cell(target)) + "[0]", None
        return ns.add("p", target.impl(e.arg.type)), target.name

    def fnref(self, e: ir.FnRef, ns: Namespace) -> str:
        cell = self.cell(self.functions.by_name(e.func))

        def value(x: Any) -> Any:
            return cell[0](x)
        value._ks = (e, ())  # what it is, for the compiled backend (Note [Defunctionalisation])
        return ns.add("f", value)

    # --- compiling one def ----------------------------------------------------------

    @deep
    def compile_def(self, d: ir.Def) -> Callable[[Any], Any]:
        start = time.perf_counter()
        try:
            return self.generate(d)
        finally:
            self.compile_seconds += time.perf_counter() - start

    def generate(self, d: ir.Def) -> Callable[[Any], Any]:
        """d as generated Python source, compiled and loaded."""
        mod = PyModuleSource(self)
        entry = mod.add_def(with_spans(d))  # Note [Positions in derived code]
        text = mod.text()
        filename = f"<labrys-python {next(_serial)}>"
        namespace = dict(mod.ns.values, _inj=Inj, _primerror=PRIMITIVE_FAILURES, _labryserror=LabrysError,
                         _located=_locator(filename, mod.line_info))
        code = compile(text, filename, "exec")
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        exec(code, namespace)
        self.sources[show_name(d.name)] = text
        return namespace[entry]


def _locator(filename: str, line_info: dict[int, tuple[str, Span | None]]) -> Callable[[PrimError], LabrysError]:
    """PrimError → LabrysError at the span of the primitive call that raised it
    (the innermost line of this generated module in the traceback)."""
    def located(exc: Exception) -> LabrysError:
        tb, line = exc.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        prim, span = line_info.get(line, ("", None))
        message = str(exc)
        return LabrysError(message if not prim or message.startswith(prim) else f"{prim}: {message}", span)
    return located


def note(message: str) -> None:
    """A diagnostic (e.g. a def that runs on this backend instead of compiled): the
    ``labrys.backends`` logger, shown by ``labrys --verbose``."""
    logging.getLogger("labrys.backends").info(message)
