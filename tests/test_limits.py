"""Resource limits are the user's errors (Note [Recursion limit]): a recursion
deeper than the limit stops with ``file:line:col: error: recursion deeper than
N in f`` on every backend, for original and derived functions, and the limit
is set by ``--max-depth``, ``LABRYS_MAX_DEPTH`` or ``labrys.set_max_depth``."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import labrys
from labrys.backends import BACKENDS
from labrys.context import Limits

_SCRIPT = Path(sys.executable).with_name("labrys")
LABRYS = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "labrys.cli.main"]

# f is on line 2 of this text, at column 1
INFINITE = """; counts up for ever
(def f Integer (n : Integer) (add 1 (f (add n 1))))
(def main Integer () (f 0))
"""
FLOATS = "(def g Float (x : Float) (mul x (g (add x 1.0))))"
DEPTH = "(def rec Integer (n : Integer) (if (eq n 0) 0 (add 1 (rec (sub n 1)))))"


@pytest.fixture
def limit():
    saved = Limits.max_depth
    yield labrys.set_max_depth
    Limits.max_depth = saved


@pytest.mark.parametrize("backend", BACKENDS)
def test_infinite_recursion_is_a_positioned_error(limit, backend):
    limit(3000)
    m = labrys.load(INFINITE, backend=backend)
    with pytest.raises(labrys.LabrysError) as info:
        m.f(0)
    err = info.value
    assert err.message == "recursion deeper than 3000 in f"
    assert (err.span.line, err.span.col) == (2, 1)
    # the depth is back to zero: the module still runs
    assert labrys.load(DEPTH, backend=backend).rec(100) == 100


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["rev", "fwd", "deltarev", "dualfwd"])
def test_infinite_recursion_in_derivatives(limit, backend, method):
    limit(2000)
    m = labrys.load(FLOATS, backend=backend)
    with pytest.raises(labrys.LabrysError) as info:
        labrys.grad(m.g, method=method)(1.0)
    assert "recursion deeper than 2000 in " in info.value.message
    assert info.value.span is not None


def test_limit_is_exact(limit):
    limit(50)
    m = labrys.load(DEPTH)
    assert m.rec(49) == 49          # 50 activations: rec 49 .. rec 0
    with pytest.raises(labrys.LabrysError, match="recursion deeper than 50 in rec"):
        m.rec(50)


def test_default_allows_100k():
    assert Limits.max_depth >= 100_001
    assert labrys.load(DEPTH, backend="python").rec(100_000) == 100_000


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_limit(bad):
    with pytest.raises(labrys.LabrysError, match="positive integer"):
        labrys.set_max_depth(bad)


def run_cli(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    (tmp_path / "inf.ks").write_text(INFINITE, encoding="utf-8")
    return subprocess.run([*LABRYS, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_cli_max_depth(tmp_path):
    proc = run_cli(tmp_path, "--max-depth", "500", "run", "inf.ks")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("inf.ks:2:1: error: recursion deeper than 500 in f\n"), proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_cli_env_max_depth(tmp_path):
    proc = run_cli(tmp_path, "run", "inf.ks", "--backend", "python", env={"LABRYS_MAX_DEPTH": "700"})
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("inf.ks:2:1: error: recursion deeper than 700 in f\n"), proc.stderr


def test_cli_default_limit(tmp_path):
    """The default limit: the user's error, not Python's RecursionError."""
    proc = run_cli(tmp_path, "run", "inf.ks", "--backend", "python", env={"LABRYS_MAX_DEPTH": ""})
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("inf.ks:2:1: error: recursion deeper than 200000 in f\n"), proc.stderr
