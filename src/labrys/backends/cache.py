"""The compiled backend's disk cache: each generated module and Numba's
machine code for it, in a folder labrys owns (:mod:`labrys.backends.cache_folder`,
Note [Cache ownership]).

Note [Compile cache]
~~~~~~~~~~~~~~~~~~~~
Numba's ``cache=True`` needs a real source file, so a generated module is
written to ``<cache>/labrys_<key>.py`` and its code is compiled with that
path as its file name; Numba keeps its index (``.nbi``) and object code
(``.nbc``) in ``<cache>/__pycache__/labrys_<key>.*``.  ``<key>`` hashes the
generated source and the versions of labrys (with the source of the
run-time helpers), Numba and Python, so code built from other source or by
another version is never even looked up.  The helpers of
:mod:`labrys.backends.numba_runtime` are an entry of their own, loaded once
a process and given to each generated module as globals: compiled code
never depends on a Numba cache outside this directory (the package's folder
may be read-only or damaged).

Integrity.  ``labrys_<key>.json`` records the SHA-256 of every file of the
entry, written after Numba saved its files, and again whenever Numba saves
more for a module already loaded (a closure's apply called from Python is
compiled from the same module later).  Before Numba may read them,
the source file must equal the source in memory (the code that runs is
always compiled from the text in memory, never read back) and every
recorded checksum must match, with no unrecorded Numba file beside them;
otherwise the entry's Numba files and record are deleted and rebuilt, with
a note on the ``labrys.cache`` logger (``labrys --verbose`` shows it).  A
load that fails anyway (the checksums match, but the helpers may be at
fault) is retried once with the entry and the helpers rebuilt; a compile
that fails for a cache reason (a file vanished under a concurrent
``clear``) is redone in memory.  Only Numba refusing the code itself
reaches the backend (Note [Compiled fallback]): the cache never sends a
def to ``python``.

Concurrency. Every file appears whole: ours are written to a temporary name
and ``os.replace``d, and so are Numba's. Different entries compile at the
same time; what is locked, when, in which order, is Note [Cache locks]
(:mod:`labrys.backends.cache_lock`). In short: a process verifies the
helpers entry once, holding the folder's marker exclusively (no process is
compiling then; a gate taken first queues new compiles behind it); it
compiles holding the marker shared and the entry's own ``labrys_<key>.lock``
exclusively (so two processes never build one entry: the second waits, then
loads what the first recorded); and it rewrites the helpers' record, with
checksums taken then, under the helpers' lock. The helpers need this care
because Numba may save code for them whenever any module is compiled: every
process that saved some records all the files before it lets the marker go,
so when a verifier gets the marker, the last record written covers every
file and nothing looks like damage. Where there is no ``flock`` (Windows),
or when ``clear`` deletes a lock file under a holder, racing records may
disagree with the files; that only costs a rebuild.

Unwritable.  When the directory cannot be created or written (read-only,
under a regular file, ``__pycache__`` not writable, a foreign subfolder),
modules are compiled in memory (``_cache`` is False in the decorator the
generator writes, which Numba needs: ``cache=True`` on code without a
writable file beside it fails, or writes to Numba's own user-wide cache),
with one note per process.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import linecache
import logging
import os
import platform
import sys
import types
from pathlib import Path
from typing import Any

from . import numba_runtime
from .cache_folder import MARKER, PYCACHE, locate, prepared, write_atomic
from .cache_lock import compiling, locked, verifying

log = logging.getLogger("labrys.cache")


# --- one entry (Note [Compile cache]) -----------------------------------------------

@functools.cache
def versions() -> str:
    import numba

    from ..version import __version__
    helpers = hashlib.sha256(numba_runtime.source().encode()).hexdigest()[:16]
    return (f"labrys {__version__} helpers {helpers} numba {numba.__version__} "
            f"python {platform.python_version()} {sys.implementation.cache_tag} {platform.machine()}")


def entry_key(text: str) -> str:
    return hashlib.sha256((versions() + "\n" + text).encode()).hexdigest()[:32]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Entry:
    """labrys_<key>.py (the source), labrys_<key>.json (checksums), __pycache__/labrys_<key>.* (Numba's)."""

    def __init__(self, root: Path, key: str) -> None:
        self.root, self.key = root, key
        self.source = root / f"labrys_{key}.py"
        self.record = root / f"labrys_{key}.json"
        self.lock = root / f"labrys_{key}.lock"  # Note [Cache locks]

    def __str__(self) -> str:
        return f"cache entry {self.source.stem} in {self.root}"

    def _pycache(self, temporary: bool) -> list[Path]:
        try:
            names = os.listdir(self.root / PYCACHE)
        except FileNotFoundError:
            return []
        prefix = f"labrys_{self.key}."
        return sorted(self.root / PYCACHE / n for n in names if n.startswith(prefix) and (".tmp" in n) == temporary)

    def numba_files(self) -> list[Path]:
        return self._pycache(temporary=False)

    def leftovers(self) -> list[Path]:
        """Temporary files of interrupted writes of this entry (Note [Stale files of an entry])."""
        prefix = f"labrys_{self.key}."
        try:
            ours = [self.root / n for n in os.listdir(self.root) if n.startswith(prefix) and n.endswith(".tmp")]
        except FileNotFoundError:
            ours = []
        return sorted(ours) + self._pycache(temporary=True)

    def checksums(self) -> dict[str, str]:
        return {p.relative_to(self.root).as_posix(): _sha256(p) for p in [self.source, *self.numba_files()]}

    def prepare(self, text: str) -> bool:
        """Source file in place; True when Numba's files are recorded and intact (a warm load).
        Anything else is deleted, so Numba only ever reads verified files or none."""
        data = text.encode()
        self.sweep()
        try:
            same = self.source.read_bytes() == data
        except FileNotFoundError:
            same = None
        if not same:
            if same is False:
                log.info("%s: the source file was damaged; deleted and rebuilt", self)
            self.purge()
            write_atomic(self.source, data)
            return False
        if not self.record.exists() and not self.numba_files():
            return False  # not built yet (or a build was interrupted before Numba saved anything)
        damage = self.damage()
        if damage:
            log.info("%s: %s; deleted and rebuilt", self, damage)
            self.purge()
        return not damage

    # Note [Stale files of an entry]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # Our writes and Numba's go to a temporary name first (``<file>.<uid>.tmp``,
    # ``<file>.tmp.<uid>``) and are renamed; a process killed in between leaves the
    # temporary file, which no later load would ever read or delete (only ``labrys
    # cache clear`` did).  An entry is prepared while its process holds the entry's
    # lock (the helpers entry: the folder's, exclusively; Note [Cache locks]), and
    # every writer of the entry's files holds it too, so any
    # temporary file of the entry found then belongs to a dead write: ``sweep``
    # deletes them at every prepare, and ``purge`` with the rest of a damaged entry.
    # Without ``flock`` (Windows) a concurrent writer's file may be swept; its rename
    # then fails and the write is retried by the next run, a rebuild at worst.

    def sweep(self) -> None:
        for path in self.leftovers():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def damage(self) -> str:
        """Why Numba's files cannot be trusted ('' when they can)."""
        try:
            record = json.loads(self.record.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return "object code without a checksum record"
        except (ValueError, UnicodeDecodeError):
            return "its checksum record is damaged"
        if not isinstance(record, dict) or record.get("versions") != versions():
            return "its checksum record is damaged"
        try:
            actual = self.checksums()
        except FileNotFoundError as exc:
            return f"{exc.filename} vanished"
        recorded = record.get("files") if isinstance(record.get("files"), dict) else {}
        bad = sorted(n for n in set(actual) | set(recorded) if actual.get(n) != recorded.get(n))
        return f"{', '.join(bad)} does not match its checksum record" if bad else ""

    def purge(self) -> None:
        """Numba's files, the record and the leftovers of interrupted writes (Note [Stale files of an entry])."""
        for path in [self.record, *self.numba_files(), *self.leftovers()]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def save_record(self) -> None:
        data = {"versions": versions(), "files": self.checksums()}
        write_atomic(self.record, json.dumps(data, indent=1, sort_keys=True).encode())


# --- compiling through the cache ----------------------------------------------------

_loaded: dict[str, tuple[types.ModuleType, Entry | None]] = {}  # key -> module compiled in this process, its entry
_helpers: dict[Path | None, tuple[types.ModuleType, Entry | None]] = {}  # per cache folder; None: in memory


def compiled_function(text: str, entry: str, argtypes: tuple) -> Any:
    """The njit function ``entry`` of the generated module ``text``, compiled for
    ``argtypes``, through the cache when it can be written (Note [Compile cache]).
    Only Numba refusing the code raises."""
    from numba.core.errors import NumbaError

    key = entry_key(text)
    if key in _loaded:  # another entry point of a module already loaded (a closure's apply, a heap)
        module, cached = _loaded[key]
        if cached is None:
            return _compile(module, entry, argtypes)
        with _compiling(cached):
            fn = _compile(module, entry, argtypes)
            _record_new_code(module, cached)
            _record_helpers(cached.root)
        return fn
    root = prepared(locate())
    if root is not None:
        try:
            module, fn = _cached(Entry(root, key), text, entry, argtypes)
        except NumbaError:
            raise
        except Exception as exc:  # a file vanished or could not be written: not the code's fault
            log.info("cache entry labrys_%s: %s; compiled without the cache", key, _first_line(exc))
        else:
            _loaded[key] = module, Entry(root, key)
            return fn
    module = _module(text, key, None, helpers(None))
    fn = _compile(module, entry, argtypes)
    _loaded[key] = module, None
    return fn


class _Stale(Exception):
    """A warm entry Numba could not load: it and the helpers are rebuilt (Note [Compile cache])."""


def _cached(entry: Entry, text: str, name: str, argtypes: tuple) -> tuple[types.ModuleType, Any]:
    """Compile through the cache under the locks of Note [Cache locks], none of them upgraded."""
    if entry.root not in _helpers:  # verified once a process, while no process compiles
        with verifying(entry.root / MARKER, _gate(entry.root)):
            helpers(entry.root)
    try:
        with _compiling(entry):
            return _through(entry, text, name, argtypes, retry=True)
    except _Stale as exc:
        log.info("%s could not be loaded (%s); deleted and rebuilt, with the helpers", entry, exc)
    with verifying(entry.root / MARKER, _gate(entry.root)):  # nobody compiles while the helpers are rebuilt
        entry.purge()
        _helpers.pop(entry.root)[1].purge()
        helpers(entry.root)
    with _compiling(entry):
        return _through(entry, text, name, argtypes, retry=False)


def _compiling(entry: Entry) -> contextlib.AbstractContextManager[None]:
    """The folder shared with other compiling processes, the entry this one's (Note [Cache locks])."""
    return compiling(entry.root / MARKER, _gate(entry.root), entry.lock)


def _gate(root: Path) -> Path:
    return root / f"labrys_{_helpers_key()}.gate"


@functools.cache
def _helpers_key() -> str:
    return entry_key(numba_runtime.source())


def _through(entry: Entry, text: str, name: str, argtypes: tuple, retry: bool) -> tuple[types.ModuleType, Any]:
    from numba.core.errors import NumbaError

    runtime = helpers(entry.root)
    warm = entry.prepare(text)
    try:
        module = _module(text, entry.key, entry.source, runtime)
        fn = _compile(module, name, argtypes)
    except Exception as exc:
        if not retry or (isinstance(exc, NumbaError) and not warm):  # refused, not damaged
            raise
        raise _Stale(_first_line(exc)) from exc
    if not warm:
        _record(entry)
        module._recorded = _misses(module)
    _record_new_code(module, entry)
    _record_helpers(entry.root)  # a helper compiled for a new type
    return module, fn


def _record_helpers(root: Path) -> None:
    """Record the helpers entry again when this process saved code for it: under the helpers'
    own lock, checksums taken inside it, as other processes record it too (Note [Cache locks])."""
    runtime, entry = _helpers[root]
    if _misses(runtime) != getattr(runtime, "_recorded", 0):
        with locked(entry.lock, exclusive=True, create=True):
            _record_new_code(runtime, entry)


def _record_new_code(module: types.ModuleType, entry: Entry) -> None:
    """Record the entry again when Numba saved code for it since the last record: a later
    entry point of the same module (Note [Compile cache]) must not look like damage next time."""
    misses = _misses(module)
    if misses != getattr(module, "_recorded", 0):
        _record(entry)
        module._recorded = misses


def helpers(root: Path | None) -> types.ModuleType:
    """numba_runtime's helpers, an entry of the cache at root (None: in memory), loaded once a process."""
    if root not in _helpers:
        text = numba_runtime.source()
        entry = Entry(root, entry_key(text)) if root else None
        if entry:
            entry.prepare(text)
        _helpers[root] = _module(text, entry_key(text), entry and entry.source, None), entry
    return _helpers[root][0]


def _record(entry: Entry) -> None:
    """Checksums of what is there now; if a racing clear removed files, the next run rebuilds."""
    try:
        entry.save_record()
    except OSError as exc:
        log.info("%s: no checksum record (%s)", entry, _first_line(exc))


def _module(text: str, key: str, path: Path | None, runtime: types.ModuleType | None) -> types.ModuleType:
    """The generated module, executed from ``text`` (never from the file, which only names it for Numba)."""
    name = f"labrys_{key}"
    filename = str(path) if path else f"<labrys-compiled {key}>"
    module = types.ModuleType(name)
    module.__dict__.update(_cache=path is not None, __file__=filename)
    if runtime is not None:
        module.__dict__.update({n: getattr(runtime, n) for n in numba_runtime.NAMES})
    code = compile(text, filename, "exec")
    if path is None:
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    sys.modules[name] = module  # Numba finds a cached function's globals through it
    exec(code, module.__dict__)
    return module


def _compile(module: types.ModuleType, name: str, argtypes: tuple) -> Any:
    fn = getattr(module, name)
    fn.compile(argtypes)
    return fn


def _misses(module: types.ModuleType) -> int:
    """How many functions Numba compiled (and saved) instead of loading them."""
    from numba.core.dispatcher import Dispatcher

    return sum(sum(v.stats.cache_misses.values()) for v in vars(module).values()
               if isinstance(v, Dispatcher) and v.py_func.__module__ == module.__name__)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:160]}" if text else type(exc).__name__


