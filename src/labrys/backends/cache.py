"""The compiled backend's disk cache: each generated module and Numba's
machine code for it, in a directory labrys owns.

Note [Compile cache]
~~~~~~~~~~~~~~~~~~~~
Numba's ``cache=True`` needs a real source file, so a generated module is
written to ``<cache>/labrys_<key>.py`` and its code is compiled with that
path as its file name; Numba keeps its index (``.nbi``) and object code
(``.nbc``) in ``<cache>/__pycache__/labrys_<key>.*``.  ``<key>`` hashes the
generated source and the versions of labrys (with the source of the
run-time helpers the machine code links in), Numba and Python, so code
built from other source or by another version is never even looked up.

Integrity.  ``labrys_<key>.json`` records the SHA-256 of every file of the
entry, written after Numba saved its files.  Before Numba may read them,
the source file must equal the source in memory (the code that runs is
always compiled from the text in memory, never read back) and every
recorded checksum must match, with no unrecorded Numba file beside them;
otherwise the entry's Numba files and record are deleted and rebuilt, with
a note on the ``labrys.cache`` logger (``labrys --verbose`` shows it).  A
load that still fails is retried once from scratch; a compile that fails
for a cache reason (a file vanished under a concurrent ``clear``) is
redone in memory.  Only Numba refusing the code itself reaches the
backend (Note [Compiled fallback]): the cache never sends a def to
``python``.

Concurrency.  Every file appears whole: ours are written to a temporary
name and ``os.replace``d, and so are Numba's.  Records written by racing
processes may disagree with the files; that only costs a rebuild.

Unwritable.  When the directory cannot be created or written (read-only,
under a regular file, ``__pycache__`` not writable, a foreign subfolder),
modules are compiled in memory (``_cache`` is False in the decorator the
generator writes, which Numba needs: ``cache=True`` on code without a
writable file beside it fails, or writes to Numba's own user-wide cache),
with one note per process.

Note [Cache ownership]
~~~~~~~~~~~~~~~~~~~~~~
The cache is ``$LABRYS_CACHE_DIR``, else ``~/.cache/labrys``.  labrys uses
that folder when it is missing, empty, marked by ``labrys-cache.tag``, or
holds nothing but files named by the scheme above; a folder with other
content is never written into: the cache goes in its ``labrys-cache/``
subfolder (under the same rule) instead of refusing, so pointing the
variable at a project folder just works.  The marker records whether
labrys created the folder.  ``clear`` deletes only files named by the
scheme (and temporary files of interrupted writes), then the marker and
the folder if nothing else is left and labrys created it; anything a user
put inside stays.
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
import re
import sys
import tempfile
import types
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabrysError

log = logging.getLogger("labrys.cache")

SUBFOLDER = "labrys-cache"
MARKER = "labrys-cache.tag"
PYCACHE = "__pycache__"
_OWN = re.compile(r"labrys_[0-9a-f]{32}\..+|" + re.escape(MARKER) + r"(\..+\.tmp)?")
_CREATED = "created-by-labrys: yes"


def requested_dir() -> Path:
    return Path(os.environ.get("LABRYS_CACHE_DIR") or Path.home() / ".cache" / "labrys").expanduser()


# --- which directory (Note [Cache ownership]) ---------------------------------------

@dataclass(frozen=True)
class Place:
    root: Path
    problem: str = ""  # why it cannot be used; "" when it can


def _owned_names(root: Path, names: list[str]) -> bool:
    """Every name is labrys's: scheme files, or a __pycache__ holding only those."""
    for name in names:
        if name == PYCACHE:
            try:
                if (root / PYCACHE).is_symlink() or not _owned_names(root / PYCACHE, os.listdir(root / PYCACHE)):
                    return False
            except OSError:
                return False
        elif not _OWN.fullmatch(name):
            return False
    return True


def _claim(root: Path) -> str:
    """'ours' (usable), 'foreign', or why the folder cannot be used."""
    if (root / MARKER).is_file():
        return "ours"
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return "ours"
    except NotADirectoryError:
        blocker = next(p for p in [root, *root.parents] if p.exists())
        return f"{blocker} is a file, not a folder"
    except OSError as exc:
        return f"{root}: {exc.strerror or exc}"
    return "ours" if _owned_names(root, names) else "foreign"


def locate() -> Place:
    """The directory the cache uses; nothing is written."""
    asked = requested_dir()
    claim = _claim(asked)
    if claim == "foreign":
        sub = asked / SUBFOLDER
        claim = _claim(sub)
        if claim == "foreign":
            return Place(sub, f"{sub} holds files labrys did not write")
        return Place(sub, "" if claim == "ours" else claim)
    return Place(asked, "" if claim == "ours" else claim)


_reported: set[Path] = set()


def _prepared(place: Place) -> Path | None:
    """The cache directory, created and marked, or None (noted once) when it cannot be written."""
    root = place.root
    try:
        if place.problem:
            raise OSError(place.problem)
        try:
            root.mkdir(parents=True)
            created = True
        except FileExistsError:
            created = False
        if not (root / MARKER).exists():
            _write_atomic(root / MARKER, _marker_text(created).encode())
        (root / PYCACHE).mkdir(exist_ok=True)
        tempfile.TemporaryFile(dir=root / PYCACHE).close()  # Numba's own test of a cache folder
        return root
    except OSError as exc:
        if root not in _reported:
            _reported.add(root)
            log.info("the compile cache %s cannot be written (%s): compiling without it", root, _reason(exc))
        return None


def _marker_text(created: bool) -> str:
    return ("labrys compile cache: `labrys cache info` describes it, `labrys cache clear` deletes the files\n"
            "labrys wrote here (labrys_<hash>.*, __pycache__/labrys_<hash>.*) and nothing else.\n"
            f"created-by-labrys: {'yes' if created else 'no'}\n")


def _reason(exc: OSError) -> str:
    return f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)


def _write_atomic(path: Path, data: bytes) -> None:
    """path holds data, or its old content: never a part (the mode follows the umask, as Numba's files)."""
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --- one entry (Note [Compile cache]) -----------------------------------------------

@functools.cache
def versions() -> str:
    import numba

    from .. import __version__
    helpers = hashlib.sha256(Path(__file__).with_name("numba_runtime.py").read_bytes()).hexdigest()[:16]
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

    def __str__(self) -> str:
        return f"cache entry {self.source.stem} in {self.root}"

    def numba_files(self) -> list[Path]:
        try:
            names = os.listdir(self.root / PYCACHE)
        except FileNotFoundError:
            return []
        prefix = f"labrys_{self.key}."
        return sorted(self.root / PYCACHE / n for n in names if n.startswith(prefix) and ".tmp" not in n)

    def checksums(self) -> dict[str, str]:
        return {p.relative_to(self.root).as_posix(): _sha256(p) for p in [self.source, *self.numba_files()]}

    def prepare(self, text: str) -> bool:
        """Source file in place; True when Numba's files are recorded and intact (a warm load).
        Anything else is deleted, so Numba only ever reads verified files or none."""
        data = text.encode()
        try:
            same = self.source.read_bytes() == data
        except FileNotFoundError:
            same = None
        if not same:
            if same is False:
                log.info("%s: the source file was damaged; deleted and rebuilt", self)
            self.purge()
            _write_atomic(self.source, data)
            return False
        if not self.record.exists() and not self.numba_files():
            return False  # not built yet (or a build was interrupted before Numba saved anything)
        damage = self.damage()
        if damage:
            log.info("%s: %s; deleted and rebuilt", self, damage)
            self.purge()
        return not damage

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
        for path in [self.record, *self.numba_files()]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def save_record(self) -> None:
        data = {"versions": versions(), "files": self.checksums()}
        _write_atomic(self.record, json.dumps(data, indent=1, sort_keys=True).encode())


# --- compiling through the cache ----------------------------------------------------

_loaded: dict[str, types.ModuleType] = {}  # key -> module compiled in this process


def compiled_function(text: str, entry: str, argtypes: tuple) -> Any:
    """The njit function ``entry`` of the generated module ``text``, compiled for
    ``argtypes``, through the cache when it can be written (Note [Compile cache]).
    Only Numba refusing the code raises."""
    from numba.core.errors import NumbaError

    key = entry_key(text)
    if key in _loaded:
        return _compile(_loaded[key], entry, argtypes)
    root = _prepared(locate())
    if root is not None:
        try:
            module, fn = _through(Entry(root, key), text, entry, argtypes)
            _loaded[key] = module
            return fn
        except NumbaError:
            raise
        except Exception as exc:  # a file vanished or could not be written: not the code's fault
            log.info("cache entry labrys_%s: %s; compiled without the cache", key, _first_line(exc))
    module = _module(text, key, None)
    fn = _compile(module, entry, argtypes)
    _loaded[key] = module
    return fn


def _through(entry: Entry, text: str, name: str, argtypes: tuple) -> tuple[types.ModuleType, Any]:
    warm = entry.prepare(text)
    try:
        module = _module(text, entry.key, entry.source)
        fn = _compile(module, name, argtypes)
    except Exception as exc:
        if not warm:
            raise
        log.info("%s could not be loaded (%s); deleted and rebuilt", entry, _first_line(exc))
        entry.purge()
        return _through(entry, text, name, argtypes)
    if not warm or _compiled_anew(module):
        entry.save_record()
    return module, fn


def _module(text: str, key: str, path: Path | None) -> types.ModuleType:
    """The generated module, executed from ``text`` (never from the file, which only names it for Numba)."""
    name = f"labrys_{key}"
    filename = str(path) if path else f"<labrys-compiled {key}>"
    module = types.ModuleType(name)
    module.__dict__.update(_cache=path is not None, __file__=filename)
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


def _compiled_anew(module: types.ModuleType) -> bool:
    """Whether Numba compiled (and saved) anything instead of loading it."""
    from numba.core.dispatcher import Dispatcher

    return any(sum(v.stats.cache_misses.values()) for v in vars(module).values()
               if isinstance(v, Dispatcher) and v.py_func.__module__ == module.__name__)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:160]}" if text else type(exc).__name__


# --- info and clear -----------------------------------------------------------------

@dataclass(frozen=True)
class CacheInfo:
    root: Path
    problem: str  # why the cache cannot be used ("" when it can)
    modules: int  # generated modules (labrys_<key>.py)
    size: int  # bytes in labrys's files
    others: int  # entries labrys did not write (kept by clear)


def _own_files(root: Path) -> tuple[list[Path], int]:
    """labrys's files in root and root/__pycache__, and how many other entries there are."""
    own, others = [], 0
    for folder in (root, root / PYCACHE):
        if folder != root and (folder.is_symlink() or not folder.is_dir()):
            continue
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            continue
        for name in names:
            if _OWN.fullmatch(name) and name != MARKER:
                own.append(folder / name)
            elif name not in (MARKER, PYCACHE) or folder != root:
                others += 1
    return own, others


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def cache_info() -> CacheInfo:
    place = locate()
    if place.problem:
        return CacheInfo(place.root, place.problem, 0, 0, 0)
    try:
        own, others = _own_files(place.root)
    except OSError as exc:
        return CacheInfo(place.root, _reason(exc), 0, 0, 0)
    modules = sum(1 for p in own if p.parent == place.root and p.suffix == ".py")
    return CacheInfo(place.root, "", modules, sum(_size(p) for p in own), others)


def clear_cache() -> CacheInfo:
    """Delete labrys's files (Note [Cache ownership]); what was deleted, and what was kept."""
    info = cache_info()
    root = info.root
    if info.problem or not root.is_dir():
        return info
    try:
        own, _ = _own_files(root)
        for path in own:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        _remove_if_empty(root / PYCACHE)
        if os.listdir(root) == [MARKER]:
            created = _CREATED in (root / MARKER).read_text(encoding="utf-8", errors="replace")
            os.unlink(root / MARKER)
            if created:
                _remove_if_empty(root)
    except OSError as exc:
        raise LabrysError(f"cannot clear the compile cache {root}: {_reason(exc)}") from None
    return info


def _remove_if_empty(folder: Path) -> None:
    """rmdir, unless another process wrote into it meanwhile (or it is gone)."""
    try:
        os.rmdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        if not os.path.isdir(folder) or os.listdir(folder):
            return
        raise exc
