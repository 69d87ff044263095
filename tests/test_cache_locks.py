"""The compile cache's locks (Note [Cache locks]): different entries compile at the same time, one
entry is built by one process, and the shared helpers entry stays consistent when several
processes save code for it at once.  Synchronised through files and lock state, never by timing."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import labrys
from labrys.backends import cache, cache_folder, numba_runtime

pytest.importorskip("numba")
pytest.importorskip("fcntl")

INDEXING = "(def f Float (v : Vec Float) (mul 2.0 (add (index 0 v) (index 1 v))))"
DIVIDING = "(def g Integer (a : Integer) (add (div a 2) (div a 3)))"
WARM_UP = "(def one Float (x : Float) (add x 1.0))"

# a child process: compiles WARM_UP (so it has verified the helpers entry, which takes the folder
# exclusively) and waits for the other child to have done so too, then compiles `program`, whose
# cache._through (run holding the folder shared and the entry's lock) is wrapped by `hook`;
# prints the Numba (hits, misses) of `program`'s module
CHILD = textwrap.dedent("""
    import os, sys, time
    import labrys
    from labrys.backends import cache
    program, name, arg, want, me, other = sys.argv[1:7]

    def wait_for(done, what):
        for _ in range(30000):  # a guard against a hang (5 minutes), not a measurement
            if done():
                return
            time.sleep(0.01)
        sys.exit("never happened: " + what)

    assert labrys.load({warm_up!r}, backend="compiled").function("one")(1.0) == 2.0
    open(me + ".warm", "w").close()
    wait_for(lambda: os.path.exists(other + ".warm"), "the other process verified the helpers")
    through, seen = cache._through, []

    def hook(entry, *args, **kw):
        seen.append(entry.key)
        {hook}
        return through(entry, *args, **kw)

    cache._through = hook
    got = labrys.load(program, backend="compiled").function(name)(eval(arg))
    assert got == eval(want), got
    from numba.core.dispatcher import Dispatcher
    module = cache._loaded[seen[0]][0]
    fns = [v for v in vars(module).values() if isinstance(v, Dispatcher) and v.py_func.__module__ == module.__name__]
    print(sum(sum(v.stats.cache_hits.values()) for v in fns), sum(sum(v.stats.cache_misses.values()) for v in fns))
""")

MEET = """
        open(me, "w").close()  # inside, holding this entry's lock
        wait_for(lambda: os.path.exists(other), "the other process compiling at the same time")"""

# the first process in holds the entry's lock until /proc/locks shows the other one waiting for it
FIRST_WAITS = """
        try:
            os.close(os.open(os.path.join(os.path.dirname(me), "first"), os.O_CREAT | os.O_EXCL))
        except FileExistsError:  # second in: the first has built the entry and let it go
            return through(entry, *args, **kw)
        ino = os.stat(entry.lock).st_ino
        waiting = lambda: any(" -> " in line and f":{ino} " in line for line in open("/proc/locks"))
        wait_for(waiting, "the other process waiting for this entry's lock")"""


def _children(root: Path, tmp_path: Path, hook: str, runs: list[tuple[str, str, str, str]]) -> list[tuple[int, int]]:
    script = CHILD.format(warm_up=WARM_UP, hook=textwrap.indent(textwrap.dedent(hook), "    ").strip())
    env = dict(os.environ, LABRYS_CACHE_DIR=str(root))
    flags = [str(tmp_path / f"flag{i}") for i in range(len(runs))]
    procs = [subprocess.Popen([sys.executable, "-c", script, *run, flags[i], flags[1 - i]], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i, run in enumerate(runs)]
    results = [p.communicate(timeout=900) for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0 and err == "", err
    return [tuple(int(n) for n in out.split()) for out, _ in results]


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("LABRYS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_loaded", {})
    monkeypatch.setattr(cache, "_helpers", {})
    monkeypatch.setattr(cache_folder, "_reported", set())
    return tmp_path / "cache"


def _helpers_entry(root: Path) -> cache.Entry:
    return cache.Entry(root, cache.entry_key(numba_runtime.source()))


def test_two_programs_compile_at_the_same_time_and_the_helpers_stay_consistent(root, tmp_path, caplog) -> None:
    """Each process waits, inside its own compile, until the other is inside its own: with one
    lock for the whole folder neither would ever finish.  Both save code for the helpers entry
    (_checkindex, _idiv) meanwhile; its record must cover both, so a new process finds no damage."""
    loads = _children(root, tmp_path, MEET, [(INDEXING, "f", "[1.0, 2.0]", "6.0"), (DIVIDING, "g", "12", "10")])
    assert all(misses >= 1 for _, misses in loads)  # both built their entry
    helpers = _helpers_entry(root)
    saved = {p.name.split(".")[1].split("-")[0] for p in helpers.numba_files()}
    assert {"_checkindex", "_idiv"} <= saved, saved
    assert helpers.damage() == ""

    caplog.set_level(logging.INFO, logger="labrys.cache")
    assert labrys.load(INDEXING, backend="compiled").function("f")([1.0, 2.0]) == 6.0
    assert labrys.load(DIVIDING, backend="compiled").function("g")(12) == 10
    assert caplog.records == [], caplog.text  # no "deleted and rebuilt": the helpers verified clean


def test_one_program_is_built_by_one_process_the_other_loads_it(root, tmp_path) -> None:
    """The first process in keeps the entry's lock until the second is blocked on it; the second
    then finds the entry recorded and loads it: one build, not two."""
    if not os.path.exists("/proc/locks"):
        pytest.skip("no /proc/locks to see a process waiting for a lock")
    run = (INDEXING, "f", "[1.0, 2.0]", "6.0")
    loads = sorted(_children(root, tmp_path, FIRST_WAITS, [run, run]))
    (built_hits, built_misses), (loaded_hits, loaded_misses) = loads
    assert loaded_misses == 0 and loaded_hits >= 1, loads
    assert built_misses >= 1 and built_hits == 0, loads
    assert _helpers_entry(root).damage() == ""


def test_verifying_the_helpers_waits_for_compiles_and_new_compiles_wait_for_it(root) -> None:
    """Lock states, as another process would see them (Note [Cache locks]): a compile holds the marker
    shared and its entry exclusively; a verifier holds the gate and the marker exclusively."""
    import fcntl

    from labrys.backends.cache_lock import compiling, verifying

    folder = cache_folder.prepared(cache_folder.locate())
    marker, gate, lock = folder / cache_folder.MARKER, folder / "labrys_0.gate", folder / "labrys_1.lock"

    def state(path: Path) -> str:
        fd = os.open(path, os.O_RDONLY)
        try:
            for mode, name in [(fcntl.LOCK_EX, "free"), (fcntl.LOCK_SH, "shared")]:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    return name
                except BlockingIOError:
                    pass
            return "exclusive"
        finally:
            os.close(fd)  # a separate open file: its lock is not this process's other locks

    with compiling(marker, gate, lock):
        assert (state(gate), state(marker), state(lock)) == ("free", "shared", "exclusive")
    with verifying(marker, gate):
        assert (state(gate), state(marker)) == ("exclusive", "exclusive")
    assert (state(gate), state(marker), state(lock)) == ("free", "free", "free")
