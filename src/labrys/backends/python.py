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
import operator
import time
from typing import Any, Callable

from ..errors import LabrysError, Span
from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.types import TTuple, Type
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
        self._resolved: dict[tuple, tuple] = {}  # resolved()'s memo
        self.sources: dict[str, str] = {}  # show_name(def) -> generated source, for inspection

    # --- Hooks: how generated code reaches functions and primitives -----------------

    def callee(self, e: ir.Call, ns: Namespace) -> tuple[str, str | None]:
        target, impl = self.resolved(e.func, e.arg.type)
        if isinstance(target, Signature):
            if isinstance(target.decl, ir.Edef) and self.external(target) is None:
                return ns.add("f", missing_edef(target, e.span)), None
            return ns.add("c", self.cell(target)) + "[0]", None
        return ns.add("p", impl), target.name

    def resolved(self, func, arg: Type) -> tuple[Any, Any]:
        """What a call of func on arg runs, and a primitive's implementation at arg, remembered
        by the ids of arg's parts as the checker does (Note [Call types by identity]): one
        implementation, and one namespace entry, for the n calls of (add x 1.0)."""
        parts = arg.elems if type(arg) is TTuple else (arg,)
        key = (func, *map(id, parts))
        known = self._resolved.get(key)
        if known is not None and len(known[0]) == len(parts) and all(map(operator.is_, known[0], parts)):
            return known[1]
        target = self.functions.resolve(func, arg)
        answer = (target, None if isinstance(target, Signature) else target.impl(arg))
        self._resolved[key] = (parts, answer)
        return answer

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
        """d as generated Python source, compiled and loaded piecewise (Note [Compiling in chunks])."""
        mod = PyModuleSource(self)
        entry = mod.add_def(with_spans(d, self.facts(d)))  # Note [Positions in derived code]
        text = mod.text()
        serial = next(_serial)
        offsets: dict[str, int] = {}  # chunk filename -> line offset of the chunk in ``text``
        namespace = dict(mod.ns.values, _inj=Inj, _primerror=PRIMITIVE_FAILURES, _labryserror=LabrysError,
                         _located=_locator(offsets, mod.line_info))
        for k, (offset, chunk) in enumerate(source_chunks(text)):
            filename = f"<labrys-python {serial}>" if k == 0 else f"<labrys-python {serial}.{k}>"
            offsets[filename] = offset
            code = compile(chunk, filename, "exec")
            linecache.cache[filename] = (len(chunk), None, chunk.splitlines(True), filename)
            exec(code, namespace)
        self.sources[show_name(d.name)] = text
        return namespace[entry]


# Note [Compiling in chunks]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# CPython's ``compile`` holds the tokens and syntax tree of its whole input
# until it returns: one call on the 46 MB generated for 10^5 nested ifs in
# argument position took 2 GB.  A generated module is a sequence of top-level
# functions that refer to each other only through the module's globals when
# called, so it is compiled and executed a few hundred kilobytes at a time
# (cut only before a top-level ``def``) into one namespace; the memory is that
# of one chunk.  Each chunk has its own file name, and the error locator maps
# (file, line) back to the line of the whole text that ``line_info`` indexes.
CHUNK_CHARS = 1 << 18


def source_chunks(text: str, limit: int | None = None) -> list[tuple[int, str]]:
    """``text`` cut before top-level ``def`` lines into pieces of about ``limit``
    characters (default :data:`CHUNK_CHARS`; a single function is never cut):
    (lines before the piece, piece)."""
    limit = CHUNK_CHARS if limit is None else limit
    out: list[tuple[int, str]] = []
    start, line = 0, 0
    while start < len(text):
        cut = text.find("\ndef ", start + limit)
        end = len(text) if cut < 0 else cut + 1
        piece = text[start:end]
        out.append((line, piece))
        line += piece.count("\n")
        start = end
    return out


def _locator(offsets: dict[str, int], line_info: dict[int, tuple[str, Span | None]]
             ) -> Callable[[PrimError], LabrysError]:
    """PrimError → LabrysError at the span of the primitive call that raised it
    (the innermost line of this generated module in the traceback)."""
    def located(exc: Exception) -> LabrysError:
        tb, line = exc.__traceback__, None
        while tb is not None:
            offset = offsets.get(tb.tb_frame.f_code.co_filename)
            if offset is not None:
                line = tb.tb_lineno + offset
            tb = tb.tb_next
        prim, span = line_info.get(line, ("", None))
        message = str(exc)
        return LabrysError(message if not prim or message.startswith(prim) else f"{prim}: {message}", span)
    return located


def note(message: str) -> None:
    """A diagnostic (e.g. a def that runs on this backend instead of compiled): the
    ``labrys.backends`` logger, shown by ``labrys --verbose``."""
    logging.getLogger("labrys.backends").info(message)
