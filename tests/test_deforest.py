"""Deforestation of read-once small vectors (labrys.opt.deforest, Note [Deforesting
small vectors]) and index checks hoisted out of loops (labrys.backends.numba_bounds,
Note [Hoisted index checks]) on the compiled backend.  Values are checked against
NumPy's closed forms and the interpreter; the removed work against the generated
source; errors against the interpreter's message."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys.adbench import read_gmm
from labrys.backends.numba_bounds import hoist_index_checks

SRC = """
(def sqnorm Float (v : Vec Float)
  (sum (build (size v) (lam (i : Integer) (let (vi (index i v)) (mul vi vi))))))
(def matvec (Vec Float) ((m : Vec (Vec Float)) (v : Vec Float))
  (build (size m) (lam (r : Integer)
    (let (row (index r m))
      (sumbuild (size v) (lam (c : Integer) (mul (index c row) (index c v))))))))
(def energy Float ((m : Vec (Vec Float)) (v : Vec Float))
  (sqnorm (matvec m v)))
(def twice Float ((m : Vec (Vec Float)) (v : Vec Float))
  (let (y (matvec m v))
    (add (sqnorm y) (sumbuild (size y) (lam (i : Integer) (mul 3.0 (index i y)))))))
(def first Float ((m : Vec (Vec Float)) (v : Vec Float) (n : Integer))
  (let (y (matvec m v))
    (sumbuild n (lam (i : Integer) (index i y)))))
(def prefix Float ((v : Vec Float) (n : Integer))
  (sumbuild n (lam (i : Integer) (mul (index i v) (index i v)))))
"""
M = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0], [4.0, 0.0, 1.5], [-2.0, 1.0, 1.0]])
V = np.array([0.3, -1.2, 2.0])
ROOT = Path(__file__).resolve().parent.parent


def _allocations_in_loops(source: str, depth: int = 1) -> int:
    """Lines of the generated source that make an array inside ``depth`` or more nested for loops
    (not counting a scratch vector's reallocation, Note [Scratch vectors], which happens only when
    its size changes)."""
    loops: list[int] = []
    count = 0
    for line in source.splitlines():
        indent = len(line) - len(line.lstrip())
        while loops and indent <= loops[-1]:
            loops.pop()
        if line.lstrip().startswith("for "):
            loops.append(indent)
        elif len(loops) >= depth and re.search(r"_np\.(zeros|empty)\(", line) \
                and not re.match(r"\s*_scr\d+ = ", line):  # a scratch vector regrown only when its size changes
            count += 1
    return count


def test_a_vector_read_once_per_element_is_not_made():
    mc = labrys.load(SRC, backend="compiled")
    assert mc.energy(M, V) == pytest.approx(np.sum((M @ V) ** 2), rel=1e-14)
    source = mc.backend.sources["energy"]
    assert "_np.empty" not in source and "_np.zeros" not in source   # matvec's result is never stored
    assert "_checkindex" not in source                               # every read is a loop's own index


def test_its_gradient_agrees_with_the_closed_form_and_makes_no_vector_in_a_loop():
    mc = labrys.load(SRC, backend="compiled")
    dm, dv = mc.derive("rev", "energy")((M, V), 1.0)
    y = M @ V
    np.testing.assert_allclose(dm, 2 * np.outer(y, V), rtol=1e-13)
    np.testing.assert_allclose(dv, 2 * M.T @ y, rtol=1e-13)
    assert _allocations_in_loops(mc.backend.sources["[rev energy]"]) == 0


@pytest.mark.parametrize("fn, args, want", [
    ("twice", (M, V), np.sum((M @ V) ** 2) + 3 * np.sum(M @ V)),
    ("first", (M, V, 2), np.sum((M @ V)[:2])),
])
def test_a_vector_read_twice_or_by_another_loop_is_kept(fn, args, want):
    mc, mi = labrys.load(SRC, backend="compiled"), labrys.load(SRC, backend="interp")
    assert mc[fn](*args) == pytest.approx(want, rel=1e-14) == mi[fn](*args)
    assert "_np.empty(" in mc.backend.sources[fn]   # y is made once, then read


def test_a_read_past_the_end_is_still_the_interpreters_error():
    mc, mi = labrys.load(SRC, backend="compiled"), labrys.load(SRC, backend="interp")
    assert mc.prefix(V, 3) == pytest.approx(np.sum(V * V), rel=1e-15)
    assert "_checkindex" not in mc.backend.sources["prefix"]   # checked once, before the loop
    with pytest.raises(labrys.LabrysError) as compiled_error:
        mc.prefix(V, 4)
    with pytest.raises(labrys.LabrysError) as interp_error:
        mi.prefix(V, 4)
    assert str(compiled_error.value) == str(interp_error.value)
    assert "index" in str(compiled_error.value)
    with pytest.raises(labrys.LabrysError, match="index"):
        mc.first(M, V, 5)


def test_hoisting_leaves_conditional_reads_and_reassigned_arrays_checked():
    lines = [(t, None) for t in [
        "    for _i1 in range(n):",
        "        a = v[_checkindex(_i1, v.shape[0])]",
        "        if a > 0:",
        "            b = w[_checkindex(_i1, w.shape[0])]",
        "        u = _np.zeros(3)",
        "        c = u[_checkindex(_i1, u.shape[0])]",
        "        for _i2 in range(m):",
        "            d = x[_checkindex(_i1, x.shape[0])]",
    ]]
    out = [t for t, _ in hoist_index_checks(lines)]
    assert out[:3] == ["    if n > v.shape[0]:", '        raise IndexError("index out of range")',
                       "    for _i1 in range(n):"]
    assert out[3] == "        a = v[_i1]"
    assert "_checkindex(_i1, w" in out[5]    # under an if: might not run
    assert "_checkindex(_i1, u" in out[7]    # u is made in the loop
    assert "_checkindex(_i1, x" in out[9]    # in a nested loop: might not run
    assert len(out) == len(lines) + 2


def test_gmm_gradient_on_compiled_is_the_interpreters():
    g = read_gmm(ROOT / "data" / "adbench" / "gmm" / "1k" / "gmm_d2_K5.txt")
    args = (np.asarray(g.x[:40]), g.alphas, np.asarray(g.means), np.asarray(g.icf), (g.gamma, g.m))
    program = ROOT / "src" / "labrys" / "adbench" / "gmm.ks"
    mc, mi = labrys.load(program, backend="compiled"), labrys.load(program, backend="interp")
    got = mc.derive("rev", "gmm_objective")(args, 1.0)
    want = mi.derive("rev", "gmm_objective")(args, 1.0)
    for a, b in zip(got[:4], want[:4]):
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-12, atol=1e-12)
    source = mc.backend.sources["[rev gmm_objective]"]
    # Q_k z is neither stored in the forward sweep nor in the reverse sweep, nor is its cotangent:
    # in two nested loops only Q_k's rows (make_Q, inlined: a row and the matrix) and z's cotangent
    # are made (before deforestation, also Q_k z twice and its cotangent: 6); with the
    # primitives on tuple variables compiled (the tape branch) the row is not copied: 2.
    assert _allocations_in_loops(source, depth=2) <= 3
