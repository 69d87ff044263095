"""What makes CHAD's compiled reverse loops cost a constant times the primal (docs/chad.md,
"Compiled chadrev against rev"): sums stay Σs (Note [Sums stay sums] in labrys.ad.scalarise), a
Σ's one-hot at an enclosing loop's index comes out of it (Note [One-hots out of a Σ] in
labrys.ad.chad_lower_sums), and lowered callee translations are inlined (Note [Lowered callees
inlined] in labrys.ad.chad).  Each is checked on the generated code's structure and on values
against Knossos rev (another algorithm) and NumPy closed forms."""
from __future__ import annotations

import numpy as np
import pytest

import labrys
from labrys.ir import nodes as ir
from labrys.ir.names import DerivedName
from labrys.ir.traverse import free_vars, nodes

TEXT = """
(def sqdist Float ((a : Vec Float) (b : Vec Float))
  (sumbuild (size a) (lam (j : Integer) (let (t (sub (index j a) (index j b))) (mul t t)))))
(def pairs Float ((x : Vec (Vec Float)) (m : Vec (Vec Float)))
  (sumbuild (size x) (lam (i : Integer)
    (sumbuild (size m) (lam (k : Integer) (sqdist (index i x) (index k m)))))))
(def fixed Float ((x : Vec (Vec Float)) (m : Vec (Vec Float)))
  (sumbuild 3 (lam (i : Integer)
    (sumbuild (size m) (lam (k : Integer) (sqdist (index i x) (index k m)))))))
(def dot Float ((u : Vec Float) (v : Vec Float))
  (sum (build (size u) (lam (i : Integer) (mul (index i u) (index i v))))))
"""


def _lowered(m, fn: str) -> ir.Def:
    return m.derivations.derive("chadR", m.function(fn).sigs[0]).stage("lower")


def _calls(d: ir.Def, name: str) -> list[ir.Call]:
    return [x for x in nodes(d.body) if isinstance(x, ir.Call) and x.func == name]


def _whole_arrays(shape: ir.Expr) -> set[str]:
    """The variables a Σ's shape holds whole (not one element of: under index)."""
    if isinstance(shape, ir.Tuple):
        return set().union(*(_whole_arrays(e) for e in shape.elems))
    if isinstance(shape, ir.Call) and shape.func == "index":
        return set()
    return free_vars(shape)


@pytest.fixture(scope="module")
def interp():
    return labrys.load(TEXT, backend="interp")


def test_a_sum_is_a_sigma_not_a_loop_with_states(interp):
    """dot's reverse pass: a Σ over the elements, no fold/rfold keeping partial sums."""
    d = _lowered(interp, "dot")
    assert not _calls(d, "rfold") and not _calls(d, "ifold") and not _calls(d, "fold")
    u, v = np.array([1.0, -2.0, 3.0]), np.array([0.5, 4.0, -1.0])
    du, dv = interp.derive("chadrev", "dot")((u, v), 2.0)
    np.testing.assert_allclose(du, 2.0 * v) and np.testing.assert_allclose(dv, 2.0 * u)


def test_the_row_one_hot_comes_out_of_the_inner_sum(interp):
    """pairs: the Σ over k sums rows shaped like (index i x), not n × d copies of x."""
    d = _lowered(interp, "pairs")
    nested = [y for s in _calls(d, "ts_sumbuild") for y in nodes(s.arg.elems[1].body)
              if isinstance(y, ir.Call) and y.func == "ts_sumbuild"]
    assert nested and all("x" not in _whole_arrays(y.arg.elems[2]) for y in nested)
    assert any(isinstance(y.arg.elems[2], ir.Tuple) and isinstance(y.arg.elems[2].elems[0], ir.Call)
               and y.arg.elems[2].elems[0].func == "index" for y in nested)   # shaped like (index i x)
    rng = np.random.default_rng(1)
    x, m = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    diff = x[:, None, :] - m[None, :, :]
    want_x, want_m = 2 * diff.sum(axis=1), -2 * diff.sum(axis=0)   # NumPy, by hand
    for backend in ("interp", "compiled"):
        mod = interp if backend == "interp" else labrys.load(TEXT, backend="compiled")
        dx, dm = mod.derive("chadrev", "pairs")((list(x), list(m)), 1.0)
        np.testing.assert_allclose(np.array(dx), want_x, rtol=1e-12)
        np.testing.assert_allclose(np.array(dm), want_m, rtol=1e-12)
    rx, rm = interp.derive("rev", "pairs")((list(x), list(m)), 1.0)   # Knossos rev agrees
    np.testing.assert_allclose(np.array(rx), want_x) and np.testing.assert_allclose(np.array(rm), want_m)


def test_a_one_hot_at_an_index_not_known_to_be_in_range_stays(interp):
    """fixed: i runs to 3, not to (size x), so row i of x is not read when m is empty; the one-hot
    stays in the Σ (an empty Σ never evaluates it) and the gradient of the empty sum is zero."""
    x, empty = [np.array([1.0, 2.0])], []
    assert interp.fixed(x, empty) == 0.0
    dx, dm = interp.derive("chadrev", "fixed")((x, empty), 1.0)
    np.testing.assert_allclose(np.array(dx), [[0.0, 0.0]])
    assert list(dm) == []


def test_lowered_callees_are_inlined():
    """ADBench GMM's [chadR gmm_objective] calls no other translation once lowered: no closure
    record per call of matvec or sqnorm (the gradient itself: tests/test_chad_adbench.py)."""
    from labrys.adbench import program
    d = _lowered(program("gmm", "interp"), "gmm_objective")
    called = {x.func.base for x in nodes(d.body) if isinstance(x, ir.Call) and isinstance(x.func, DerivedName)}
    assert not called & {"matvec", "sqnorm", "logsumexp"}
    assert [x for x in _calls(d, "ts_delta") if isinstance(x.arg.elems[0], ir.Var) and x.arg.elems[0].name == "x"]
