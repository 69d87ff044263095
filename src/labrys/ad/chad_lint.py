"""The term-former half of the checker of CHAD's linear language (Vákár & Smeding,
CHAD §4, Fig. 5; :mod:`.chad_linear` checks the linear types and calls this), run on
every translation it makes: the type checker sees the lowered types (``⊸`` is
``Lam``), so this pass checks what the types no longer say — that each
backpropagator and tangent map ``lin v -> t`` is linear in v:

    Γ; v : τ ⊢ t : σ   — t is built from v by the linear formers only:
    v; Cartesian lets (their right-hand side free of v) and linear lets; a linear
    op applied to ONE argument that depends on v (``mul``: one factor; ``div``:
    the numerator; ``neg``, ``get``, ``index``, the one-hot, the copower's
    cotangent side, a derived function's cotangent argument); ``+`` and tuples
    whose parts all depend on v or are 0; application of a linear function (a
    variable bound to one, or the application of a power); a λ whose body is
    linear in v (a power, Fig. 5's ``\\y -> t``); conditions and case scrutinees,
    indices, sizes and copower arguments free of v; and a result that depends on
    v or is 0.

Each translation registers the binders of the linear λs it makes (their
variables are fresh, so a set of names identifies them).
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.names import DerivedName, show_name
from ..ir.traverse import nodes
from ..util.deep import deep
from .chad_common import is_zero

# primitive -> the argument positions that may depend on the linear variable (None: all of them,
# each either dependent or zero, as for +)
_LINEAR_IN = {"mul": (0, 1), "div": (0,), "neg": None, "add": None, "sub": None, "chadPlus": None,
              "chadOpen": (0,), "chadLeft": (0,), "chadRight": (0,), "chadIndex": (1,), "chadOneHot": (2,),
              "chadSumVec": (0,), "chadCopow": (1,), "chadCopowFold": (1,), "chadSumBuild": (1,),
              "chadApp": (0,), "chadDense": (1,), "chadZip": (0,), "chadUnzip": (0,), "build": (1,),
              "constVec": (1,), "Vec_init": None, "index": (1,), "ts_add": None, "ts_scale": (1,),
              "deltaVec": (2,), "ts_delta": (2,), "ts_neg": (0,), "sum": (0,)}
_EXACTLY_ONE = {"mul"}
# one-argument primitives whose argument may itself be a literal tuple
UNARY = {"chadOpen", "chadLeft", "chadRight", "chadSumVec", "chadZip", "chadUnzip", "neg", "ts_neg", "sum"}


@deep
def lint_linearity(d: ir.Def, linear: set[str]) -> None:
    """Every ``lam`` of d whose binder is in ``linear`` is linear in it (a LabrysError if not)."""
    for x in nodes(d.body):
        if isinstance(x, ir.Lam) and x.var in linear:
            _Linear(x.var, d).result(x.body)


def _zero(e: ir.Expr, zeros: frozenset | set = frozenset()) -> bool:
    """0 by the unit laws: 0, a tuple of 0s, a linear map applied to 0, a power returning 0
    (the last two are 0 because every map applied is linear, which the lint checks where it is made)."""
    match e:
        case ir.Tuple(elems):
            return all(_zero(x, zeros) for x in elems)
        case ir.App(_, a) | ir.Inj(_, _, a):  # a linear map of 0; a tagged sum tangent of 0
            return _zero(a, zeros)
        case ir.Lam(_, _, body) | ir.Let(_, _, body):
            return _zero(body, zeros)
        case ir.Call("ts_zero", _):  # the zero tangent shaped like a primal (primitives' own rules)
            return True
        case ir.Call("build", ir.Tuple((_, ir.Lam(_, _, body)))) | ir.Get(_, _, body) | ir.Call("chadOpen", body):
            return _zero(body, zeros)  # a vector of zeros; a component of 0
        case ir.Call("mul", ir.Tuple((a, b))):  # a product with a zero factor (t[0/v] = 0 in either factor)
            return _zero(a, zeros) or _zero(b, zeros)
        case ir.Call(f, arg) if f in _LINEAR_IN and not is_zero(e):  # a linear op of zeros
            args = arg.elems if isinstance(arg, ir.Tuple) and f not in UNARY else (arg,)
            allowed = _LINEAR_IN[f]
            return all(_zero(a, zeros) for k, a in enumerate(args) if allowed is None or k in allowed)
    if isinstance(e, ir.Var):
        return e.name in zeros  # let-bound to a zero
    if isinstance(e, ir.Call) and e.func == "constVec" and isinstance(e.arg, ir.Tuple):
        return _zero(e.arg.elems[1], zeros)  # a dense vector of zeros
    return is_zero(e)


class _Linear:
    def __init__(self, v: str, d: ir.Def) -> None:
        self.v, self.d = v, d
        self.dependent: set[str] = {v}
        self.memo: dict[int, bool] = {}
        self.zeros: set[str] = set()   # let-bound to a zero

    def fail(self, what: str, e: ir.Expr):
        raise LabrysError(f"internal: CHAD made a term that is not linear in {self.v} (Vákár & Smeding, CHAD, "
                          f"Fig. 5) in {show_name(self.d.name)}: {what}", e.span or self.d.span)

    def result(self, e: ir.Expr) -> None:
        if not (self.dep(e) or _zero(e, self.zeros)):
            self.fail("its result does not depend on the linear variable and is not 0 (a constant map; "
                      "a linear variable is dropped only by 0)", e)

    def dep(self, e: ir.Expr) -> bool:
        """Whether e depends on the linear variable; checks e's linear formers on the way."""
        key = id(e)
        if key not in self.memo:
            self.memo[key] = self._dep(e)
        return self.memo[key]

    def _dep(self, e: ir.Expr) -> bool:
        match e:
            case ir.Var(name):
                return name in self.dependent
            case ir.Const() | ir.FnRef():
                return False
            case ir.Let(binder, rhs, body):
                if isinstance(binder, str) and not self.dep(rhs) and _zero(rhs, self.zeros):
                    self.zeros.add(binder)
                if self.dep(rhs):
                    self.dependent.update((binder,) if isinstance(binder, str) else binder)
                return self.dep(body)
            case ir.Tuple(elems):
                flags = [self.dep(x) for x in elems]
                if any(flags) and not all(f or _zero(x, self.zeros) for f, x in zip(flags, elems)):
                    self.fail("a tuple mixes parts that depend on it with non-zero parts that do not "
                              "(each part of a linear pair is linear: drop the variable only by 0)", e)
                return any(flags)
            case ir.Get(_, _, a) | ir.Inj(_, _, a):
                return self.dep(a)
            case ir.If(c, t, f):
                if self.dep(c):
                    self.fail("a condition depends on it", e)
                return self._branches(e, [t, f])
            case ir.Case(s, _, lb, _, rb):
                if self.dep(s):
                    self.fail("a case scrutinee depends on it", e)
                return self._branches(e, [lb, rb])
            case ir.Assert(c, body):
                if self.dep(c):
                    self.fail("an assertion depends on it", e)
                return self.dep(body)
            case ir.Lam(_, _, body):  # a power (Fig. 5's \y -> t) or a Cartesian helper
                return self.dep(body)
            case ir.App(f, a):
                if self.dep(f):  # a power or a linear function that depends on it, applied to data
                    if self.dep(a):
                        self.fail("a function depending on it is applied to an argument depending on it", e)
                    return True
                return self.dep(a)  # a linear function applied (backpropagators are bound to variables)
            case ir.Call(f, arg):
                return self._call(e, f, arg)
        raise TypeError(f"not an expression: {e!r}")

    def _branches(self, e: ir.Expr, bodies: list[ir.Expr]) -> bool:
        flags = [self.dep(b) for b in bodies]
        if any(flags) and not all(f or _zero(b, self.zeros) for f, b in zip(flags, bodies)):
            self.fail("one branch depends on it and another is a non-zero constant", e)
        return any(flags)

    def _call(self, e: ir.Call, f, arg: ir.Expr) -> bool:
        args = arg.elems if isinstance(arg, ir.Tuple) and f not in UNARY else (arg,)
        flags = [self.dep(a) for a in args]
        if not any(flags):
            return False
        if isinstance(f, DerivedName):  # the user's [rev g] / [fwd g]: linear in its second argument
            if flags[0] if len(flags) > 1 else False:
                self.fail(f"the primal argument of {show_name(f)} depends on it", e)
            return True
        name = f if isinstance(f, str) else show_name(f)
        if name not in _LINEAR_IN:
            self.fail(f"'{name}' is applied to it, and '{name}' is not a linear operation", e)
        allowed = _LINEAR_IN[name]
        if allowed is None:
            if not all(fl or _zero(a, self.zeros) for fl, a in zip(flags, args)):
                self.fail(f"'{name}' adds something that does not depend on it (an affine map: + adds linear "
                          "terms only)", e)
            return True
        bad = [k for k, fl in enumerate(flags) if fl and k not in allowed]
        if bad:
            self.fail(f"'{name}' is not linear in its argument {bad[0] + 1}, which depends on it", e)
        if name in _EXACTLY_ONE and sum(flags) > 1:
            self.fail(f"both arguments of '{name}' depend on it (a linear op is linear in ONE argument; "
                      "a cotangent used twice is combined with +)", e)
        return True
