"""The compiled backend's disk cache (Note [Compile cache], Note [Cache ownership]):
clear deletes only what labrys wrote; damaged entries are rebuilt with the
code still compiled; an unwritable folder means compiling in memory."""
from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import labrys
from labrys.backends import cache, cache_folder
from labrys.cli.main import main

pytest.importorskip("numba")

SRC = """
(def twice Float (x : Float) (mul 2.0 x))
(def f Float (v : Vec Float) (sumbuild (size v) (lam (i : Integer) (twice (index i v)))))
"""
OTHER = """
(def thrice Float (x : Float) (mul 3.0 x))
(def g Float (v : Vec Float) (sumbuild (size v) (lam (i : Integer) (thrice (index i v)))))
"""


@pytest.fixture
def fresh(monkeypatch):
    """A new process, as far as the cache can tell: nothing compiled in memory, nothing noted."""
    monkeypatch.setattr(cache, "_loaded", {})
    monkeypatch.setattr(cache, "_helpers", {})
    monkeypatch.setattr(cache_folder, "_reported", set())

    def again() -> None:
        cache._loaded.clear()
        cache._helpers.clear()
    return again


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.INFO, logger="labrys.cache")
    return caplog


def use(monkeypatch, folder: Path) -> Path:
    monkeypatch.setenv("LABRYS_CACHE_DIR", str(folder))
    return folder


def run_f(src: str = SRC, name: str = "f") -> labrys.Module:
    """Load and call ``name`` on [1, 2]: 2·1 + 2·2 = 6 (3·1 + 3·2 = 9 for OTHER), compiled."""
    m = labrys.load(src, backend="compiled")
    assert m.function(name)([1.0, 2.0]) == (6.0 if src == SRC else 9.0)
    assert not m.backend.fallbacks and name in m.backend.sources
    return m


def numba_loads() -> tuple[int, int]:
    """(cache hits, cache misses) of the generated functions compiled in this process."""
    from numba.core.dispatcher import Dispatcher

    hits = misses = 0
    for module, _ in cache._loaded.values():
        for v in vars(module).values():
            if isinstance(v, Dispatcher) and v.py_func.__module__ == module.__name__:
                hits += sum(v.stats.cache_hits.values())
                misses += sum(v.stats.cache_misses.values())
    return hits, misses


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# --- clear deletes only what labrys wrote ----------------------------------------------

def test_clear_keeps_user_files_inside_and_beside(tmp_path, monkeypatch, fresh, capsys) -> None:
    root = use(monkeypatch, tmp_path / "cache")
    (tmp_path / "thesis.tex").write_text("beside")
    run_f()
    assert list(root.glob("labrys_*.py")) and (root / "__pycache__").is_dir()
    (root / "notes.txt").write_text("inside")
    (root / "mine").mkdir()
    (root / "mine" / "labrys_0123456789abcdef0123456789abcdef.py").write_text("in a folder of mine")
    (root / "__pycache__" / "mine.pyc").write_bytes(b"mine")

    rc, out, err = cli(capsys, "cache", "clear")
    assert rc == 0 and err == ""
    assert "2 compiled modules," in out and "3 other entries there, not labrys's, kept" in out
    assert (tmp_path / "thesis.tex").read_text() == "beside"
    left = files(root)
    assert left.pop("labrys-cache.tag")  # the folder is still labrys's, with the user's files in it
    assert left == {"notes.txt": b"inside", "mine/labrys_0123456789abcdef0123456789abcdef.py": b"in a folder of mine",
                    "__pycache__/mine.pyc": b"mine"}

    for user_file in ("notes.txt", "mine", "__pycache__"):
        shutil.rmtree(root / user_file) if (root / user_file).is_dir() else (root / user_file).unlink()
    assert cli(capsys, "cache", "clear")[0] == 0
    assert not root.exists()  # labrys created it and it is now empty
    assert [p.name for p in tmp_path.iterdir()] == ["thesis.tex"]


def test_folder_with_other_files_gets_a_labrys_cache_subfolder(tmp_path, monkeypatch, fresh, capsys) -> None:
    project = use(monkeypatch, tmp_path / "project")
    project.mkdir()
    (project / "thesis.tex").write_text("\\chapter{One}")
    (project / "my_model.ks").write_text("(def f Float (x : Float) x)")
    before = files(project)

    rc, out, _ = cli(capsys, "cache", "info")
    assert rc == 0 and out.startswith(f"{project / 'labrys-cache'}: 0 compiled modules")
    run_f()
    assert list((project / "labrys-cache").glob("labrys_*.py"))
    assert cli(capsys, "cache", "info")[1].startswith(f"{project / 'labrys-cache'}: 2 compiled modules,")

    assert cli(capsys, "cache", "clear")[0] == 0
    assert files(project) == before and sorted(p.name for p in project.iterdir()) == ["my_model.ks", "thesis.tex"]


def test_a_subfolder_with_other_files_is_not_used_either(tmp_path, monkeypatch, fresh, log, capsys) -> None:
    project = use(monkeypatch, tmp_path / "project")
    (project / "labrys-cache").mkdir(parents=True)
    (project / "todo.txt").write_text("a")
    (project / "labrys-cache" / "mine.txt").write_text("b")
    before = files(project)
    run_f()
    run_f(OTHER, "g")
    assert files(project) == before
    assert [r.getMessage() for r in log.records] == [
        (f"the compile cache {project / 'labrys-cache'} cannot be written "
         f"({project / 'labrys-cache'} holds files labrys did not write): compiling without it")]
    rc, out, err = cli(capsys, "cache", "clear")
    assert rc == 0 and "not usable" in out and err == ""
    assert files(project) == before


def test_an_empty_folder_the_user_made_is_emptied_not_removed(tmp_path, monkeypatch, fresh, capsys) -> None:
    root = use(monkeypatch, tmp_path / "empty")
    root.mkdir()
    run_f()
    assert (root / "labrys-cache.tag").exists()
    assert cli(capsys, "cache", "clear")[0] == 0
    assert root.is_dir() and list(root.iterdir()) == []


def test_a_folder_of_labrys_files_without_marker_is_labryss(tmp_path, monkeypatch, fresh, capsys) -> None:
    """A cache written before the marker existed (or orphaned by a racing clear) is still labrys's."""
    root = use(monkeypatch, tmp_path / "cache")
    run_f()
    (root / "labrys-cache.tag").unlink()
    assert cli(capsys, "cache", "info")[1].startswith(f"{root}: 2 compiled modules,")
    assert cli(capsys, "cache", "clear")[0] == 0
    assert root.is_dir() and list(root.iterdir()) == []


# --- damaged entries are rebuilt, and the code still runs compiled ---------------------

def _garbage(path: Path) -> None:
    path.write_bytes(b"\x80\x04garbage\x00" * 3)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _other_module(root: Path) -> None:
    """Every source file replaced by the generated source of another program (3x, not 2x)."""
    with tempfile.TemporaryDirectory() as other:
        os.environ["LABRYS_CACHE_DIR"] = other
        try:
            run_f(OTHER, "g")
        finally:
            os.environ["LABRYS_CACHE_DIR"] = str(root)
        text = max((p.read_text() for p in Path(other).glob("labrys_*.py")), key=len)
    for p in root.glob("labrys_*.py"):
        p.write_text(text)


DAMAGE = {
    "source garbage": ("labrys_*.py", _garbage),
    "source truncated": ("labrys_*.py", _truncate),
    "source of another program": (None, _other_module),
    "index garbage": ("__pycache__/*.nbi", _garbage),
    "index truncated": ("__pycache__/*.nbi", _truncate),
    "index empty": ("__pycache__/*.nbi", lambda p: p.write_bytes(b"")),
    "object code garbage": ("__pycache__/*.nbc", _garbage),
    "object code truncated": ("__pycache__/*.nbc", _truncate),
    "object code one byte flipped": ("__pycache__/*.nbc", _flip),
    "object code deleted": ("__pycache__/*.nbc", Path.unlink),
    "checksum record garbage": ("labrys_*.json", _garbage),
    "checksum record deleted": ("labrys_*.json", Path.unlink),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_entry_is_rebuilt_and_still_compiled(damage, tmp_path, monkeypatch, fresh, log, capsys) -> None:
    root = use(monkeypatch, tmp_path / "cache")
    run_f()
    pattern, spoil = DAMAGE[damage]
    targets = sorted(root.glob(pattern)) if pattern else [root]
    assert targets
    for path in targets:
        spoil(path)
    fresh()
    log.clear()
    capsys.readouterr()

    run_f()  # the damage is found and repaired; f is compiled (run_f checks)
    assert capsys.readouterr().err == ""
    notes = [r.getMessage() for r in log.records]
    assert notes and all("deleted and rebuilt" in n for n in notes), notes
    assert all(r.levelno == logging.INFO for r in log.records)

    fresh()
    log.clear()
    run_f()  # and the rebuilt entry is loaded from disk, untouched
    assert log.records == []
    hits, misses = numba_loads()
    assert hits >= 1 and misses == 0


def test_an_interrupted_build_is_finished_quietly(tmp_path, monkeypatch, fresh, log) -> None:
    """Killed after writing the source, before Numba saved: nothing is damaged, nothing is noted."""
    root = use(monkeypatch, tmp_path / "cache")
    run_f()
    for path in [*root.glob("labrys_*.json"), *root.glob("__pycache__/*")]:
        path.unlink()
    fresh()
    run_f()
    assert log.records == [] and numba_loads()[0] == 0
    fresh()
    run_f()
    assert log.records == [] and numba_loads()[1] == 0


def test_cache_files_follow_the_umask(tmp_path, monkeypatch, fresh) -> None:
    root = use(monkeypatch, tmp_path / "cache")
    umask = os.umask(0o022)
    try:
        run_f()
    finally:
        os.umask(umask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in root.rglob("*") if p.is_file()}
    assert modes and set(modes.values()) == {0o644}, modes


def test_damage_the_checksums_miss_is_rebuilt_when_numba_fails(tmp_path, monkeypatch, fresh, log) -> None:
    """A damaged index whose checksum record was rewritten to match: Numba's load fails, the entry is rebuilt."""
    root = use(monkeypatch, tmp_path / "cache")
    run_f()
    for path in root.glob("__pycache__/*.nbi"):
        _garbage(path)
    for source in root.glob("labrys_*.py"):
        cache.Entry(root, source.stem.removeprefix("labrys_")).save_record()
    fresh()
    run_f()
    assert any("could not be loaded" in r.getMessage() for r in log.records)
    fresh()
    log.clear()
    run_f()
    assert log.records == [] and numba_loads()[1] == 0


def test_an_entry_of_another_version_is_never_loaded(tmp_path, monkeypatch, fresh, log) -> None:
    root = use(monkeypatch, tmp_path / "cache")
    current = cache.versions
    monkeypatch.setattr(cache, "versions", lambda: "labrys 0.0.1 helpers 0 numba 0.1 python 3.0")
    run_f()
    old = files(root)
    monkeypatch.setattr(cache, "versions", current)
    fresh()
    run_f()
    hits, misses = numba_loads()
    assert hits == 0 and misses >= 1  # compiled anew, not loaded from the other version's entries
    assert len(list(root.glob("labrys_*.py"))) == 2 * len([k for k in old if k.endswith(".py")])
    assert {k: v for k, v in files(root).items() if k in old} == old  # the other version's entries untouched

    # a record naming another version does not vouch for the files
    for record in root.glob("labrys_*.json"):
        record.write_text(record.read_text().replace(cache.versions(), "labrys 0.0.1"))
    fresh()
    log.clear()
    run_f()
    assert any("checksum record is damaged" in r.getMessage() for r in log.records)


# --- read-only, unwritable or missing folders -----------------------------------------

def chmod_binds(folder: Path) -> bool:
    probe = folder / "probe"
    probe.mkdir(mode=0o555)
    try:
        (probe / "x").touch()
        return False
    except PermissionError:
        return True
    finally:
        probe.chmod(0o755)
        shutil.rmtree(probe)


def as_user_bound_by_permissions() -> None:
    """Root ignores permission bits: run the chmod case again in a pytest whose root has lost
    the capabilities that override them (setpriv), so it is tested, not skipped."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("this user ignores permission bits (root) and setpriv is not installed; the "
                    "'read-only mount' case simulates it")
    test = f"{__file__}::test_read_only_cache_compiles_in_memory[chmod]"
    done = subprocess.run([setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", sys.executable, "-m",
                           "pytest", "-p", "no:cacheprovider", test], capture_output=True, text=True,
                          cwd=Path(__file__).parents[1])
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def make_read_only(monkeypatch, root: Path, how: str) -> None:
    """chmod where it binds; as root (where it does not), every write under root fails with
    EROFS, as on a read-only mount: the functions labrys writes and deletes through are wrapped."""
    if how == "chmod":
        for folder in (root, root / "__pycache__"):
            folder.chmod(0o555)
        return

    def inside(path) -> bool:
        return path is not None and Path(os.path.abspath(path)).is_relative_to(root)

    def refuse(path) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def guard(fn, key):
        def guarded(*args, **kwargs):
            path = kwargs.get("dir") if key == "dir" else (args[0] if args else None)
            if inside(path):
                refuse(path)
            return fn(*args, **kwargs)
        return guarded

    for name in ("open", "mkdir", "unlink", "rmdir", "replace", "rename"):
        monkeypatch.setattr(os, name, guard(getattr(os, name), 0))
    for name in ("mkstemp", "TemporaryFile", "NamedTemporaryFile"):
        monkeypatch.setattr(tempfile, name, guard(getattr(tempfile, name), "dir"))


@pytest.fixture
def restore_permissions(tmp_path):
    yield
    for folder in [tmp_path, *tmp_path.rglob("*")]:
        if folder.is_dir():
            folder.chmod(0o755)


@pytest.mark.parametrize("how", ["chmod", "read-only mount"])
def test_read_only_cache_compiles_in_memory(how, tmp_path, monkeypatch, fresh, log, capsys,
                                            restore_permissions) -> None:
    if how == "chmod" and not chmod_binds(tmp_path):
        return as_user_bound_by_permissions()
    root = use(monkeypatch, tmp_path / "cache")
    run_f()
    before = files(root)
    make_read_only(monkeypatch, root, how)
    fresh()
    log.clear()
    run_f()
    run_f(OTHER, "g")  # two modules, one note
    assert capsys.readouterr().err == ""
    assert files(root) == before
    assert len(log.records) == 1 and "cannot be written" in log.records[0].getMessage()

    rc, out, err = cli(capsys, "cache", "clear")
    assert rc == 1 and out == ""
    assert err.startswith(f"labrys: error: cannot clear the compile cache {root}: ")
    assert "internal error" not in err
    assert files(root) == before


def test_cache_under_a_regular_file_compiles_in_memory(tmp_path, monkeypatch, fresh, log, capsys) -> None:
    (tmp_path / "file").write_text("not a folder")
    use(monkeypatch, tmp_path / "file" / "cache")
    run_f()
    run_f(OTHER, "g")
    assert [p.name for p in tmp_path.iterdir()] == ["file"]
    assert [r.getMessage() for r in log.records] == [
        (f"the compile cache {tmp_path / 'file' / 'cache'} cannot be written ({tmp_path / 'file'} is a file, "
         "not a folder): compiling without it")]
    for action in ("info", "clear"):
        rc, out, err = cli(capsys, "cache", action)
        assert rc == 0 and err == "" and "not usable" in out


def test_missing_folder_is_created_and_clear_removes_only_it(tmp_path, monkeypatch, fresh, capsys) -> None:
    root = use(monkeypatch, tmp_path / "a" / "b" / "cache")
    run_f()
    assert "created-by-labrys: yes" in (root / "labrys-cache.tag").read_text()
    shutil.rmtree(root)  # deleted between two compiles of one process
    run_f(OTHER, "g")
    assert list(root.glob("labrys_*.py"))
    assert cli(capsys, "cache", "clear")[0] == 0
    assert not root.exists() and (tmp_path / "a" / "b").is_dir()


def test_verbose_shows_repairs_and_quiet_hides_them(tmp_path, monkeypatch, fresh, capsys) -> None:
    root = use(monkeypatch, tmp_path / "cache")
    program = tmp_path / "p.ks"
    program.write_text(SRC)
    assert cli(capsys, "run", str(program), "f", "[1, 2]", "--backend", "compiled") == (0, "6.0\n", "")
    for path in root.glob("__pycache__/*.nbc"):
        _garbage(path)
    fresh()
    assert cli(capsys, "run", str(program), "f", "[1, 2]", "--backend", "compiled") == (0, "6.0\n", "")
    for path in root.glob("__pycache__/*.nbc"):
        _garbage(path)
    fresh()
    rc, out, err = cli(capsys, "--verbose", "run", str(program), "f", "[1, 2]", "--backend", "compiled")
    assert (rc, out) == (0, "6.0\n")
    assert err.startswith("labrys: note: cache entry labrys_") and "deleted and rebuilt" in err
    assert not logging.getLogger("labrys").handlers  # --verbose leaves no handler behind


# --- several processes at once -----------------------------------------------------------

COMPILER = textwrap.dedent("""
    import sys
    import labrys
    from labrys.backends import cache
    from labrys.backends.cache_folder import clear_cache

    # Note: a clear at fixed points instead of a clearer process polling: under load a polling
    # clearer missed every window.  A clear does not take the cache's lock, so another process's
    # clear can land exactly here: after the entry was verified and its source written, before
    # Numba loads or saves the code (_compile), and after Numba saved it, before the record (_record).
    cleared = 0
    def clearing(fn):
        def run(*args, **kwargs):
            global cleared
            cleared += clear_cache().modules
            return fn(*args, **kwargs)
        return run
    cache._compile = clearing(cache._compile)
    cache._record = clearing(cache._record)
    for _ in range(3):
        cache._loaded.clear()  # as a new process: through the disk cache every time
        cache._helpers.clear()
        for src, name, want in [(sys.argv[1], "f", 6.0), (sys.argv[2], "g", 9.0)]:
            m = labrys.load(src, backend="compiled")
            assert m.function(name)([1.0, 2.0]) == want
            assert not m.backend.fallbacks, m.backend.fallbacks
    print("compiled", cleared)
""")


def test_two_compilers_that_clear_the_cache_under_each_other(tmp_path, monkeypatch, fresh) -> None:
    """Two processes compile into one folder at once while clears delete their files between
    verifying and compiling and between compiling and recording (deterministic points, COMPILER):
    both still compile, nothing reaches stderr, and the folder is usable after."""
    root = use(monkeypatch, tmp_path / "cache")
    env = dict(os.environ, LABRYS_CACHE_DIR=str(root))
    compilers = [subprocess.Popen([sys.executable, "-c", COMPILER, SRC, OTHER], env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for p in compilers:
        out, err = p.communicate(timeout=900)
        assert (p.returncode, err) == (0, ""), err
        word, cleared = out.split()
        assert word == "compiled" and int(cleared) > 0  # the clears did delete modules

    fresh()
    run_f()  # whatever the race left behind, this process compiles (or loads) f
    run_f(OTHER, "g")
    assert cache_folder.cache_info().problem == ""


def test_an_entry_point_compiled_later_is_recorded_too(tmp_path, monkeypatch, fresh, log) -> None:
    """A closure returned to Python has its apply compiled from the module already loaded; the
    record must include that code, or the next process finds files it does not know (and rebuilds)."""
    use(monkeypatch, tmp_path / "c")
    src = "(def adder (Lam Float Float) (a : Float) (lam (x : Float) (add x a)))"
    for _ in range(2):
        m = labrys.load(src, backend="compiled")
        assert m.function("adder")(2.0)(3.0) == 5.0
        fresh()
    assert not [r for r in log.records if "checksum" in r.getMessage()], log.text


WAITER = textwrap.dedent("""
    import logging, sys
    import labrys
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(message)s")
    logging.getLogger().handlers[0].addFilter(lambda r: r.name == "labrys.cache")
    m = labrys.load(sys.argv[1], backend="compiled")
    print(m.function("f")([1.0, 2.0]))
""")


def test_a_process_waits_while_another_holds_the_cache(tmp_path, monkeypatch, fresh) -> None:
    """A process checks the shared helpers entry while no other process holds the folder (Note
    [Cache locks]): otherwise it could find another's helpers code saved but not yet recorded,
    call it damage and rebuild it."""
    import fcntl

    root = cache_folder.prepared(cache_folder.locate()) if use(monkeypatch, tmp_path / "c") else None
    fd = os.open(root / cache_folder.MARKER, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    child = subprocess.Popen([sys.executable, "-c", WAITER, SRC], env=dict(os.environ, LABRYS_CACHE_DIR=str(root)),
                             text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = child.stderr.readline()  # blocks until the child logs; EOF ('') if it finished unlocked
    finally:
        os.close(fd)
    out, err = child.communicate(timeout=600)
    assert first.startswith("waiting for another process compiling into"), (first, err)
    assert (child.returncode, out) == (0, "6.0\n"), err
