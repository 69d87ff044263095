"""BOGs crossing the compiled backend's boundary (Note [BOGs across the boundary] in
labrys.ad.bog_boundary): [suffwdpass f] returns a recursive function's BOG (a
TapedBog) or a non-recursive one's (a MachineBog) to Python, [sufrevpass f] takes
it back, later, twice, in another order, from the other backend.  Expected
values: closed forms, central finite differences, Knossos rev on the
interpreter; and no fallback (no note, nothing generated on python)."""
from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import labrys
from labrys.ad.bog_runtime import Bog, MachineBog, TapedBog
from labrys.backends.bog_entry import BogTape
from labrys.backends.python import PythonBackend
from test_examples import ROOT

EXAMPLE = ROOT / "examples" / "split.ks"  # poly x n = (x + 1)^n, by non-tail recursion
PROGRAM = EXAMPLE.read_text() + """
; mutual recursion through a non-recursive caller, whose BOG holds ev's index
(def ev Float ((x : Float) (n : Integer)) (if (eq n 0) x (mul x (od (sin x) (sub n 1)))))
(def od Float ((x : Float) (n : Integer)) (if (eq n 0) (cos x) (add x (ev x (sub n 1)))))
(def user Float ((x : Float) (y : Float)) (add (mul y (exp x)) (ev y 4)))
; tree recursion: two BOGs of tree in each record
(def tree Float ((x : Float) (n : Integer))
  (if (lte n 0) (sin x) (mul (tree x (sub n 1)) (cos (tree (mul 0.5 x) (sub n 2))))))
"""

# poly's two passes are two recursive modules, compiled anew in each process (Note [Compiled
# recursion]): the tests on poly share them; ev/od and tree are one more pair each, LABRYS_SLOW=1
SLOW = pytest.mark.skipif(not os.environ.get("LABRYS_SLOW"), reason="more recursive modules: LABRYS_SLOW=1")


def poly_grad(x: float, n: int) -> float:
    return n * (x + 1) ** (n - 1)


def fd(fn, x: float, *rest, h: float = 1e-6) -> float:
    return (fn(x + h, *rest) - fn(x - h, *rest)) / (2 * h)


@pytest.fixture(scope="module")
def mc():
    return labrys.load(PROGRAM, backend="compiled")


@pytest.fixture(scope="module")
def mi():
    return labrys.load(PROGRAM, backend="interp")


@pytest.fixture
def on_python(monkeypatch):
    """The defs the compiled backend ran on python during the test (a fallback, noted or not)."""
    seen: list[str] = []
    generate = PythonBackend.generate

    def spy(self, d):
        if self.name == "compiled":
            seen.append(str(d.name))
        return generate(self, d)
    monkeypatch.setattr(PythonBackend, "generate", spy)
    return seen


def test_poly_passes_called_separately_twice_and_in_the_other_order(mc, mi, on_python):
    forward, reverse = mc.derive("suffwdpass", "poly"), mc.derive("sufrevpass", "poly")
    t1, b1 = forward((0.5, 3))
    t2, b2 = forward((-0.7, 9))
    assert t1 == pytest.approx(1.5 ** 3) and t2 == pytest.approx(0.3 ** 9)
    assert isinstance(b1, TapedBog) and b1.tape is not b2.tape  # each call's records, owned by its BOGs
    # the second BOG first, the first one twice (with another cotangent), the second again
    g2 = reverse(1.0, b2)[0]
    g1 = reverse(1.0, b1)[0]
    g1b = reverse(2.5, b1)[0]
    assert reverse(1.0, b2)[0] == g2
    assert g1 == pytest.approx(poly_grad(0.5, 3), rel=1e-14)
    assert g1b == pytest.approx(2.5 * g1, rel=1e-14)
    assert g2 == pytest.approx(poly_grad(-0.7, 9), rel=1e-12)
    assert g2 == pytest.approx(mi.derive("rev", "poly")((-0.7, 9), 1.0)[0], rel=1e-12)
    assert g2 == pytest.approx(fd(mi.poly, -0.7, 9), rel=1e-6)
    # a reverse pass adds nothing to the records it reads
    assert len(b1.tape.lists[b1.record]) == 4 and len(b2.tape.lists[b2.record]) == 10
    assert mc.backend.fallbacks == {} and on_python == []


def test_a_bog_outlives_the_call_and_is_freed_with_its_last_box(mc):
    import gc
    import weakref

    forward, reverse = mc.derive("suffwdpass", "poly"), mc.derive("sufrevpass", "poly")
    _, bog = forward((0.25, 5))
    lists = weakref.ref(bog.tape)
    for _ in range(3):  # other calls, with their own records, in between
        forward((0.9, 50))
    assert reverse(1.0, bog)[0] == pytest.approx(poly_grad(0.25, 5), rel=1e-14)
    del bog
    gc.collect()
    assert lists() is None


def test_deep_bogs_cross_both_ways_between_the_backends(mc, on_python):
    """10^4 records: a compiled BOG reversed on python (read one level at a time) and a python
    BOG reversed compiled (copied in by an explicit walk), with no Python recursion error."""
    mp = labrys.load(PROGRAM, backend="python")
    x, n = 1e-4, 10_000
    want = poly_grad(x, n)
    _, compiled_bog = mc.derive("suffwdpass", "poly")((x, n))
    _, python_bog = mp.derive("suffwdpass", "poly")((x, n))
    assert type(python_bog) is Bog
    assert mc.derive("sufrevpass", "poly")(1.0, python_bog)[0] == pytest.approx(want, rel=1e-10)
    assert mc.derive("sufrevpass", "poly")(1.0, compiled_bog)[0] == pytest.approx(want, rel=1e-10)
    assert mp.derive("sufrevpass", "poly")(1.0, compiled_bog)[0] == pytest.approx(want, rel=1e-10)
    assert mc.backend.fallbacks == {} and on_python == []


def test_the_example_runs_compiled_with_no_note(mc, caplog, capsys, on_python):
    """examples/split.ks's main calls [suffwdpass poly] and [sufrevpass poly] itself (the same
    compiled modules as above: Numba's in-process cache)."""
    with caplog.at_level(logging.INFO, logger="labrys"):
        labrys.load(EXAMPLE.read_text(), backend="compiled").run_main()
    assert "d/dx from the BOG = (6.75, ())" in capsys.readouterr().out
    assert [r.getMessage() for r in caplog.records if "runs on the python backend" in r.getMessage()] == []
    assert on_python == ["main"]  # main prints: it orchestrates (Note [Orchestration]), not a fallback


def test_the_tape_adopts_the_first_box_and_drops_what_a_call_appended():
    """BogTape alone (plain lists stand in for typed lists): a call that has written nothing
    reads a box's lists in place; a second tape is copied in; release truncates."""
    R, S = "R", "S"  # record types are only dictionary keys here
    made = BogTape({R: [10, 11, 12], S: [20]}, {}, {})
    box = TapedBog(made, R, 2, None)
    call = BogTape({R: [], S: [], "T": []}, {R: lambda v: v}, {R: lambda v: v})
    assert call.shares(box) and call.lists[R] is made.lists[R] and call.lists[S] is made.lists[S]
    assert call.read(R, 2) == 12
    call.push(R, 13)
    call.release()
    assert made.lists[R] == [10, 11, 12]
    other = TapedBog(BogTape({R: [7]}, {}, {}), R, 0, None)
    assert not call.shares(other)  # already adopted: another tape's box is copied in instead
    fresh = BogTape({R: []}, {R: lambda v: v}, {})
    fresh.push(R, 1)
    assert not fresh.shares(box)  # it has written records of its own


@SLOW
def test_mutual_recursion_through_a_non_recursive_caller(mc, mi, on_python):
    forward, reverse = mc.derive("suffwdpass", "user"), mc.derive("sufrevpass", "user")
    (t1, b1), (t2, b2) = forward((0.8, 0.3)), forward((-0.4, 1.1))
    assert not isinstance(b1, TapedBog)  # user's BOG is a structure holding ev's index
    for (x, y), t, b in [((-0.4, 1.1), t2, b2), ((0.8, 0.3), t1, b1), ((0.8, 0.3), t1, b1)]:
        assert t == pytest.approx(mi.user(x, y), rel=1e-14)
        got = reverse(1.0, b)
        want = mi.derive("rev", "user")((x, y), 1.0)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        np.testing.assert_allclose(got, [fd(mi.user, x, y), fd(lambda v, u: mi.user(u, v), y, x)], rtol=1e-6)
    assert mc.backend.fallbacks == {} and on_python == []


@SLOW
def test_tree_recursion(mc, mi, on_python):
    _, b1 = mc.derive("suffwdpass", "tree")((0.6, 6))
    _, b2 = mc.derive("suffwdpass", "tree")((1.1, 5))
    reverse = mc.derive("sufrevpass", "tree")
    for args, b in [((1.1, 5), b2), ((0.6, 6), b1)]:
        got = reverse(1.0, b)[0]
        assert got == pytest.approx(mi.derive("rev", "tree")(args, 1.0)[0], rel=1e-12)
        assert got == pytest.approx(fd(mi.tree, *args), rel=1e-6)
    assert mc.backend.fallbacks == {} and on_python == []


def test_a_non_recursive_bog_crosses_unconverted(mc, mi, on_python):
    """possq (examples/split.ks): its BOG, a structure of arrays, comes back to Python as the
    compiled value (a MachineBog) and goes back in as is; reversed twice and on python."""
    v = np.array([-1.5, -0.5, 0.5, 1.5])
    t, bog = mc.derive("suffwdpass", "possq")(v)
    assert t == pytest.approx(2.5) and isinstance(bog, MachineBog)
    reverse = mc.derive("sufrevpass", "possq")
    want = np.array([0.0, 0.0, 1.0, 3.0])  # 2 v_i where v_i > 0
    np.testing.assert_array_equal(reverse(1.0, bog), want)
    np.testing.assert_array_equal(reverse(2.0, bog), 2 * want)
    np.testing.assert_array_equal(reverse(1.0, bog), want)
    np.testing.assert_array_equal(mi.derive("rev", "possq")(v, 1.0), want)
    mp = labrys.load(PROGRAM, backend="python")
    np.testing.assert_array_equal(mp.derive("sufrevpass", "possq")(1.0, bog), want)  # read by another backend
    np.testing.assert_array_equal(reverse(1.0, mp.derive("suffwdpass", "possq")(v)[1]), want)
    assert mc.backend.fallbacks == {} and on_python == []
