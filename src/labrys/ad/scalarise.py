"""Reduce vector arithmetic to build, index, ifold and scalar primitives, for the
dual-number algorithms of Krawiec et al. (§10.2).

    Γ ⊢ e : A   ↦   Γ ⊢ scalarise(e) : A          (same type, same value)

Krawiec et al. extends its language with arrays through exactly two operations,
``build`` and ``index``; the Delta stays scalar, and a ``Vec Float`` becomes a
vector of dual numbers.  So before translating, every primitive that does
arithmetic on tensors or tuples is rewritten in terms of those: elementwise
ops become a ``build`` (or a tuple) of the scalar op, ``dot``/``sum``/
``sumbuild`` a left ``ifold`` of scalar additions (one ``Add`` per term, which is
the paper's complexity), matrix–vector products a ``build`` of ``dot``s.  A
rewrite may leave vector ops one level down (a sum of vectors adds vectors),
so the pass runs to a fixpoint, re-typing in between.
"""
from __future__ import annotations

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V, get, if_, index_type, lam, let, tup
from ..ir.traverse import FreshNames, children, nodes, rebuild
from ..ir.types import FLOAT, INTEGER, TTensor, TTuple, Type
from ..opt.anf import rename_apart
from ..types.checker import Functions, check_def
from ..types.primitives import lookup
from ..types.tangent import is_constant_tangent
from ..util.deep import deep

# This pass's own rules (in :meth:`_Scalarise.reduction`) for primitives that are not
# elementwise or not only elementwise; the elementwise ones say so in their entry.
REDUCTIONS = {"sum", "sumbuild", "dot", "ts_dot", "max", "min", "deltaVec", "ts_delta", "setAt", "mul", "indexL"}


def scalarise(d: ir.Def, fresh: FreshNames, functions: Functions, sums: bool = False) -> ir.Def:
    """The typed def ``d`` with no arithmetic on tensors or tuples left; ``sums``: a sum of
    reals stays (or becomes) a ``sumbuild`` (Note [Sums stay sums])."""
    for _ in range(_MAX_ROUNDS):
        if not any(isinstance(x, ir.Call) and _needs_rewrite(x, sums) for x in nodes(d.body)):
            return d
        d = check_def(d.with_body(_Scalarise(fresh, sums).expr(d.body)), functions)
    raise LabrysError("internal: vector arithmetic nested too deeply to scalarise", d.span)


_MAX_ROUNDS = 16  # each round peels one level of nesting (a Vec of Vecs needs two)


# Note [Sums stay sums]
# ~~~~~~~~~~~~~~~~~~~~~
# Krawiec et al.'s dual numbers need a sum as a fold of scalar additions (one Add per term).
# CHAD (Vákár & Smeding) has its own rule for ``sumbuild`` (§10's binder rule, summed): its
# backpropagator is a Σ that hands every element the same cotangent.  As a fold, a sum's
# reverse pass is an explicit reverse loop that keeps every partial sum (a state per element)
# although the step's transpose never reads it; so for CHAD (``sums=True``) a sum of reals —
# ``sum``, ``dot``, ``sumbuild`` — is a ``sumbuild`` of the scalar term.


def _float_sumbuild(e: ir.Call) -> bool:
    return e.func == "sumbuild" and e.type == FLOAT and isinstance(e.arg, ir.Tuple) and len(e.arg.elems) == 2 \
        and isinstance(e.arg.elems[1], ir.Lam) and e.arg.elems[1].var_type == INTEGER


def _needs_rewrite(e: ir.Call, sums: bool = False) -> bool:
    if sums and _float_sumbuild(e):
        return False
    p = lookup(e.func)
    if p is None or (p.elementwise is None and p.name not in REDUCTIONS) or e.type is None:
        return False
    types = _arg_types(e)
    if is_constant_tangent(e.type) and all(is_constant_tangent(t) for t in types):
        return False  # Integer arithmetic: no reals involved
    return p.name in REDUCTIONS and not (p.elementwise and _all_scalar(types, e.type)) \
        or not _all_scalar(types, e.type)


def _arg_types(e: ir.Call) -> tuple[Type, ...]:
    t = e.arg.type
    return t.elems if isinstance(t, TTuple) and isinstance(e.arg, ir.Tuple) else (t,)


def _all_scalar(types: tuple[Type, ...], res: Type) -> bool:
    return all(t in (FLOAT, INTEGER) or is_constant_tangent(t) for t in (*types, res))


class _Scalarise:
    def __init__(self, fresh: FreshNames, sums: bool = False) -> None:
        self.fresh, self.sums = fresh, sums

    @deep
    def expr(self, e: ir.Expr) -> ir.Expr:
        kids = [self.expr(c) for c, _ in children(e)]
        out = rebuild(e, kids)
        if isinstance(e, ir.Call) and _needs_rewrite(e, self.sums):
            return self.call(e, out.arg)
        return out

    def call(self, e: ir.Call, arg: ir.Expr) -> ir.Expr:
        prim, res = lookup(e.func), e.type
        name = prim.name
        if name == "sum" and _is_build(arg):  # (sum (build n f)) is (sumbuild n f): no vector made
            n, f = arg.arg.elems
            return self.sum_of(n, f.var, f.body, res)
        types = _arg_types(e)
        binds, args = self.atoms(arg, len(types))
        if prim.elementwise and all(t == res or t in (FLOAT, INTEGER) for t in types) \
                and not (name in ("max", "min") and len(types) == 1):
            out = self.elementwise(prim.elementwise, args, types, res)
        else:
            out = self.reduction(name, e, args, types)
        for b, rhs in reversed(binds):
            out = let(b, rhs, out)
        return out

    def atoms(self, arg: ir.Expr, n: int) -> tuple[list, list[ir.Expr]]:
        parts = list(arg.elems) if isinstance(arg, ir.Tuple) and n == len(arg.elems) and n != 1 else [arg]
        binds, out = [], []
        for p in parts:
            if isinstance(p, (ir.Var, ir.Const, ir.Lam)):
                out.append(p)
            else:
                v = self.fresh("a")
                binds.append((v, p))
                out.append(V(v))
        return binds, out

    def elementwise(self, op: str, args: list[ir.Expr], types: tuple[Type, ...], res: Type) -> ir.Expr:
        if isinstance(res, TTuple):
            n = len(res.elems)
            return tup(*(C(op, *(get(k + 1, n, a) if t == res else a for a, t in zip(args, types)))
                         for k in range(n)))
        i = self.fresh("i")
        first = next(a for a, t in zip(args, types) if t == res)
        return C("build", C("size", first), lam(i, index_type(res), C(op, *(
            C("index", V(i), a) if t == res else a for a, t in zip(args, types)))))

    def reduction(self, name: str, e: ir.Call, args: list[ir.Expr], types: tuple[Type, ...]) -> ir.Expr:
        if name == "indexL":   # (indexL i v) is (tuple (index i v) v)
            return tup(C("index", args[0], args[1]), args[1])
        i, vec, one = self.fresh("i"), TTensor(1, FLOAT), ir.Const(1, INTEGER)
        if name == "sum" and len(types) == 1 and _is_vec(types[0]):
            return self.sum_of(C("size", args[0]), i, C("index", V(i), args[0]), types[0].elem)
        if name == "sum" and len(types) == 1 and isinstance(types[0], TTensor):  # rank r: r nested sums
            shape, rank = self.fresh("shape"), types[0].rank
            idx = [self.fresh("i") for _ in range(rank)]
            term = C("index", tup(*map(V, idx)), args[0])
            for k in reversed(range(rank)):
                term = self.sum_of(get(k + 1, rank, V(shape)), idx[k], term, types[0].elem)
            return let(shape, C("size", args[0]), term)
        if name == "sumbuild" and len(args) == 2 and isinstance(args[1], ir.Lam) and args[1].var_type == INTEGER:
            return self.sum_of(args[0], args[1].var, args[1].body, e.type)
        if name in ("dot", "ts_dot") and len(types) == 2 and all(map(_is_vec, types)):
            op = "mul" if types[0].elem == FLOAT else name
            return self.sum_of(C("size", args[0]), i, C(op, C("index", V(i), args[0]),
                                                        C("index", V(i), args[1])), FLOAT)
        if name in ("max", "min") and types == (vec,):
            acc = self.fresh("acc")
            step = lam(acc, TTuple((FLOAT, INTEGER)), C(name, get(1, 2, V(acc)), C(
                "index", C("add", get(2, 2, V(acc)), one), args[0])))
            return C("ifold", C("sub", C("size", args[0]), one), step, C("index", ir.Const(0, INTEGER), args[0]))
        if name == "mul" and types == (TTensor(1, vec), vec):
            return C("build", C("size", args[0]), lam(i, INTEGER, C("dot", C("index", V(i), args[0]), args[1])))
        if name == "mul" and types == (TTensor(2, FLOAT), vec):  # rows of a Tensor 2 times v
            j = self.fresh("j")
            row = self.sum_of(C("size", args[1]), j, C("mul", C("index", tup(V(i), V(j)), args[0]),
                                                         C("index", V(j), args[1])), FLOAT)
            return C("build", get(1, 2, C("size", args[0])), lam(i, INTEGER, row))
        if name in ("deltaVec", "ts_delta") and len(types) == 3 and types[1] == index_type(e.type):
            size = args[0] if name == "deltaVec" else C("size", args[0])  # (ts_delta v i x) is shaped like v
            zero = ir.Const(0.0, FLOAT) if types[2] == FLOAT else C("mul", ir.Const(0.0, FLOAT), args[2])
            return C("build", size, lam(i, types[1], if_(C("eq", V(i), args[1]), args[2], zero)))
        if name == "setAt" and len(types) == 3 and isinstance(types[1], TTensor) \
                and types[0] == index_type(types[1]):
            return C("build", C("size", args[1]), lam(i, types[0], if_(C("eq", V(i), args[0]), args[2],
                                                                      C("index", V(i), args[1]))))
        raise LabrysError(f"the dual-number algorithms do not support '{name}' on "
                          f"{', '.join(map(str, types))} (Krawiec et al. adds arrays through build and index)",
                          e.span)

    def sum_of(self, n: ir.Expr, i: str, term: ir.Expr, t: Type) -> ir.Expr:
        """Σ_{i < n} term, a left fold of additions: from 0 for a number, else from
        term(0), which needs n > 0 (an empty sum of vectors has no shape to be zero in)."""
        acc = self.fresh("acc")
        if self.sums and t == FLOAT:  # Note [Sums stay sums]
            return C("sumbuild", n, lam(i, INTEGER, term))
        if t in (FLOAT, INTEGER):
            body = let(i, get(2, 2, V(acc)), C("add", get(1, 2, V(acc)), term))
            return C("ifold", n, lam(acc, TTuple((t, INTEGER)), body), ir.Const(0.0 if t == FLOAT else 0, t))
        body = let(i, C("add", get(2, 2, V(acc)), ir.Const(1, INTEGER)), C("add", get(1, 2, V(acc)), term))
        first = rename_apart(let(i, ir.Const(0, INTEGER), term), self.fresh)  # term is used twice:
        # the later passes assume every binder is unique
        k = self.fresh("n")
        return let(k, n, ir.Assert(C("gt", V(k), ir.Const(0, INTEGER)), C(
            "ifold", C("sub", V(k), ir.Const(1, INTEGER)), lam(acc, TTuple((t, INTEGER)), body), first)))


def _is_build(e: ir.Expr) -> bool:
    return isinstance(e, ir.Call) and e.func == "build" and isinstance(e.arg, ir.Tuple) \
        and len(e.arg.elems) == 2 and isinstance(e.arg.elems[1], ir.Lam) and e.arg.elems[1].var_type == INTEGER


def _is_vec(t: Type) -> bool:
    return isinstance(t, TTensor) and t.rank == 1
