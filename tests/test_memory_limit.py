"""The memory limit (Note [Memory limit] in labrys.memory, docs/reliability.md):
--max-memory, $LABRYS_MAX_MEMORY, labrys.set_max_memory; a run past it stops
with a positioned error naming the function, on every backend."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import labrys
from labrys.memory import parse_size, resident_bytes

PROGRAM = """(def grow (Vec Float) (n : Integer)
  (build n (lam (i : Integer) (to_float i))))
(def rows (Vec (Vec Float)) (n : Integer)
  (build n (lam (k : Integer) (constVec 20000 1.0))))
(def total Float (n : Integer) (sum (grow n)))
"""


@pytest.fixture
def limit():
    yield labrys.set_max_memory
    labrys.set_max_memory(None)


def test_sizes_parse():
    assert parse_size("500M") == 500 << 20 and parse_size("2G") == 2 << 30 and parse_size("1.5k") == 1536
    assert parse_size(1024) == 1024 and parse_size("3 GiB") == 3 << 30
    for bad in ("lots", "-1M", "0", ""):
        with pytest.raises(labrys.LabrysError, match="memory limit must be"):
            parse_size(bad)


@pytest.mark.parametrize("backend", ["interp", "python", "compiled"])
def test_one_allocation_past_the_limit_is_refused_before_it_is_made(limit, backend):
    limit("300M")
    m = labrys.load(PROGRAM, backend=backend)
    with pytest.raises(labrys.LabrysError) as err:
        m.grow(100_000_000)  # 763 MB of Floats (total's sum of it is one loop on compiled: no allocation)
    text = str(err.value)
    assert "<string>:1:1: error: memory limit of 300 MB exceeded in grow: (build 100000000 ...) needs 763 MB" \
        in text, text
    assert "--max-memory" in text
    limit(None)
    assert m.total(1000) == sum(range(1000))


@pytest.mark.parametrize("backend", ["interp", "python", "compiled"])
def test_many_small_allocations_are_stopped_near_the_limit(limit, backend):
    """2 000 rows of 160 KB (320 MB) against a limit 64 MB above what the process holds."""
    m = labrys.load(PROGRAM, backend=backend)
    assert len(m.rows(2)) == 2
    start = resident_bytes()
    limit(start + (64 << 20))
    with pytest.raises(labrys.LabrysError) as err:
        m.rows(2000)
    assert "memory limit of" in err.value.message and "exceeded in rows" in err.value.message
    assert err.value.span is not None
    assert resident_bytes() < start + (200 << 20)


def test_no_limit_by_default_and_the_api_checks_its_argument(limit):
    assert labrys.context.Limits.max_memory is None or os.environ.get("LABRYS_MAX_MEMORY")
    with pytest.raises(labrys.LabrysError):
        limit("a lot")


def run_cli(tmp_path, *args, env=None):
    path = tmp_path / "mem.ks"
    path.write_text(PROGRAM)
    return subprocess.run([sys.executable, "-m", "labrys.cli.main", *args[:-1], "run", str(path), "total", args[-1],
                           "--backend", "python"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_cli_flag_and_environment_variable(tmp_path):
    proc = run_cli(tmp_path, "--max-memory", "200M", "50000000")
    assert proc.returncode == 1 and f"{tmp_path / 'mem.ks'}:1:1: error: memory limit of 200 MB exceeded in grow" \
        in proc.stderr, proc.stderr
    proc = run_cli(tmp_path, "50000000", env={"LABRYS_MAX_MEMORY": "200M"})
    assert proc.returncode == 1 and "memory limit of 200 MB exceeded in grow" in proc.stderr, proc.stderr
    ok = run_cli(tmp_path, "--max-memory", "2G", "1000")
    assert ok.returncode == 0 and ok.stdout.strip() == "499500.0", ok.stderr
    bad = run_cli(tmp_path, "--max-memory", "lots", "10")
    assert bad.returncode == 1 and "memory limit must be a size" in bad.stderr and "Traceback" not in bad.stderr
