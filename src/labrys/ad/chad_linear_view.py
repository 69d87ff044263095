"""CHAD's terms printed in the notation of the target language (Vákár & Smeding,
CHAD §4, Fig. 5), for ``labrys show FILE f --deriv chadrev --stages``:

    (lin (v : τ̲) t)         a linear function (its type printed as Fig. 5's linear type)
    (• f s)                  a linear function applied
    0, (+ a b)               the typed monoid of §5.3
    (! a ⊗ w)                copower introduction
    (case c of (!⊗ p) s)     copower elimination: s once per pair p = (a, w) of c, summed
    (Σ (i < n) t)            a sum of linear values over an index
    (f a)                    a power applied (chadApp)

Note [The linear view is a printer]: the terms are the shared IR's nodes (Note
[One IR for the linear language] in :mod:`.chad_linear`); this module only
prints them.  A comment block lists every linear function with its type
``τ̲ ⊸ σ̲`` (tuples as products, copowers as ``!A ⊗ σ̲``, powers as ``A → σ̲``).
The ``lower`` stage then prints the same program as the `.ks` that runs.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.names import show_name
from ..ir.traverse import nodes
from ..ir.types import TLam, TTuple, show_type
from ..syntax.printer import Doc, literal, render
from ..util.deep import deep
from .chad_linear import linear_signatures, show_linear_type

MAX_SIGNATURES = 16


@deep
def show_linear_def(d: ir.Def, linear: set[str]) -> str:
    """d in Fig. 5's notation, after a comment block of its linear functions' types."""
    view = _View(linear, _linear_functions(d, linear))
    params = [Doc([p.name, ":", show_type(p.type)]) for p in d.params]
    ret = show_type(d.ret)
    if isinstance(d.ret, TTuple) and len(d.ret.elems) == 2 and isinstance(d.ret.elems[1], TLam):
        lin = d.ret.elems[1]  # (R1 T, R2 T ⊸ R2 S)
        ret = f"(Tuple {show_type(d.ret.elems[0])} ({show_linear_type(lin.arg)} ⊸ {show_linear_type(lin.res)}))"
    head = Doc(["def", show_name(d.name), ret,
                params[0] if len(params) == 1 else Doc(params) if params else "()", view.doc(d.body)], "body")
    sigs = linear_signatures(d, linear)
    more = [f"; … and {len(sigs) - MAX_SIGNATURES} more"] if len(sigs) > MAX_SIGNATURES else []
    comments = [f"; lin {s}" for s in sigs[:MAX_SIGNATURES]] + more
    return "\n".join([*comments, render(head)])


def _linear_functions(d: ir.Def, linear: set[str]) -> set[str]:
    """Variables bound to linear functions: the x' of each ``let <x, x'> = …`` and the names
    let-bound to a linear λ or to the map of a pair (``snd (y x)``)."""
    out = set()
    for x in nodes(d.body):
        if isinstance(x, ir.Let):
            if not isinstance(x.binder, str) and len(x.binder) == 2:
                out.add(x.binder[1])
            elif isinstance(x.binder, str) and (isinstance(x.rhs, ir.Lam) and x.rhs.var in linear
                                                or isinstance(x.rhs, ir.Get) and (x.rhs.index, x.rhs.size) == (2, 2)):
                out.add(x.binder)
    return out


class _View:
    def __init__(self, linear: set[str], functions: set[str]) -> None:
        self.linear, self.functions = linear, functions

    def _linear_fn(self, f: ir.Expr) -> bool:
        return (isinstance(f, ir.Var) and f.name in self.functions) \
            or (isinstance(f, ir.Lam) and f.var in self.linear) \
            or (isinstance(f, ir.Get) and (f.index, f.size) == (2, 2))

    def doc(self, e: ir.Expr) -> Doc | str:
        d = self.doc
        match e:
            case ir.Call("chadZero", _) | ir.Call("chadZeroLike", _):
                return "0"
            case ir.Call("chadPlus", ir.Tuple((a, b))):
                return Doc(["+", d(a), d(b)])
            case ir.Call("chadOpen", a):
                return d(a)  # the run time's opening of a symbolic zero: not a former of Fig. 5
            case ir.Call("chadCopow", ir.Tuple((a, w))):
                return Doc(["!", d(a), "⊗", d(w)])
            case ir.Call("chadCopowFold", ir.Tuple((ir.Lam(p, t, body), c))):
                return Doc(["case", d(c), "of", Doc(["!⊗", p]), d(body)], "body")
            case ir.Call("chadApp", ir.Tuple((f, a))):
                return Doc([d(f), d(a)])  # a power applied to a Cartesian argument (Fig. 5's t s)
            case ir.Call("chadSumBuild", ir.Tuple((n, ir.Lam(i, _, body), *_))):
                return Doc(["Σ", Doc([i, "<", d(n)]), d(body)], "body")
            case ir.Lam(var, t, body) if var in self.linear:
                return Doc(["lin", Doc([var, ":", show_linear_type(t)]), d(body)], "body")
            case ir.App(f, a) if self._linear_fn(f):
                return Doc(["•", d(f), d(a)])
            case ir.Const(value):
                return literal(value)
            case ir.Var(name):
                return name
            case ir.Call(func, arg):
                args = arg.elems if isinstance(arg, ir.Tuple) and len(arg.elems) != 1 else (arg,)
                return Doc([show_name(func), *map(d, args)])
            case ir.App(func, arg):
                args = arg.elems if isinstance(arg, ir.Tuple) and len(arg.elems) != 1 else (arg,)
                return Doc([d(func), *map(d, args)])
            case ir.Lam(var, t, body):
                return Doc(["lam", Doc([var, ":", show_type(t)]), d(body)], "body")
            case ir.Let():
                return self._lets(e)
            case ir.If(c, t, f):
                return Doc(["if", d(c), d(t), d(f)], "if")
            case ir.Tuple(elems):
                return Doc(["tuple", *map(d, elems)])
            case ir.Get(i, n, arg):
                return Doc([f"get${i}${n}", d(arg)])
            case ir.Assert(c, body):
                return Doc(["assert", d(c), d(body)], "body")
            case ir.Inj(left, t, arg):
                return Doc(["inl" if left else "inr", show_type(t), d(arg)])
            case ir.Case(s, lv, lb, rv, rb):
                return Doc(["case", d(s), Doc([Doc(["inl", lv]), d(lb)], "body"),
                            Doc([Doc(["inr", rv]), d(rb)], "body")], "if")
            case ir.FnRef(func):
                return Doc(["fn", show_name(func)])
        raise TypeError(f"not an expression: {e!r}")

    def _lets(self, e: ir.Let) -> Doc:
        bindings = []
        while isinstance(e, ir.Let):
            pat = e.binder if isinstance(e.binder, str) else Doc(list(e.binder)) if e.binder else "()"
            bindings.append(Doc([pat, self.doc(e.rhs)]))
            e = e.body
        group = bindings[0] if len(bindings) == 1 else Doc(bindings, "lines")
        return Doc(["let", group, self.doc(e)], "let")
