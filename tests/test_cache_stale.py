"""A cache entry leaves no stale files: rebuilt after damage, or loaded after a process
was killed in the middle of a write, it holds exactly the files a clean build holds
(Note [Stale files of an entry]); and the repair is silent on stderr without --verbose,
in a process of its own."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_cache import DAMAGE, files, fresh, log, run_f, use  # noqa: F401, F811  (fixtures)

pytest.importorskip("numba")


def _interrupted_writes(root: Path) -> list[Path]:
    """What a process killed while writing leaves: our temporary names and Numba's, for every entry."""
    made = []
    for source in root.glob("labrys_*.py"):
        for name in (f"{source.name}.0123456789ab.tmp", f"{source.stem}.json.ba9876543210.tmp",
                     f"__pycache__/{source.stem}.f-3.py311.nbi.tmp.77aa",
                     f"__pycache__/{source.stem}.f-3.py311.1.nbc.tmp.88bb"):
            (root / name).write_bytes(b"half a file")
            made.append(root / name)
    return made


@pytest.mark.parametrize("damage", [None, *DAMAGE])
def test_a_rebuilt_entry_leaves_no_stale_files(damage, tmp_path, monkeypatch, fresh, log,  # noqa: F811
                                               capsys) -> None:
    clean = use(monkeypatch, tmp_path / "clean")
    run_f()
    want = sorted(files(clean))
    fresh()
    root = use(monkeypatch, tmp_path / "cache")
    run_f()
    stale = _interrupted_writes(root)
    assert stale
    if damage is not None:
        pattern, spoil = DAMAGE[damage]
        for path in sorted(root.glob(pattern)) if pattern else [root]:
            spoil(path)
    fresh()
    capsys.readouterr()
    run_f()
    assert capsys.readouterr().err == ""
    assert sorted(files(root)) == want, [p.name for p in stale if p.exists()]


QUIET = textwrap.dedent("""
    import labrys
    m = labrys.load(%r, backend="compiled")
    print(m.function("f")([1.0, 2.0]))
""")


def test_a_repair_in_a_new_process_writes_nothing_to_stderr(tmp_path) -> None:
    from test_cache import SRC, _garbage

    env = dict(os.environ, LABRYS_CACHE_DIR=str(tmp_path / "c"))
    env.pop("LABRYS_VERBOSE", None)
    run = [sys.executable, "-c", QUIET % SRC]
    first = subprocess.run(run, env=env, capture_output=True, text=True, timeout=600)
    assert (first.returncode, first.stdout, first.stderr) == (0, "6.0\n", "")
    spoiled = sorted((tmp_path / "c" / "__pycache__").glob("*.nbc"))
    assert spoiled
    for path in spoiled:
        _garbage(path)
    again = subprocess.run(run, env=env, capture_output=True, text=True, timeout=600)
    assert (again.returncode, again.stdout, again.stderr) == (0, "6.0\n", "")
