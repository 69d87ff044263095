"""A def too large for Numba goes to python before the compiled backend walks it
(Note [Oversized defs go to python first]): counted, not timed — neither the BOG
walk nor the ragged-variant walk runs on it, the note says why, and it answers; a
def just under the bound is still compiled, and one that prints early still
orchestrates."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import labrys
from labrys.ad import bog_types
from labrys.backends import compiled
from labrys.backends.numba_source import MAX_NODES
from labrys.ir.traverse import size

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import depth_curve  # noqa: E402

pytest.importorskip("numba")


@pytest.fixture
def walks(monkeypatch):
    """The sizes of the defs the two whole-def walks are run on."""
    seen = {"bog": [], "nest": []}
    real_bog, real_nest = bog_types.def_mentions_bog, compiled.mentions_nest

    def bog(d):
        seen["bog"].append(size(d.body))
        return real_bog(d)

    def nest(d, number):
        seen["nest"].append(size(d.body))
        return real_nest(d, number)
    monkeypatch.setattr(bog_types, "def_mentions_bog", bog)
    monkeypatch.setattr(compiled, "mentions_nest", nest)
    return seen


@pytest.mark.parametrize("shape", ["lets", "adds", "arg_ifs", "tuple_types"])
def test_an_oversized_def_is_not_walked_before_it_falls_back(shape, walks):
    """f itself too large, or (tuple_types) f small and its callee mk too large."""
    text, arg, want = depth_curve.SHAPES[shape](3 * MAX_NODES)
    m = labrys.load(text, backend="compiled")
    assert m.f(arg) == want
    assert all(n <= MAX_NODES for n in walks["bog"] + walks["nest"]), walks
    assert "f" in m.backend.fallbacks
    why = m.backend.fallbacks["mk" if shape == "tuple_types" else "f"]
    assert why.startswith(f"a body of more than {MAX_NODES} nodes at ")


def test_a_def_under_the_bound_is_still_compiled(walks):
    text, arg, want = depth_curve.SHAPES["adds"](200)
    m = labrys.load(text, backend="compiled")
    assert m.f(arg) == want
    assert not m.backend.fallbacks and walks["bog"]  # the general path, walks included


def test_a_large_def_that_prints_first_still_orchestrates(capsys):
    body = "(add x " * (2 * MAX_NODES) + "x" + ")" * (2 * MAX_NODES)
    # the walks' pre-order visits a let's body before its right-hand side: the print comes first
    m = labrys.load(f'(def f Float (x : Float) (let (big {body}) (let (u (print "hi")) big)))', backend="compiled")
    assert m.f(0.5) == 0.5 * (2 * MAX_NODES + 1)
    assert capsys.readouterr().out == "hi"
    assert "f" not in m.backend.fallbacks  # an orchestrator, not a refusal: no note
