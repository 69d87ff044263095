"""The semantics of CL (Ellis et al. Fig. 10, corrected: a projection always gives a tuple) as an
iterative evaluator: ``t ◇ c``.

    t ◇ I = t                       t ◇ P[i₁…iₘ/n] = (π_{i₁,n} t, …, π_{iₘ,n} t)
    t ◇ K(k) = k                    t ◇ F(f) = f(t)
    t ◇ (c₁ ; c₂) = (t ◇ c₁) ◇ c₂   t ◇ (c₁ … cₙ) = (t ◇ c₁, …, t ◇ cₙ)
    t ◇ IF(c₁,c₂,c₃) = if t ◇ c₁ then t ◇ c₂ else t ◇ c₃
    t ◇ L(x,c_r,c_b) = (t ▷ (t ◇ c_r)) ◇ c_b          (Fig. 10 forgets to extend t)
    t ◇ B(c_s,i,c_e) = build (t ◇ c_s) (λi. (t ▷ i) ◇ c_e)
    t ◇ FOLD(x,c_f,c_a,c_v) = fold (λx. (t ▷ x) ◇ c_f) (t ◇ c_a) (t ◇ c_v)
    t ◇ ASSERT(c_c,c_b) = assert (t ◇ c_c) (t ◇ c_b)

The evaluator is a machine with an explicit stack of continuations (no host
recursion, whatever the depth of the term or of the recursion between CL
defs: a call of a user function that has a CL def runs its term on the same
machine).  It carries each value's type beside it, because primitives are
specialised on their argument type (Note [Primitive table]).  Values are the
language's run-time values (Float → float, Vec Float → ndarray, …).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import LabrysError, Span
from ..ir.names import show_name
from ..ir.types import TTensor, TTuple, Type
from ..prelude.vectors import _indices, _shape
from ..types.checker import Functions, Signature
from ..types.primitives import Primitive
from ..values import PrimError, dense, make_vec
from .syntax import Assert, Build, CLDef, Comp, Fold, Func, Identity, If, Konst, Let, Prune, Term, Tup, projection_index
from .typing import UNIT, extend, index_type, infer

Defs = Callable[[Signature], CLDef | None]
External = Callable[[Signature, Any], Any]
_FAILURES = (PrimError, ValueError, ArithmeticError, LookupError, TypeError)

# continuation kinds
_SEQ, _TUP, _IF, _LET, _SIZE, _ELEM, _INIT, _VEC, _STEP, _ASSERT = range(10)


class Machine:
    """Runs CL terms; ``defs(sig)`` gives the CL def of a user function (None: call
    ``external(sig, value)`` instead, e.g. another backend for an edef)."""

    def __init__(self, functions: Functions, defs: Defs = lambda sig: None, external: External | None = None,
                 span: Span | None = None) -> None:
        self.functions, self.defs, self.external, self.span = functions, defs, external, span
        self.prims: dict[tuple, tuple[Callable, Type]] = {}
        self.users: dict[tuple, tuple[Signature, CLDef | None]] = {}
        self.body_types: dict[tuple, Type] = {}

    def call(self, name, v: Any, s: Type) -> tuple[Any, Type, Term | None]:
        """F(f) on v : S — a value and its type, or (for a CL def) the term to run next."""
        proj = projection_index(name)
        if proj is not None:
            return v[proj[0] - 1], s.elems[proj[0] - 1], None
        key = (name, s)
        if key in self.prims:
            impl, t = self.prims[key]
            return self._prim(name, impl, v), t, None
        if key in self.users:
            target, d = self.users[key]
            return (None, target.ret, d.body) if d is not None else (self.external(target, v), target.ret, None)
        target = self.functions.resolve(name, s)
        if isinstance(target, Primitive):
            self.prims[key] = (target.impl(s), target.typeof(s))
            return self.call(name, v, s)
        if isinstance(target, Signature):
            d = self.defs(target)
            if d is not None or self.external is not None:
                self.users[key] = (target, d)
            if d is not None:
                return None, target.ret, d.body
            if self.external is None:
                raise LabrysError(f"CL: {show_name(name)} has no CL definition to run", self.span)
            return self.external(target, v), target.ret, None
        raise LabrysError(f"CL: no function {show_name(name)} takes {s}", self.span)

    def _prim(self, name, impl: Callable, v: Any) -> Any:
        try:
            return impl(v)
        except _FAILURES as exc:
            raise LabrysError(f"{show_name(name)}: {exc}", self.span) from None

    def body_type(self, c: Term, body: Term, s: Type) -> Type:
        key = (id(c), s)
        if key not in self.body_types:
            self.body_types[key] = infer(body, s, self.functions, self.span)
        return self.body_types[key]

    def run(self, c: Term, v: Any, s: Type) -> Any:
        """t ◇ c for t = v : S."""
        stack: list[tuple] = []
        while True:
            # evaluate c on v : s, either to a result (r : rt) or to a new (c, v, s)
            match c:
                case Identity():
                    r, rt = v, s
                case Konst(value, ctype):
                    r, rt = value, ctype
                case Prune(picks, _):
                    r, rt = tuple(v[i - 1] for i in picks), TTuple(tuple(s.elems[i - 1] for i in picks))
                case Func(name):
                    r, rt, body = self.call(name, v, s)
                    if body is not None:  # a CL def: run its term on v (a tail call)
                        c = body
                        continue
                case Comp(parts):
                    stack.append((_SEQ, parts, 1))
                    c = parts[0]
                    continue
                case Tup(elems):
                    if not elems:
                        r, rt = (), UNIT
                    else:
                        stack.append((_TUP, elems, v, s, [], []))
                        c = elems[0]
                        continue
                case If(cond):
                    stack.append((_IF, c, v, s))
                    c = cond
                    continue
                case Let(_, rhs):
                    stack.append((_LET, c, v, s))
                    c = rhs
                    continue
                case Build(size):
                    stack.append((_SIZE, c, v, s))
                    c = size
                    continue
                case Fold(_, _, init):
                    stack.append((_INIT, c, v, s))
                    c = init
                    continue
                case Assert(cond):
                    stack.append((_ASSERT, c, v, s))
                    c = cond
                    continue
                case _:
                    raise TypeError(f"not a CL term: {c!r}")
            # return r : rt to the continuations until one runs a term
            while True:
                if not stack:
                    return r
                fr = stack.pop()
                kind = fr[0]
                if kind == _SEQ:
                    _, parts, k = fr
                    if k + 1 < len(parts):
                        stack.append((_SEQ, parts, k + 1))
                    c, v, s = parts[k], r, rt
                    break
                if kind == _TUP:
                    _, elems, v0, s0, vals, types = fr
                    vals.append(r)
                    types.append(rt)
                    if len(vals) < len(elems):
                        stack.append(fr)
                        c, v, s = elems[len(vals)], v0, s0
                        break
                    r, rt = tuple(vals), TTuple(tuple(types))
                    continue
                _, term, v0, s0 = fr[:4]
                if kind == _IF:
                    c, v, s = (term.then if r else term.orelse), v0, s0
                    break
                if kind == _LET:
                    c, v, s = term.body, v0 + (r,), extend(s0, rt)
                    break
                if kind == _ASSERT:
                    if not r:
                        raise LabrysError("assertion failed", self.span)
                    c, v, s = term.body, v0, s0
                    break
                if kind == _SIZE:
                    try:
                        shape = _shape(r, "build")
                    except PrimError as exc:
                        raise LabrysError(str(exc), self.span) from None
                    idx = index_type(rt)
                    indices = list(_indices(shape))
                    s1 = extend(s0, idx)
                    if not indices:
                        elem = self.body_type(term, term.body, s1)
                        r, rt = make_vec(elem, [], shape), TTensor(len(shape), elem)
                        continue
                    stack.append((_ELEM, term, v0, s1, shape, indices, []))
                    c, v, s = term.body, v0 + (indices[0],), s1
                    break
                if kind == _ELEM:
                    _, term, v0, s1, shape, indices, items = fr
                    items.append(r)
                    if len(items) < len(indices):
                        stack.append(fr)
                        c, v, s = term.body, v0 + (indices[len(items)],), s1
                        break
                    r, rt = make_vec(rt, items, shape), TTensor(len(shape), rt)
                    continue
                if kind == _INIT:
                    stack.append((_VEC, term, v0, s0, r, rt))
                    c, v, s = term.vec, v0, s0
                    break
                if kind == _VEC:
                    _, term, v0, s0, acc, a = fr
                    items = [float(x) if isinstance(x, np.floating) else x for x in dense(r)]
                    if not items:
                        r, rt = acc, a
                        continue
                    s1 = extend(s0, TTuple((a, rt.elem)))
                    stack.append((_STEP, term, v0, s1, items, 1))
                    c, v, s = term.body, v0 + ((acc, items[0]),), s1
                    break
                if kind == _STEP:
                    _, term, v0, s1, items, k = fr
                    if k < len(items):
                        stack.append((_STEP, term, v0, s1, items, k + 1))
                        c, v, s = term.body, v0 + ((r, items[k]),), s1
                        break
                    continue
                raise TypeError(f"unknown continuation {kind}")


def evaluate(c: Term, value: Any, s: Type, functions: Functions, defs: Defs = lambda sig: None,
             external: External | None = None) -> Any:
    """t ◇ c for a run-time value t : S."""
    return Machine(functions, defs, external).run(c, value, s)


def run_def(d: CLDef, value: Any, functions: Functions, defs: Defs = lambda sig: None,
            external: External | None = None) -> Any:
    """f(value) for ``def f : S ⇒ T = c``: value ◇ c."""
    return Machine(functions, defs, external).run(d.body, value, d.arg)
