"""The aten prelude: the aten:: functions of programs translated from TorchScript.

Note [The aten prelude]
~~~~~~~~~~~~~~~~~~~~~~~
The Knossos compiler's TorchScript translator (ts2ks) writes programs that
call PyTorch's operators as aten::mean, aten::mul, aten::pow, ..., which the
Knossos compiler defines in a prelude of .ks defs.  labrys ships its own,
``labrys/prelude/aten.ks``.  When a program calls an aten:: function it does
not define, the checker adds the prelude's defs of that name (every overload)
and of the aten:: functions those call, before anything else; the added defs
are ordinary defs, so they run on every backend and every derivation
differentiates them.  A program's own def of an aten:: name at some argument
type replaces the prelude's at that type.  Programs that call no aten::
function are unchanged.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ..ir import nodes as ir
from ..ir.traverse import nodes
from ..syntax.parser import parse_program

PREFIX = "aten::"


@lru_cache(maxsize=1)
def _prelude() -> tuple[ir.Def, ...]:
    text = resources.files("labrys.prelude").joinpath("aten.ks").read_text(encoding="utf-8")
    return tuple(d for d in parse_program(text, "labrys/prelude/aten.ks").decls if isinstance(d, ir.Def))


def _aten_calls(decls) -> set[str]:
    out: set[str] = set()
    for d in decls:
        if isinstance(d, ir.Def):
            out.update(e.func for e in nodes(d.body)
                       if isinstance(e, ir.Call) and isinstance(e.func, str) and e.func.startswith(PREFIX))
    return out


def add_aten_prelude(program: ir.Program) -> ir.Program:
    """``program`` with the aten prelude's defs it needs (Note [The aten prelude])."""
    wanted = _aten_calls(program.decls)
    if not wanted:
        return program
    own = {(d.name, d.arg_type) for d in program.decls if isinstance(d, ir.Def)}
    added: list[ir.Def] = []
    names: set[str] = set()
    while wanted - names:
        names |= wanted
        new = [d for d in _prelude() if d.name in wanted and (d.name, d.arg_type) not in own and d not in added]
        added += new
        wanted = _aten_calls(new) | names
    return ir.Program((*added, *program.decls)) if added else program
