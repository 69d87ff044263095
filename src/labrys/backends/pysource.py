"""IR → Python source: the code generator of the ``python`` backend.

A typed def becomes a module of Python functions that use the interpreter's
run-time values (:mod:`labrys.values`) and call the prelude's specialised
``impl``s, so results are those of the interpreter.  Every compound
sub-expression is evaluated into a temporary, so let-chains and nested calls
become straight-line statements; an ``if`` or ``case`` in tail position
becomes ``if c: ... return`` followed by the other branch at the same depth,
elsewhere an if/else statement that assigns a temporary.

Note [Generated names]
~~~~~~~~~~~~~~~~~~~~~~
Generated source never contains user text except as mangled identifiers or
``repr``'d literals.  A `.ks` variable becomes ``v<k>_<hint>`` where ``<k>``
is unique per binding occurrence (so shadowing and closures need no care)
and ``<hint>`` keeps only the ASCII letters and digits of the user's name;
every other name is ``_<letters><digits>`` chosen here.  Values that are not
plain literals (spans, primitive implementations, cells of functions,
non-finite floats) live in the module's namespace under such names.
:data:`NAME_PATTERN` describes every identifier a generated module may
contain; the injection tests check it.

Note [Deep nesting in generated code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
CPython's compiler recurses over nested blocks, so 10^4 nested non-tail ifs
cannot be one function.  When the generator's block depth reaches
:data:`MAX_DEPTH`, the sub-expression is outlined into a new top-level
function of its free variables and called.

Note [Long functions]
~~~~~~~~~~~~~~~~~~~~~
CPython compiles a function as one unit, and its memory while doing so is
about 3.5 KB per line: 10^5 nested lets, calls or tail ifs were one function
of 2-3*10^5 lines and about 1 GB.  Two bounds keep every function short: once
a function has :data:`MAX_LINES` lines, what remains of its tail (the rest of
a let-chain, the next else-branch) is outlined like a deep block (a new
function of its free variables, returned from this one); and a compound
sub-expression nested :data:`MAX_NESTING` deep in one function (the argument
of the argument of ... a call) is outlined.  The generated module is then
compiled in chunks (Note [Compiling in chunks] in
:mod:`labrys.backends.python`).  Numba's defs are far smaller than either bound.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Protocol

from ..errors import Span
from ..ir import nodes as ir
from ..ir.traverse import free_vars, free_vars_table

NAME_PATTERN = re.compile(r"v\d+_[A-Za-z0-9]{0,12}|_[a-z]+\d*")
MAX_DEPTH = 16  # deeper blocks are outlined; shallower blocks keep the generated source small (indentation)
MAX_LINES = 10_000  # Note [Long functions]: what follows in a longer function is outlined
MAX_NESTING = 2_000  # Note [Long functions]: a sub-expression nested deeper is outlined
_HINT = re.compile(r"[^A-Za-z0-9]")


_NEEDS_TEMP = (ir.Const, ir.Var, ir.Let, ir.If, ir.Case)


class Namespace:
    """The globals of one generated module: named run-time objects, deduplicated by identity."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self._ids: dict[tuple[str, int], str] = {}

    def add(self, prefix: str, value: Any) -> str:
        key = (prefix, id(value))
        if key not in self._ids:
            name = f"_{prefix}{len(self.values)}"
            self._ids[key] = name
            self.values[name] = value
        return self._ids[key]


class Hooks(Protocol):
    """What the generator asks of its backend: code for calls and function references."""

    def callee(self, e: ir.Call, ns: Namespace) -> tuple[str, str | None]:
        """(callee as a Python expression, primitive name or None) for a call node."""

    def fnref(self, e: ir.FnRef, ns: Namespace) -> str:
        """A Python expression for the function value (fn NAME)."""


class Function:
    """One generated Python function: parameter list and body lines."""

    def __init__(self, name: str, params: list[str]) -> None:
        self.name, self.params, self.lines = name, params, []
        self.nesting = 0  # compound expressions being emitted inside one another (Note [Long functions])


class PyModuleSource:
    """The generated module for one def; ``lines[k]`` says which primitive call
    and span line k+1 of the source holds (for run-time error positions)."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks
        self.ns = Namespace()
        self.functions: list[Function] = []
        self.counter = 0
        self.line_info: dict[int, tuple[str, Span | None]] = {}
        self.free: dict[int, frozenset[str]] = {}  # free variables of the def's sub-expressions

    def free_vars(self, e: ir.Expr) -> frozenset[str] | set[str]:
        """e's free variables, from the table made once per def (Note [Deep nesting in generated code])."""
        found = self.free.get(id(e))
        return found if found is not None else free_vars(e)

    # --- names ----------------------------------------------------------------

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    def variable(self, name: str) -> str:
        """A new Python name for one binding of the `.ks` variable ``name``."""
        self.counter += 1
        return f"v{self.counter}_{_HINT.sub('', name)[:12]}"

    def bind(self, env: dict[str, str], name: str) -> str:
        env[name] = py = self.variable(name)
        return py

    # --- entry ----------------------------------------------------------------

    def add_def(self, d: ir.Def) -> str:
        """Generate d as a function of one argument (a tuple when d has several parameters)."""
        env: dict[str, str] = {}
        fn = Function(self.fresh("fn"), ["_arg"])
        self.functions.append(fn)
        names = [self.bind(env, p.name) for p in d.params]
        self.free = free_vars_table(d.body)
        out = Emitter(self, fn, env)
        if len(names) == 1:
            out.emit(f"{names[0]} = _arg")
        elif names:
            out.emit(f"{', '.join(names)}, = _arg")
        out.tail(d.body)
        return fn.name

    def text(self) -> str:
        """The module's source; fills :attr:`line_info`."""
        out: list[str] = []
        for fn in self.functions:
            out.append(f"def {fn.name}({', '.join(fn.params)}):")
            out.append("    try:")
            for line, info in fn.lines:
                if info is not None:
                    self.line_info[len(out) + 1] = info
                out.append("    " + line)
            out.append("    except _primerror as _exc:")
            out.append("        raise _located(_exc) from None")
            out.append("")
        return "\n".join(out)


class Emitter:
    """Emits the statements of one function body."""

    def __init__(self, mod: PyModuleSource, fn: Function, env: dict[str, str], depth: int = 1) -> None:
        self.mod, self.fn, self.env, self.depth = mod, fn, env, depth

    def emit(self, line: str, info: tuple[str, Span | None] | None = None) -> None:
        self.fn.lines.append(("    " * self.depth + line, info))

    def scoped(self, depth: int) -> "Emitter":
        """An emitter into the same function whose bindings do not leak into this one."""
        return Emitter(self.mod, self.fn, dict(self.env), depth)

    def indented(self) -> "Emitter":
        return self.scoped(self.depth + 1)

    # --- expressions ------------------------------------------------------------

    def atom(self, e: ir.Expr) -> str:
        """Emit statements computing ``e``; return a name or literal holding its value."""
        if isinstance(e, (ir.Var, ir.Const)):
            return self.env[e.name] if isinstance(e, ir.Var) else self.literal(e.value)
        if self.depth >= MAX_DEPTH or self.fn.nesting >= MAX_NESTING:  # Note [Long functions]
            return self.outline(e)
        self.fn.nesting += 1
        try:
            return self.compound(e)
        finally:
            self.fn.nesting -= 1

    def compound(self, e: ir.Expr) -> str:
        match e:
            case ir.Let():
                scope = self.scoped(self.depth)
                return scope.atom(scope.lets(e))
            case ir.If() | ir.Case():
                t = self.mod.fresh()
                self.branches(e, lambda em, x: em.emit(f"{t} = {em.atom(x)}"))
                return t
        t = self.mod.fresh()
        self.assign(t, e)
        return t

    def assign(self, t: str, e: ir.Expr) -> None:
        match e:
            case ir.Call(_, arg):
                callee, prim = self.mod.hooks.callee(e, self.mod.ns)
                a = self.argument(arg)
                self.emit(f"{t} = {callee}({a})", (prim, e.span) if prim else None)
            case ir.App(func, arg):
                f = self.atom(func)
                self.emit(f"{t} = {f}({self.atom(arg)})", ("", e.span))  # Note [Primitive failures]
            case ir.Lam():
                self.emit(f"{t} = {self.lam(e)}")
            case ir.Tuple(elems):
                parts = [self.atom(x) for x in elems]
                self.emit(f"{t} = ({', '.join(parts)}{',' if len(parts) == 1 else ''})")
            case ir.Get(i, _, arg):
                self.emit(f"{t} = {self.atom(arg)}[{i - 1}]")
            case ir.Assert(cond, body):
                self.check(e, cond)
                self.emit(f"{t} = {self.atom(body)}")
            case ir.Inj(left, _, arg):
                self.emit(f"{t} = _inj({left}, {self.atom(arg)})")
            case ir.FnRef():
                self.emit(f"{t} = {self.mod.hooks.fnref(e, self.mod.ns)}")
            case _:
                raise TypeError(f"not an expression: {e!r}")

    def argument(self, arg: ir.Expr) -> str:
        """A call's argument; a tuple is written in the call, ``f((a, b))``, not bound
        to a temporary first (Note [Tuples in calls])."""
        if isinstance(arg, ir.Tuple) and arg.elems:
            parts = [self.atom(x) for x in arg.elems]
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
        return self.atom(arg)

    # Note [Tuples in calls]
    # ~~~~~~~~~~~~~~~~~~~~~~
    # Every primitive of two or more arguments is called with a tuple, so writing the
    # tuple in the call halves the lines of a chain of `add`s: 10^5 nested lets made
    # 2·10^5 lines, and CPython's `compile` (a third of the `python` backend's time on
    # deep programs) is about linear in lines.  The parts are atoms (names, literals),
    # so the line stays flat and its position information (the call's) is unchanged.

    def literal(self, value: Any) -> str:
        if isinstance(value, float) and not math.isfinite(value):
            return self.mod.ns.add("k", value)
        if isinstance(value, (bool, int, float, str)):
            return repr(value)
        raise TypeError(f"not a literal: {value!r}")

    def lets(self, e: ir.Expr) -> ir.Expr:
        """Emit a let-chain's bindings; return its body."""
        while isinstance(e, ir.Let):
            self.let_step(e)
            e = e.body
        return e

    def let_step(self, e: ir.Let) -> None:
        if isinstance(e.binder, str) and not isinstance(e.rhs, _NEEDS_TEMP) and self.depth < MAX_DEPTH:
            py = self.mod.variable(e.binder)
            self.assign(py, e.rhs)  # the rhs sees the outer binding of a shadowed name
            self.env[e.binder] = py
            return
        rhs = self.atom(e.rhs)
        if isinstance(e.binder, str):
            self.emit(f"{self.mod.bind(self.env, e.binder)} = {rhs}")
        else:
            names = [self.mod.bind(self.env, n) for n in e.binder]
            self.emit(f"{', '.join(names)}, = {rhs}")

    def check(self, e: ir.Assert, cond: ir.Expr) -> None:
        c = self.atom(cond)
        span = self.mod.ns.add("s", e.cond.span or e.span)
        self.emit(f"if not {c}:")
        self.indented().emit(f"raise _labryserror('assertion failed', {span})")

    def lam(self, e: ir.Lam) -> str:
        fn = Function(self.mod.fresh("lam"), [])
        env = dict(self.env)
        fn.params.append(self.mod.bind(env, e.var))
        # a closure needs its enclosing scope: its lines go inline, two levels in (def, try)
        Emitter(self.mod, fn, env, self.depth + 2).tail(e.body)
        self.emit(f"def {fn.name}({fn.params[0]}):")
        self.emit("    try:")
        self.fn.lines.extend(fn.lines)
        self.emit("    except _primerror as _exc:")
        self.emit("        raise _located(_exc) from None")
        # what the closure is, for the compiled backend (Note [Defunctionalisation])
        captured = [self.env[n] for n in sorted(self.mod.free_vars(e))]
        self.emit(f"{fn.name}._ks = ({self.mod.ns.add('l', e)}, ({''.join(c + ', ' for c in captured)}))")
        return fn.name

    def outline(self, e: ir.Expr) -> str:
        """Note [Deep nesting in generated code]: e as a new top-level function of its free variables."""
        names = sorted(self.mod.free_vars(e))
        fn = Function(self.mod.fresh("out"), [])
        env = {}
        for n in names:
            fn.params.append(self.mod.bind(env, n))
        self.mod.functions.append(fn)
        type(self)(self.mod, fn, env).tail(e)
        t = self.mod.fresh()
        args = [self.atom(ir.Var(n)) for n in names]  # atom: a backend may hold symbolic values
        self.emit(f"{t} = {fn.name}({', '.join(args)})")
        return t

    # --- control ------------------------------------------------------------------

    def branches(self, e: ir.If | ir.Case, finish: Callable[["Emitter", ir.Expr], None],
                 tail: bool = False) -> None:
        """Emit an if/case; ``finish`` completes each branch.  In tail position the
        else-branch follows at the same depth (no nesting for else-if chains)."""
        if isinstance(e, ir.If):
            self.emit(f"if {self.atom(e.cond)}:")
            finish(self.indented(), e.then)
            if tail:
                finish(self, e.orelse)
                return
            self.emit("else:")
            finish(self.indented(), e.orelse)
            return
        s = self.atom(e.scrut)
        self.emit(f"if {s}.left:")
        inner = self.indented()
        inner.emit(f"{self.mod.bind(inner.env, e.left_var)} = {s}.value")
        finish(inner, e.left_body)
        other = self
        if not tail:
            self.emit("else:")
            other = self.indented()
        other.emit(f"{self.mod.bind(other.env, e.right_var)} = {s}.value")
        finish(other, e.right_body)

    def tail(self, e: ir.Expr) -> None:
        """Emit ``return e`` (as statements)."""
        while True:
            if self.depth >= MAX_DEPTH and not isinstance(e, (ir.Var, ir.Const)):
                self.emit(f"return {self.outline(e)}")
                return
            if len(self.fn.lines) >= MAX_LINES and not isinstance(e, (ir.Var, ir.Const)):
                self.emit(f"return {self.outline(e)}")  # Note [Long functions]
                return
            if isinstance(e, ir.Let):
                self.let_step(e)
                e = e.body
            elif isinstance(e, ir.Assert):
                self.check(e, e.cond)
                e = e.body
            elif isinstance(e, (ir.If, ir.Case)):
                rest: list[ir.Expr] = []
                self.branches(e, lambda em, x: em.tail(x) if em is not self else rest.append(x),  # noqa: B023 (called now)
                              tail=True)
                e = rest[0]  # the else-branch, at this depth
            else:
                self.emit(f"return {self.atom(e)}")
                return
