"""BOG AD in the bindings style (Ellis et al.'s working notes §11, Fig. 24, with
Fig. 26's dup and build): from a def in single-use form, the forward pass that
stores what the reverse pass needs — the *BOG* (backward-pass object graph) —
and the reverse pass that reads it.

    Γ ⊢ e : T  (SUF)   ↦   Γ ⊢ ∇f⟦e⟧ : (T, B⟦e⟧)
                            ∂t : dT, b : B⟦e⟧ ⊢ ∇r⟦e⟧ ∂t b : binds ∂x for every x ∈ fv(e)

    [suffwdpass f] : S → (T, BOG)        [sufrevpass f] : (dT, BOG) → dS

One case per construct, in Fig. 24's order: constants, variables, calls (of a
primitive: its rule; of a user function g: ``[suffwdpass g]``/``[sufrevpass g]``,
written by hand or generated), tuples and projections, lets (a let chain is a
*block*), ``build``/``sumbuild`` (a vector of per-iteration BOGs, the reverse a
Σ over them), ``if`` (a **sum** of the branch BOGs), plus Fig. 26's ``dup``
and §11's ``elim``.

Note [What a BOG holds]
~~~~~~~~~~~~~~~~~~~~~~~
A block's BOG is the tuple of the primal variables its reverse code reads,
each stored once, in the order the forward pass meets them: the arguments
and results a primitive's reverse rule mentions (``mul`` keeps both
arguments, ``add`` nothing, ``exp`` its result — Fig. 24's ``mul_fbog``), a
callee's BOG, a nested block's BOG (Inl/Inr of an ``if``, the vector of a
loop's iterations).  Storing a vector stores a reference, O(1).  The reverse
pass rebinds the stored variables under their primal names, so a rule's IR
reads exactly as in every other reverse mode.

Note [Opaque BOGs]
~~~~~~~~~~~~~~~~~~
A function's BOG holds its callees' BOGs, so a recursive function has a
recursive BOG type, which the language cannot write (why the Knossos compiler
refused recursion).  A generated ``[suffwdpass f]`` therefore returns its BOG
behind the opaque type ``BOG`` (``bogPack``), and ``[sufrevpass f]`` opens it
(``(bogOpen b (lam (w : B) w))``: the λ only carries the structure type B for
the checker).  At run time a BOG is a box (:class:`.bog_runtime.Bog`), so keeping one costs
one operation, like the reference it is; a loop keeps each iteration's BOG
boxed too unless it is a few scalars.  Inside one function every BOG is structurally typed and
checked; ``labrys show`` prints B in the stage title.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import LabrysError
from ..ir import nodes as ir
from ..ir.build import C, V
from ..ir.names import DerivedName, erase_types
from ..ir.traverse import FreshNames, children, free_vars
from ..ir.types import FLOAT, TBogOf, TSum, TTuple, Type
from ..opt.anf import rename_apart
from ..types.checker import Functions
from ..types.primitives import lookup
from ..types.tangent import is_constant_tangent, tangent_type, zero_tangent
from ..util.deep import deep
from . import bog_calls, bog_runtime  # noqa: F401  (bog_runtime registers bogPack and bogOpen)
from .bog_cps import BINDINGS, CONTINUATIONS, FRAME, if_frame
from .suf import LOOPS_WITH_LAMBDA, free_var_table, unsupported


@dataclass
class Block:
    """A let chain turned into its forward bindings and its reverse bindings."""

    fwd: list = field(default_factory=list)       # (binder, rhs), in order
    rev: list = field(default_factory=list)       # per binding, its reverse bindings (binder, rhs) in order
    cur: list = field(default_factory=list)       # the reverse bindings of the binding being translated
    stored: dict = field(default_factory=dict)    # name -> type: the block's BOG, in order
    tail: ir.Expr | None = None
    parent: "Block | None" = None                 # the block around a branch or a loop body
    bound: set = field(default_factory=set)       # the variables bound in this block
    given: set = field(default_factory=set)       # bound in the reverse pass too (a loop's index)
    aliases: dict = field(default_factory=dict)   # copies the reverse code reads -> their original

    def emit(self, binding: tuple) -> None:
        """A forward binding (binder, rhs)."""
        self.fwd.append(binding)
        binder = binding[0]
        self.bound.update((binder,) if isinstance(binder, str) else binder)

    def store(self, name: str, t: Type) -> None:
        """Keep ``name`` in the BOG of the block that binds it (Note [What a BOG
        holds]): a loop body's BOG holds only what changes per iteration."""
        if name in self.given:
            return
        if self.parent is not None and name not in self.bound:
            self.parent.store(name, t)
        else:
            self.stored.setdefault(name, t)

    @property
    def bog_type(self) -> TTuple:
        return TTuple(tuple(self.stored.values()))

    def bog(self) -> ir.Expr:
        return ir.Tuple(tuple(V(x, t) for x, t in self.stored.items()))


def wrap(bindings, body: ir.Expr) -> ir.Expr:
    for binder, rhs in reversed(bindings):
        body = ir.Let(binder, rhs, body)
    return body


class Split:
    """∇f and ∇r of Fig. 24 for one def in SUF."""

    def __init__(self, d: ir.Def, functions: Functions, fresh: FreshNames, style: str = BINDINGS) -> None:
        self.functions, self.fresh, self.style = functions, fresh, style
        self.types: dict[str, Type] = {p.name: p.type for p in d.params}
        self.cots: dict[str, str] = {}
        self.alias: dict[str, str] = {}   # a copy made by dup -> the variable it copies
        self.ccl: dict = {}  # a ccl's index vector -> (asserted to commute, span) (Note [ccl in O(1) memory])
        self.notes: list[str] = []        # what show says about the choices made (ccl's reverse)
        self.table = free_var_table(d.body)
        _binder_types(d.body, self.types)

    def fv(self, e: ir.Expr) -> frozenset:
        known = self.table.get(id(e))
        return known if known is not None else frozenset(free_vars(e))

    # --- cotangent names: ∂x is bound exactly once, where x is used -------------
    def constant(self, x: str) -> bool:
        return is_constant_tangent(self.types[x])

    def cot(self, x: str) -> str:
        if x not in self.cots:
            self.cots[x] = self.fresh("d" + x.split("$")[0])
        return self.cots[x]

    def cot_of(self, x: str) -> ir.Expr:
        """∂x as an expression: its variable, or () when dT(x) holds no Float."""
        return zero_tangent(V(x), self.types[x]) if self.constant(x) else V(self.cot(x))

    def keep(self, b: Block, name: str) -> None:
        """Keep the primal variable ``name`` for the reverse pass: a copy made by
        ``dup`` is kept as its original, once (Note [What a BOG holds])."""
        root = self.alias.get(name, name)
        if root != name:
            b.aliases[name] = root
        b.store(root, self.types[root])

    def give(self, b: Block, atom: ir.Expr, value: ir.Expr) -> None:
        """The reverse binding ∂a = value for an argument atom a (dropped for
        constants and for variables whose tangent holds no Float)."""
        if isinstance(atom, ir.Var) and not self.constant(atom.name):
            b.cur.append((self.cot(atom.name), value))

    def zero(self, b: Block, x: ir.Expr, t: Type) -> ir.Expr:
        """The zero cotangent of x : t; x is stored when the zero needs its shape."""
        z = ir.Const(0.0, FLOAT) if t == FLOAT else zero_tangent(x, t)
        for v in free_vars(z):
            self.keep(b, v)
        return z

    def atom_cot(self, b: Block, binder) -> ir.Expr:
        """∂ of a binding's binder, as an atom (a pattern's ∂s tupled and named)."""
        if isinstance(binder, str):
            return self.cot_of(binder)
        whole = ir.Tuple(tuple(self.cot_of(x) for x in binder))
        name = self.fresh("dp")
        b.cur.append((name, whole))
        return V(name)

    # --- blocks -----------------------------------------------------------------
    def block(self, e: ir.Expr, parent: Block | None = None, bound: tuple = ()) -> Block:
        b = Block(parent=parent, bound=set(bound), given=set(bound))
        node = e
        while isinstance(node, ir.Let):
            b.cur = []
            self.binding(b, node.binder, node.rhs, node)
            b.rev.append(b.cur)
            node = node.body
        b.tail = node
        if isinstance(node, ir.Var) and not self.constant(node.name):
            b.rev.append([(self.cot(node.name), "∂t")])  # the block's incoming cotangent: see reverse()
        elif not isinstance(node, (ir.Var, ir.Const, ir.Tuple)):
            raise LabrysError("internal: a block must end in an atom (A-normal form with bound tails)", node.span)
        return b

    def forward(self, b: Block, wrap_bog) -> ir.Expr:
        """The block's forward code, returning (result, wrap_bog(its BOG))."""
        return wrap(b.fwd, ir.Tuple((b.tail, wrap_bog(b.bog()))))

    def reverse(self, b: Block, dt: ir.Expr, bog: ir.Expr | None, consumed: list[str],
                unpack: bool = True) -> ir.Expr:
        """∇r of the block: bind ∂ of everything, return the tuple of ∂ of ``consumed``
        (``unpack=False``: the block's forward bindings are in scope, not its BOG)."""
        return self.reverse_then(b, dt, bog, ir.Tuple(tuple(self.cot_of(x) for x in consumed)), unpack)

    def reverse_then(self, b: Block, dt: ir.Expr, bog: ir.Expr | None, sigma: ir.Expr,
                     unpack: bool = True) -> ir.Expr:
        """``∇r⟦e⟧ ∂t b σ`` (Fig. 25's form): the block's reverse code, then σ where every
        ∂ it binds is in scope.  A reverse item is a binding, or (with the continuation
        style, :mod:`.bog_cps`) a *frame*, a function from σ to the code around it."""
        body = sigma
        for group in b.rev:  # the first forward binding's reverse runs last: innermost
            for binder, rhs in reversed(group):
                if binder is FRAME:
                    body = rhs(body)
                else:
                    body = ir.Let(binder, dt if isinstance(rhs, str) else rhs, body)
        body = wrap([(copy, V(root)) for copy, root in b.aliases.items()], body)
        return ir.Let(tuple(b.stored), bog, body) if b.stored and unpack else body

    def forward_bindings(self, b: Block, body: ir.Expr) -> ir.Expr:
        """The block's forward bindings around ``body`` (a fold's reverse step)."""
        return wrap(b.fwd, body)

    def constant_type(self, t: Type) -> bool:
        return is_constant_tangent(t)

    def witness(self, t: Type) -> ir.Lam:
        """``(lam (w : t) w)``: the structure type a ``bogOpen`` opens to."""
        w = self.fresh("w")
        return ir.Lam(w, t, V(w))

    def differentiable(self, names) -> list[str]:
        return [x for x in names if not self.constant(x)]

    # --- one binding, one case per construct (Fig. 24's order) ---------------------
    def binding(self, b: Block, binder, rhs: ir.Expr, where: ir.Expr) -> None:
        if isinstance(rhs, ir.Call) and rhs.func in ("cclCommutes", "cclTape") and isinstance(binder, str):
            self.ccl[binder] = (rhs.func == "cclCommutes", rhs.span)
        match rhs:
            case ir.Const():
                b.emit((binder, rhs))
            case ir.Var(name):
                b.emit((binder, rhs))
                if not self.constant(name):
                    self.give(b, rhs, self.atom_cot(b, binder))
            case ir.Call("dup", a):                       # Fig. 26: dup_rbog((∂1, ∂2)) = ∂1 + ∂2
                for x in binder:
                    b.emit((x, a))
                    if isinstance(a, ir.Var):
                        self.alias[x] = self.alias.get(a.name, a.name)
                if isinstance(a, ir.Var) and not self.constant(a.name):
                    self.give(b, a, C("ts_add", V(self.cot(binder[0])), V(self.cot(binder[1]))))
            case ir.Call("elim", a):                      # §11: an unused variable's ∂ is zero
                if isinstance(a, ir.Var) and not self.constant(a.name):
                    self.give(b, a, self.zero(b, a, a.type))
            case ir.Call(f, arg) if f in LOOPS_WITH_LAMBDA:
                self.loop(b, binder, rhs, f, arg)
            case ir.Call(f, arg):
                prim = lookup(f)
                if prim is None:
                    self.call(b, binder, rhs, f, arg)
                else:
                    self.primitive(b, binder, rhs, prim, arg)
            case ir.Tuple(elems):
                b.emit((binder, rhs))
                dv = self.atom_cot(b, binder)
                for k, a in enumerate(elems):
                    self.give(b, a, ir.Get(k + 1, len(elems), dv))
            case ir.Get(i, n, a):
                b.emit((binder, rhs))
                dv = self.atom_cot(b, binder)
                if isinstance(a, ir.Var) and not self.constant(a.name):
                    parts = tuple(dv if k == i else self.zero(b, ir.Get(k, n, a), t)
                                  for k, t in enumerate(a.type.elems, 1))
                    self.give(b, a, ir.Tuple(parts))
            case ir.Let():
                raise unsupported("a let in a let's right-hand side (A-normal form expected)", where)
            case ir.If(c, t, f):
                self.if_(b, binder, rhs, c, t, f)
            case ir.Assert(c, body):
                consumed = sorted(self.fv(body))
                inner = self.block(body, b)
                pair = self.pair_binding(b, binder, ir.Assert(c, self.forward(inner, lambda x: x)), inner.bog_type)
                keep = self.differentiable(consumed)
                if keep:
                    dv = self.atom_cot(b, binder)
                    b.cur.append((tuple(self.cot(x) for x in keep), self.reverse(inner, dv, V(pair), keep)))
            case ir.Inj() | ir.Case():
                raise unsupported("sum types (the first-order core of Ellis et al. Fig. 1)", where)
            case _:
                raise unsupported(f"{type(rhs).__name__} in a right-hand side", where)

    def pair_binding(self, b: Block, binder, rhs: ir.Expr, bog_type: Type) -> str:
        """Forward ``(binder, bog) = rhs``; the BOG is stored; its name is returned."""
        bog = self.fresh("b")
        self.types[bog] = bog_type
        if isinstance(binder, str):
            b.emit(((binder, bog), rhs))
        else:
            whole = self.fresh("r")
            b.emit(((whole, bog), rhs))
            b.emit((binder, V(whole)))
        b.store(bog, bog_type)
        return bog

    def primitive(self, b: Block, binder, rhs: ir.Call, prim, arg: ir.Expr) -> None:
        """A primitive call: its reverse rule, over the stored arguments and result."""
        b.emit((binder, rhs))
        args = arg.elems if isinstance(arg, ir.Tuple) else (arg,)
        types = tuple(a.type for a in args)
        if prim.nondiff:
            for a in args:
                if isinstance(a, ir.Var) and not self.constant(a.name):
                    self.give(b, a, self.zero(b, a, a.type))
            return
        if "rev" not in prim.rules:
            raise unsupported(f"the primitive '{prim.name}' (it has no derivative rule)", rhs)
        y = V(binder, rhs.type) if isinstance(binder, str) else ir.Tuple(tuple(V(x) for x in binder))
        dv = self.atom_cot(b, binder)
        parts = prim.rules["rev"](args, dv, types, y)
        mentioned = set()
        for a, p in zip(args, parts):
            if isinstance(a, ir.Var) and not self.constant(a.name):
                mentioned |= free_vars(p)
        for a in args:
            if isinstance(a, ir.Var) and a.name in mentioned:
                self.keep(b, a.name)
        for x in ((binder,) if isinstance(binder, str) else binder):
            if x in mentioned:
                self.keep(b, x)
        for a, p in zip(args, parts):
            self.give(b, a, p)

    def call(self, b: Block, binder, rhs: ir.Call, f, arg: ir.Expr) -> None:
        bog_calls.call(self, b, binder, rhs, f, arg)  # calls of user functions, in their own module

    def if_(self, b: Block, binder, rhs: ir.If, c, t, f) -> None:
        """if: the BOG is Inl b1 or Inr b2; the reverse a case over it (Fig. 24)."""
        consumed = sorted(self.fv(t) | self.fv(f))
        blocks = [self.block(t, b), self.block(f, b)]
        sum_type = TSum(blocks[0].bog_type, blocks[1].bog_type)
        branches = [self.forward(blk, lambda x, left=left: ir.Inj(left, sum_type, x))
                    for blk, left in zip(blocks, (True, False))]
        bog = self.pair_binding(b, binder, ir.If(c, *branches), sum_type)
        keep = self.differentiable(consumed)
        if not keep:
            return
        dv = self.atom_cot(b, binder)
        if self.style == CONTINUATIONS:
            b.cur.append((FRAME, if_frame(self, blocks, V(bog), dv, keep)))
            return
        lv, rv = self.fresh("bl"), self.fresh("br")
        alts = [self.reverse(blk, dv, V(v), keep) for blk, v in zip(blocks, (lv, rv))]
        b.cur.append((tuple(self.cot(x) for x in keep), ir.Case(V(bog), lv, alts[0], rv, alts[1])))

    def loop(self, b: Block, binder, rhs: ir.Call, f: str, arg: ir.Expr) -> None:
        from .bog_loops import build, fold  # the loops' cases, in their own module
        (fold if f == "fold" else build)(self, b, binder, rhs, f, arg)


def _binder_types(e: ir.Expr, types: dict[str, Type]) -> None:
    """The type of every variable bound in the typed expression ``e``."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ir.Let):
            ts = (x.rhs.type,) if isinstance(x.binder, str) else x.rhs.type.elems
            types.update(zip(x.names, ts))
        elif isinstance(x, ir.Lam):
            types[x.var] = x.var_type
        elif isinstance(x, ir.Var) and x.type is not None:
            types.setdefault(x.name, x.type)
        stack.extend(c for c, _ in children(x))


@deep
def split(d: ir.Def, functions: Functions, fresh: FreshNames,
          style: str = BINDINGS, notes: list | None = None) -> tuple[ir.Def, ir.Def, Type]:
    """``[suffwdpass f]`` and ``[sufrevpass f]`` of the SUF def ``d``, and f's BOG type,
    the reverse pass in the bindings (Fig. 24) or continuation (Fig. 25) style; what
    ``show`` should say about choices made goes to ``notes``."""
    s = Split(d, functions, fresh, style)
    if notes is not None:
        s.notes = notes
    blk = s.block(d.body)
    base = erase_types(d.name)
    params = d.params
    if len(params) == 1:
        x, unpack = params[0], []
    else:
        x = ir.Param(fresh("x"), d.arg_type)
        unpack = [(tuple(p.name for p in params), V(x.name))]
    fwd_body = rename_apart(wrap(unpack, s.forward(blk, lambda bog: C("bogPack", bog))), fresh)
    fwd = ir.Def(DerivedName("suffwdpass", base), TTuple((d.ret, TBogOf(blk.bog_type))), (x,), fwd_body,
                 span=d.span)  # Note [Concrete BOGs] in .bog_types
    dt = ir.Param(fresh("dt"), tangent_type(d.ret))
    bog = ir.Param(fresh("bog"), TBogOf(blk.bog_type))
    opened = fresh("b")
    w = fresh("w")
    keep = s.differentiable([p.name for p in params])
    grads = s.reverse(blk, V(dt.name), V(opened), keep)
    got = fresh("grads")
    parts = {p: ir.Get(k + 1, len(keep), V(got)) for k, p in enumerate(keep)}
    result = [parts.get(p.name) or zero_tangent(V(p.name), p.type) for p in params]
    body = ir.Let(opened, C("bogOpen", V(bog.name), ir.Lam(w, blk.bog_type, V(w))),
                  ir.Let(got, grads, result[0] if len(params) == 1 else ir.Tuple(tuple(result))))
    body = rename_apart(body, fresh)  # the branches and loop bodies rebind stored names and ∂s
    rev = ir.Def(DerivedName("sufrevpass", base), tangent_type(d.arg_type), (dt, bog), body, span=d.span)
    return fwd, rev, blk.bog_type


