"""The Knossos corpus programs that fell back to python compile (``python
scripts/compiled_notes.py --corpus`` repeats the whole sweep): sumbuild of tuples, ts_delta
into a Tensor 2 at a pair index, constVec of a vector, a spread matrix-vector mul, the
matrix-vector primitives, and ragged Vec (Vec Float) arguments.  Each program's ENTRY and
its [rev f] / [fwd f] run on compiled with no note and give the python backend's values."""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest

import labrys

CORPUS = Path(__file__).parent / "corpus" / "knossos"
FIXED = ["sum_of_tuples", "tensor2_index", "vec_sum", "spread_arguments", "matvec_tensor2", "matvec_vecvec",
         "tensor2_elementwise", "vecvec_input"]


def entry(path: Path) -> tuple[str, list]:
    text = path.read_text()
    return re.search(r"^;; ENTRY: (\S+)", text, re.M).group(1), json.loads(re.search(r"^;; ARGS: (.*)$", text,
                                                                                        re.M).group(1))


def close(got, want) -> None:
    if isinstance(want, (tuple, list)) or (isinstance(want, np.ndarray) and want.dtype == object):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w)
    else:
        assert np.allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=1e-12, atol=1e-14)


def ones(x):
    if isinstance(x, (list, tuple)):
        return type(x)(ones(e) for e in x) if isinstance(x, tuple) else [ones(e) for e in x]
    return np.ones_like(x) if isinstance(x, np.ndarray) else 1.0


@pytest.mark.parametrize("name", FIXED)
def test_corpus_program_compiles_and_agrees_with_python(name, caplog):
    path = CORPUS / f"{name}.ks"
    fn, args = entry(path)
    compiled, python = labrys.load(str(path), backend="compiled"), labrys.load(str(path), backend="python")
    x = tuple(args) if len(args) > 1 else args[0]
    dx = tuple(ones(a) for a in args) if len(args) > 1 else ones(args[0])
    with caplog.at_level(logging.INFO, logger="labrys"):
        got = (getattr(compiled, fn)(*args), compiled.derive("rev", fn)(x, 1.0), compiled.derive("fwd", fn)(x, dx))
    assert not [r.getMessage() for r in caplog.records if "python backend" in r.getMessage()]
    want = (getattr(python, fn)(*args), python.derive("rev", fn)(x, 1.0), python.derive("fwd", fn)(x, dx))
    close(got, want)


SUMS = """
(def pairs (Tuple Float (Vec Float) Integer) ((v : Vec Float) (n : Integer))
  (sumbuild n (lam (i : Integer) (tuple (to_float i) (mul (to_float i) v) (mul i i)))))
(def units (Tuple (Tuple Float (Tuple)) Float) (n : Integer)
  (sumbuild n (lam (i : Integer) (tuple (tuple (to_float i) (tuple)) 2.0))))
"""


def test_sumbuild_of_tuples_with_a_vector_leaf(caplog):
    m = labrys.load(SUMS, backend="compiled")
    with caplog.at_level(logging.INFO, logger="labrys"):
        s, w, k = m.pairs(np.array([1.0, 2.0]), 4)
    assert not [r for r in caplog.records if "python backend" in r.getMessage()]
    assert s == 6.0 and list(w) == [6.0, 12.0] and k == 14      # Σ i, Σ i·v, Σ i² for i < 4
    with caplog.at_level(logging.INFO, logger="labrys"):
        assert m.units(4) == ((6.0, ()), 8.0)                   # a unit leaf (an Integer's tangent) adds nothing
    assert not [r for r in caplog.records if "python backend" in r.getMessage()]
    with pytest.raises(labrys.LabrysError):    # no vector terms: the interpreter's error
        labrys.load(SUMS, backend="python").pairs(np.array([1.0]), 0)
    with pytest.raises(labrys.LabrysError):
        m.pairs(np.array([1.0]), 0)
