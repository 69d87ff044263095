"""Loop code for derivatives on the compiled backend: fused sum∘build, row
cotangents accumulated in place, an if's branches accumulated in the branch
(docs/backends.md, "Loop code for derivatives").  Each is checked for its
value (against the interpreter) and for the allocation it removes (in the
generated source: no array made inside the loop)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import labrys
from labrys.ir import nodes as ir
from labrys.opt.fusion import fuse_loops

SRC = """
(def sqnorm Float (v : Vec Float)
  (sum (build (size v) (lam (i : Integer) (let (vi (index i v)) (mul vi vi))))))
(def matvec (Vec Float) ((m : Vec (Vec Float)) (v : Vec Float))
  (build (size m) (lam (r : Integer)
    (let (row (index r m))
      (sumbuild (size v) (lam (c : Integer) (mul (index c row) (index c v))))))))
(def lower Float ((d : Integer) (p : Vec Float))
  (sumbuild d (lam (r : Integer) (sumbuild d (lam (c : Integer)
    (if (eq r c) (exp (index r p)) (if (gt r c) (mul 2.0 (index (add r c) p)) 0.0)))))))
"""


def _loops_allocate(source: str) -> bool:
    """True when an array is made inside a for loop of the generated source."""
    depth_of_loop = None
    for line in source.splitlines():
        indent = len(line) - len(line.lstrip())
        if depth_of_loop is not None and indent <= depth_of_loop:
            depth_of_loop = None
        if line.lstrip().startswith("for ") and depth_of_loop is None:
            depth_of_loop = indent
        elif depth_of_loop is not None and re.search(r"_np\.(zeros|empty)\(", line):
            return True
    return False


def test_sum_of_build_is_one_loop():
    m = labrys.load(SRC, backend="interp")
    d = m.checked.typed(next(x for x in m.program.decls if isinstance(x, ir.Def) and x.name == "sqnorm"))
    fused = fuse_loops(d)
    loop = fused.body.body.body  # (let (size n) (assert (lte size MAX) (sumbuild size f)))
    assert isinstance(fused.body.body, ir.Assert) and loop.func == "sumbuild" and loop.type == d.body.type
    mc = labrys.load(SRC, backend="compiled")
    assert mc.sqnorm(np.arange(4.0)) == 14.0
    assert "_np.empty" not in mc.backend.sources["sqnorm"]


def test_a_fused_loop_keeps_the_builds_size_check():
    """sum (build 2^62 f) allocates nothing once fused, but it is still the interpreter's error."""
    m = labrys.load("(def big Float (n : Integer) (sum (build n (lam (i : Integer) 1.0))))", backend="compiled")
    assert m.big(10) == 10.0
    with pytest.raises(labrys.LabrysError, match="too large to allocate"):
        m.big(2 ** 62)


@pytest.mark.parametrize("fn, args, ct", [
    ("matvec", (np.arange(12.0).reshape(3, 4) / 7, np.linspace(-1, 1, 4)), np.array([1.0, -2.0, 0.5])),
    ("lower", (4, np.linspace(0.1, 0.9, 8)), 1.0),
])
def test_reverse_loops_accumulate_in_place_and_agree_with_the_interpreter(fn, args, ct):
    mc, mi = labrys.load(SRC, backend="compiled"), labrys.load(SRC, backend="interp")
    got = mc.derive("rev", fn)(args, ct)
    want = mi.derive("rev", fn)(args, ct)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w, dtype=float), rtol=1e-13)
    assert not _loops_allocate(mc.backend.sources[f"[rev {fn}]"])
