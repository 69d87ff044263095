"""Calls of user functions in BOG AD (:mod:`.bog`, Fig. 24's call rule):

    Γ ⊢ g(a) : T   ↦   forward: (r, b_g) = [suffwdpass g](a), b_g kept in the caller's BOG
                        reverse: ∂a = [sufrevpass g](∂r, b_g)

The passes of g are hand-written ones when the program defines them (with any
BOG type they like, as in the Knossos ``gmm.ks``), else generated.  A g with a
hand-written ``[rev g]`` and no hand-written pair is called as it is in the
forward pass and through ``[rev g]`` in the reverse pass.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.build import V
from ..ir.names import DerivedName, TypedName, erase_types
from ..ir.types import TTuple, Type
from ..types.checker import Functions, Signature
from ..types.tangent import is_constant_tangent, tangent_type
from .suf import unsupported


def _written(sig) -> bool:
    """A function the program defines by hand (not one a derivation generates)."""
    return isinstance(sig, Signature) and isinstance(sig.decl, ir.Def)


def pass_name(base, primal: Type, functions: Functions):
    """The name of f in ``[sufrevpass f]``: ``[f S]`` when f is overloaded (the BOG
    is opaque, so the argument (dT, BOG) alone does not select the overload)."""
    if isinstance(base, str) and len(functions.candidates(base)) > 1:
        return TypedName(base, primal)
    return base


def call(s, b, binder, rhs: ir.Call, f, arg: ir.Expr) -> None:
    """f(e): ``(r, b_f) = [suffwdpass f](a)`` | ``∂a = [sufrevpass f](∂r, b_f)``."""
    base = pass_name(erase_types(f), arg.type, s.functions)
    fwd_name, rev_name = DerivedName("suffwdpass", base), DerivedName("sufrevpass", base)
    sig = s.functions.resolve(fwd_name, arg.type)
    if not _written(sig) and hand_written_rev(s, b, binder, rhs, base, arg):
        return
    if not isinstance(sig, Signature) or not isinstance(sig.ret, TTuple) or len(sig.ret.elems) != 2:
        raise unsupported(f"a call of '{base}' ([suffwdpass {base}] is not a function of the argument "
                          f"{arg.type} returning a pair)", rhs)
    bog = s.pair_binding(b, binder, ir.Call(fwd_name, arg), sig.ret.elems[1])
    if is_constant_tangent(arg.type):
        return
    dv = s.atom_cot(b, binder)
    darg = s.fresh("da")
    b.cur.append((darg, ir.Call(rev_name, ir.Tuple((dv, V(bog))))))
    if isinstance(arg, ir.Tuple):
        for k, a in enumerate(arg.elems):
            s.give(b, a, ir.Get(k + 1, len(arg.elems), V(darg)))
    else:
        s.give(b, arg, V(darg))


def hand_written_rev(s, b, binder, rhs: ir.Call, base, arg: ir.Expr) -> bool:
    """A g with a hand-written ``[rev g]`` and no hand-written split pair: the
    forward pass calls g and keeps its argument, the reverse pass calls
    ``[rev g]`` (as every other reverse mode does)."""
    dr = tangent_type(rhs.type)
    rev = s.functions.resolve(DerivedName("rev", base), TTuple((arg.type, dr)))
    if not _written(rev):
        return False
    b.emit((binder, rhs))
    if is_constant_tangent(arg.type):
        return True
    for a in (arg.elems if isinstance(arg, ir.Tuple) else (arg,)):
        if isinstance(a, ir.Var):
            s.keep(b, a.name)
    dv = s.atom_cot(b, binder)
    darg = s.fresh("da")
    b.cur.append((darg, ir.Call(DerivedName("rev", base), ir.Tuple((arg, dv)))))
    if isinstance(arg, ir.Tuple):
        for k, a in enumerate(arg.elems):
            s.give(b, a, ir.Get(k + 1, len(arg.elems), V(darg)))
    else:
        s.give(b, arg, V(darg))
    return True
