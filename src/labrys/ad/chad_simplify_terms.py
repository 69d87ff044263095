"""Small predicates and builders the CHAD simplifier (:mod:`.chad_simplify`) uses on
terms: zeros, purity, bounded sizes, and the linear layer's ``chadOpen``."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.traverse import children
from ..ir.types import FLOAT, TTuple
from ..opt.simplify import is_pure
from .chad_common import is_zero, sized


def _lin_zero(e: ir.Expr) -> bool:
    """e is a zero (a vector of zeros counts: a linear map sends it to 0)."""
    match e:
        case ir.Tuple(elems):
            return all(_lin_zero(x) for x in elems)
        case ir.Call("build", ir.Tuple((_, ir.Lam(_, _, body)))):
            return _lin_zero(body)
    return is_zero(e)


def _zero_float(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.ctype == FLOAT and e.value == 0.0


def _one(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.ctype == FLOAT and e.value == 1.0


def _zero_tuple(e: ir.Expr) -> bool:
    return isinstance(e, ir.Tuple) and all(is_zero(x) or _zero_tuple(x) for x in e.elems)


def _uses(e: ir.Expr) -> tuple[dict[str, int], dict[str, int]]:
    """Occurrences of each variable counting one under a λ its binder is not under as
    many (2), and plain occurrences."""
    depth_of: dict[str, int] = {}
    uses: dict[str, int] = {}
    plain: dict[str, int] = {}
    stack = [(e, 0)]
    while stack:
        x, depth = stack.pop()
        if isinstance(x, ir.Var):
            bound = depth_of.get(x.name, 0)
            uses[x.name] = uses.get(x.name, 0) + (1 if depth == bound else 2)
            plain[x.name] = plain.get(x.name, 0) + 1
            continue
        inner = depth + 1 if isinstance(x, ir.Lam) else depth
        for c, binders in children(x):
            for b in binders:
                depth_of[b] = inner
                uses.setdefault(b, 0)
                plain.setdefault(b, 0)
            stack.append((c, inner))
    return uses, plain


def _cheap(e: ir.Expr) -> bool:
    match e:
        case ir.Var() | ir.Const() | ir.FnRef():
            return True
        case ir.Get(_, _, a):
            return isinstance(a, ir.Var)
        case ir.Tuple(elems):
            return len(elems) <= 4 and all(isinstance(x, (ir.Var, ir.Const)) or is_zero(x) for x in elems)
    return is_zero(e)


def _call(f: str, *args: ir.Expr, t=None) -> ir.Call:
    arg = args[0] if len(args) == 1 else ir.Tuple(tuple(args))
    return ir.Call(f, arg, type=t)


def _args(e: ir.Call) -> tuple[ir.Expr, ...]:
    return e.arg.elems if isinstance(e.arg, ir.Tuple) else (e.arg,)


def _at_most(e: ir.Expr, k: int) -> bool:
    """size(e) <= k, looking at no more than k + 1 nodes."""
    stack = [e]
    while stack:
        k -= 1
        if k < 0:
            return False
        stack.extend(c for c, _ in children(stack.pop()))
    return True


def _chain_longer_than(e: ir.Expr, k: int) -> bool:
    while isinstance(e, ir.Let) and k >= 0:
        e, k = e.body, k - 1
    return k < 0


def _names(x) -> tuple[str, ...]:
    return (x,) if isinstance(x, str) else x


def _pure(e: ir.Expr) -> bool:
    """Dropping e loses nothing: a λ is a value whatever its body does."""
    return isinstance(e, (ir.Lam, ir.Var, ir.Const)) or is_pure(e)


def _without(env: dict, names) -> dict:
    """env without the variables a binder rebinds (normally none: binders are fresh)."""
    if not names or not any(n in env for n in names):
        return env
    return {k: v for k, v in env.items() if k not in names}


def _ends_in_lam(e: ir.Expr) -> bool:
    while isinstance(e, ir.Let):
        e = e.body
    return isinstance(e, ir.Lam)


def _stem(name: str) -> str:
    return name.split("$")[0]


def _open(e: ir.Expr) -> ir.Expr:
    """e as a linear tuple that may be the symbolic zero (chadOpen), unless a literal tuple."""
    if isinstance(e, ir.Tuple) or isinstance(e, ir.Call) and e.func == "chadOpen":
        return e
    return _call("chadOpen", e, t=e.type)


def _part(shape: list, k: int, t) -> tuple[ir.Expr, ...]:
    """The shape (Note [Zeros shaped like the context] in chad_lower.py) of part k (0-based) of a Σ
    whose shape is ``shape`` (empty or one primal), for a part of type t: () if there is none."""
    if not shape or t is None or not sized(t):
        return ()
    whole = shape[0]
    if isinstance(whole, ir.Tuple):
        return (whole.elems[k],)
    n = len(whole.type.elems) if isinstance(whole.type, TTuple) else None
    if n is None:
        return ()
    return (ir.Get(k + 1, n, whole, type=whole.type.elems[k]),)
