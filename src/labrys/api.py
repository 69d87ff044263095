"""The Python API: ``labrys.load`` and the :class:`Module` it returns."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator

from .ad import REGISTRY, Derivations, Linker
from .backends import Backend, make_backend
from .backends.boundary import SLOW
from .backends.interp import Interpreter, Slots
from .context import Limits, check_fast_math, fast_math_for, run_scope, threads_for
from .errors import LabrysError, Source, Span
from .ir import nodes as ir
from .ir.names import DerivedName, Name, erase_types, show_name
from .ir.types import TTuple, Type
from .syntax.parser import parse_expr, parse_name, parse_program, parse_type
from .syntax.printer import show_decl, show_program
from .syntax.sexpr import read
from .types import checker
from .types.checker import CheckedProgram, Functions, Signature, check_expr
from .util.deep import run_deep
from .values import PrimError, from_python, to_python


def load(path_or_text: str | os.PathLike, *, name: str | None = None, backend: str | None = None) -> "Module":
    """Parse and type-check a `.ks` file (a path) or `.ks` source text.  ``backend``:
    "interp", "python" or "compiled" (default: ``$LABRYS_BACKEND``, else "compiled")."""
    text, filename = _read_source(path_or_text)
    return Module(check_program(parse_program(text, name or filename)), backend=backend, name=name or filename)


def check_program(program: ir.Program) -> CheckedProgram:
    """Type-check a parsed program, with every registered derivation available."""
    return checker.check_program(program, REGISTRY)


def _looks_like_path(s: str) -> bool:
    if not s.strip() or any(c in s for c in "()\n\0"):
        return False
    return s.endswith(".ks") or os.path.exists(s)


def _read_source(path_or_text: str | os.PathLike) -> tuple[str, str]:
    """Source: a path (PathLike, or a string naming an existing or .ks file), or text."""
    if isinstance(path_or_text, os.PathLike) or _looks_like_path(path_or_text):
        path = Path(path_or_text)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise LabrysError(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            return data.decode("utf-8"), str(path)
        except UnicodeDecodeError as exc:  # positioned at the first byte that is not UTF-8
            source = Source(str(path), data.decode("utf-8", errors="replace"))
            start = len(data[:exc.start].decode("utf-8", errors="replace"))
            raise LabrysError(f"not a .ks text file: the byte 0x{data[exc.start]:02x} is not UTF-8",
                              Span(source, start, start + 1)) from None
    return str(path_or_text), "<string>"


def _one(text: str, what: str):
    """The single s-expression of ``text`` (a name or a type given to the API)."""
    items = read(Source(what, text))
    if len(items) != 1:
        raise LabrysError(f"expected one {what.strip('<>')}, got {text!r}")
    return items[0]


class Function:
    """The overloads of one function name in a module; call it like a Python function.

    ``f(x, y)`` picks the overload whose argument type accepts the values;
    ``f["(Tuple Float Float)"]`` (or ``f[type]``) selects one explicitly.
    """

    def __init__(self, module: "Module", name: Name, sigs: list[Signature]):
        self.module, self.name, self.sigs = module, name, sigs

    def __getitem__(self, arg_type: str | Type) -> "Function":
        t = parse_type(_one(arg_type, "<type>")) if isinstance(arg_type, str) else arg_type
        sigs = [s for s in self.sigs if s.arg == t]
        if not sigs:
            raise LabrysError(f"{show_name(self.name)} has no overload for argument type {t}")
        return Function(self.module, self.name, sigs)

    def __call__(self, *args: Any) -> Any:
        fast = self.module.fast_path(self.sigs[0]) if len(self.sigs) == 1 else None
        if fast is not None:  # Note [Cheap boundaries] in labrys.backends.boundary
            out = fast(args)
            if out is not SLOW:
                return out
        sig, value = self.select(args)
        with run_scope(self.module.backend.name):
            return to_python(self.module.backend.call(sig, value))

    def select(self, args: tuple) -> tuple[Signature, Any]:
        """The overload the Python values fit (exact scalar kinds first), and its argument."""
        arg = args[0] if len(args) == 1 else tuple(args)
        errors: list[str] = []
        for strict in (True, False):
            for sig in self.sigs:
                several = isinstance(sig.arg, TTuple) and len(sig.arg.elems) != 1
                if len(args) > 1 and not (several and len(sig.arg.elems) == len(args)):
                    errors.append(f"{show_name(sig.name)} takes {sig.arg}, not {len(args)} arguments")
                    continue
                try:
                    return sig, from_python(arg, sig.arg, f"argument of {show_name(sig.name)}", strict)
                except PrimError as exc:
                    errors.append(str(exc))
        errors = list(dict.fromkeys(errors))
        raise LabrysError(errors[-1] if len(self.sigs) == 1 else
                          f"no overload of {show_name(self.name)} accepts these arguments: " + "; ".join(errors))

    @property
    def signature(self) -> str:
        return "; ".join(f"{show_name(s.name)} : {s.arg} -> {s.ret}" for s in self.sigs)

    def __repr__(self) -> str:
        return f"<labrys function {self.signature}>"


class Module:
    """A checked program, ready to run on one backend (``module.backend``; the
    reference ``module.interpreter`` evaluates argument expressions and meters ops)."""

    def __init__(self, checked: CheckedProgram, backend: str | None = None, name: str = "<program>"):
        self.checked, self.name = checked, name
        self.externals: dict[Any, Callable] = {}
        self.derivations = Derivations(checked)
        self.linker = Linker(self.derivations)
        self.interpreter = Interpreter(checked, self.externals, self.linker)
        self.backend: Backend = make_backend(backend, checked, self.externals, self.linker)
        if self.backend.name == "interp":
            self.backend = self.interpreter
        self._functions: dict[str, Function] = {}   # by the name asked for: m.f costs a lookup
        self._fast: dict[int, Callable] = {}         # id(signature) -> its fast entry, once compiled
        self.derivatives: dict[tuple, Derivative] = {}  # labrys.grad & co: (method, id(sig), wrt) -> compiled once

    def fast_path(self, sig: Signature) -> Callable | None:
        """The compiled code's fast entry for ``sig`` once it is compiled (None: the general path,
        which also keeps a memory limit's guards, Note [Memory limit])."""
        if Limits.max_memory is not None:
            return None
        fast = self._fast.get(id(sig))
        if fast is None and self.backend.name == "compiled":
            if getattr(self.backend.cell(sig)[0], "lazy", False):
                self.backend.prepare(sig)   # compiled now, so the first call returns what later ones do
            fast = getattr(self.backend.cell(sig)[0], "fast", None)
            if fast is not None:
                self._fast[id(sig)] = fast
        return fast

    @property
    def compile_seconds(self) -> float:
        """Time spent so far generating and compiling code for this module's backend."""
        return self.backend.compile_seconds

    def derive(self, derivation: str, name: str | Name, optimise: bool = True,
               strategy: str | None = None, wrt: str | tuple[str, ...] | None = None,
               fast_math: bool | None = None) -> "Derivative":
        """The derived function ``[derivation name]`` (e.g. ``derive("rev", "f")``),
        callable, with its `.ks` source and the pipeline stages that made it.
        ``strategy`` picks one of the derivation's strategies (``fwd``: "tupled", Fig. 8,
        or "plain"); ``wrt`` names the parameters to differentiate with respect to
        (``[rev f (wrt a b)]``, docs/activity.md); ``fast_math=True`` lets the compiled code
        reassociate sums (Note [Reassociation on one thread], docs/backends.md); ``labrys
        algorithms`` lists the derivations."""
        check_fast_math(fast_math)
        f = self.function(name)
        if len(f.sigs) != 1:
            raise LabrysError(f"{show_name(f.name)} is overloaded: name one, e.g. '[{show_name(f.name)} Float]'")
        made = Derivative(self, derivation, f.sigs[0], optimise, strategy, wrt)
        made.fast_math = fast_math
        return made

    @property
    def program(self) -> ir.Program:
        return self.checked.program

    def function(self, name: str | Name) -> Function:
        """The function called ``name`` (``"f"``, ``"[rev f]"``, ``"[f Float]"``)."""
        if isinstance(name, str) and name in self._functions:
            return self._functions[name]
        parsed = parse_name(_one(name, "<name>")) if isinstance(name, str) else name
        sigs = self.checked.functions.candidates(parsed)
        if not isinstance(parsed, str):
            sigs = [s for s in sigs if self.checked.functions.resolve(parsed, s.arg) is s]
        if not sigs and isinstance(parsed, DerivedName):  # derived on demand, as [rev f] in a call
            sig = self.checked.functions.by_name(parsed)
            sigs = [sig] if sig is not None else []
        if not sigs:
            raise LabrysError(f"no function named {show_name(parsed)} in this module")
        f = Function(self, parsed, sigs)
        if isinstance(name, str):
            self._functions[name] = f
        return f

    __getitem__ = function

    def __getattr__(self, name: str) -> Function:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            f = self.function(name)
        except LabrysError as exc:
            raise AttributeError(str(exc)) from None
        self.__dict__[name] = f   # m.f again is a plain attribute (Note [Cheap boundaries])
        return f

    def names(self) -> list[str]:
        return [show_name(k) for k in self.checked.functions.groups]

    def implement(self, name: str, fn: Callable[..., Any]) -> None:
        """Supply a Python implementation for an edef'd function."""
        f = self.function(name)
        for sig in f.sigs:
            if not isinstance(sig.decl, ir.Edef):
                raise LabrysError(f"{show_name(sig.name)} is not an edef")
            self.externals[sig.name] = _external(fn, sig)
        self.interpreter.reset()
        self.backend.reset()
        self._fast.clear()

    def source(self, name: str | None = None) -> str:
        """`.ks` text of the whole module, or of the definitions of one function."""
        if name is None:
            return show_program(self.program)
        key = erase_types(self.function(name).name)
        return "\n\n".join(show_decl(d) for d in self.program.decls
                           if isinstance(d, (ir.Def, ir.Edef, ir.Gdef)) and erase_types(d.name) == key)

    def run_main(self) -> Any:
        return self.function("main")()

    def __str__(self) -> str:
        return show_program(self.program)

    def __repr__(self) -> str:
        names = self.names()
        shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        return f"<labrys module {self.name}: {len(names)} functions ({shown}) on the {self.backend.name} backend>"

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


class Derivative:
    """A generated derived function: call it, print it (``source``), inspect ``stages``
    (the def after each pass of the derivation's pipeline, by pass name)."""

    def __init__(self, module: Module, derivation: str, sig: Signature, optimise: bool = True,
                 strategy: str | None = None, wrt: str | tuple[str, ...] | None = None):
        self.module, self.derivation, self.sig = module, derivation, sig
        self.entry = REGISTRY.get(derivation)
        self.wrt = wrt = tuple(a.strip() for a in wrt.split(",")) if isinstance(wrt, str) else tuple(wrt or ())
        derived = module.derivations.derive(derivation, sig, strategy, wrt=wrt)
        self.stages = {s.name: s.d for s in derived.stages}
        self.d = derived.d if optimise else _before_optimisation(derived)
        module.linker.close(module.linker.callees(self.d))  # Note [Link step]: its errors surface here
        self._code = None
        self.threads: int | None = None  # compiled for this many threads (None: labrys.set_threads's)
        self.fast_math: bool | None = None  # compiled with reassociation (None: labrys.set_fast_math's)

    @property
    def support(self) -> list[ir.Def]:
        """The generated defs this one calls, transitively (callees first)."""
        return self.module.linker.reached(self.d)

    @property
    def source(self) -> str:
        """`.ks` text of the derived def, after the generated defs it calls."""
        return "\n\n".join(show_decl(d) for d in (*self.support, self.d))

    def __call__(self, *args: Any) -> Any:
        if self._code is None:
            # Note [Parallel reverse sums] in labrys.backends.numba_parallel, Note [Reassociation on one
            # thread] in labrys.backends.numba_fastmath
            with threads_for(self.threads), fast_math_for(self.fast_math):
                self._code = self.module.backend.compile_def(self.d)
        fast = getattr(self._code, "fast", None)
        if fast is not None:  # Note [Cheap boundaries] in labrys.backends.boundary
            out = fast(args)
            if out is not SLOW:
                return out
        value = from_python(args[0] if len(args) == 1 else tuple(args), self.d.arg_type,
                            f"argument of {show_name(self.d.name)}")
        with run_scope(self.module.backend.name):
            return to_python(run_deep(lambda: self._code(value)))

    def __repr__(self) -> str:
        return f"<labrys derivative {show_name(self.d.name)} : {self.d.arg_type} -> {self.d.ret}>"


def _before_optimisation(derived) -> ir.Def:
    """The last stage on the path to the result before the pass called "optimise"."""
    names = [s.name for s in derived.stages]
    if "optimise" not in names:
        return derived.d
    return derived.stages[names.index("optimise") - 1].d


def _external(fn: Callable[..., Any], sig: Signature) -> Callable[[Any], Any]:
    spread = isinstance(sig.arg, TTuple)

    def call(arg: Any) -> Any:
        out = fn(*arg) if spread else fn(arg)
        try:
            return from_python(out, sig.ret, f"result of the implementation of {show_name(sig.name)}")
        except PrimError as exc:
            raise LabrysError(str(exc), sig.decl.span) from None
    return call


def evaluate(text: str, module: Module | None = None, expected: Type | None = None,
             filename: str = "<expr>") -> Any:
    """Evaluate a closed `.ks` expression (optionally in a module's scope)."""
    value, t, span = evaluate_typed(text, module, filename)
    if expected is not None and t != expected:
        raise LabrysError(f"expected a value of type {expected}, got {t}", span)
    return to_python(value)


def evaluate_typed(text: str, module: Module | None = None, filename: str = "<expr>") -> tuple[Any, Type, Any]:
    """A closed `.ks` expression's run-time value, type and span."""
    functions = module.checked.functions if module else Functions(REGISTRY)
    e = check_expr(parse_expr(text, filename), functions)
    interp = module.interpreter if module else Interpreter(CheckedProgram(ir.Program(()), functions))

    def run() -> Any:
        slots = Slots()
        code = interp.compile(e, slots)
        return code([None] * slots.count)
    return run_deep(run), e.type, e.span
