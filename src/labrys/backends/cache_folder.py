"""The folder of the compiled backend's cache: where it is, that it is
labrys's, and ``labrys cache info`` / ``labrys cache clear``.

Note [Cache ownership]
~~~~~~~~~~~~~~~~~~~~~~
The cache is ``$LABRYS_CACHE_DIR``, else ``~/.cache/labrys``.  labrys uses
that folder when it is missing, empty, marked by ``labrys-cache.tag``, or
holds nothing but files named by labrys's scheme (``labrys_<32 hex>.*``
there and in its ``__pycache__``, Note [Compile cache]); a folder with other
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
import logging
import os
import re
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..errors import LabrysError

log = logging.getLogger("labrys.cache")

SUBFOLDER = "labrys-cache"
MARKER = "labrys-cache.tag"
PYCACHE = "__pycache__"
_OWN = re.compile(r"labrys_[0-9a-f]{32}\..+|" + re.escape(MARKER) + r"(\..+\.tmp)?")
_CREATED = "created-by-labrys: yes"


def requested_dir() -> Path:
    return Path(os.environ.get("LABRYS_CACHE_DIR") or Path.home() / ".cache" / "labrys").expanduser()


# --- which folder ---------------------------------------------------------------------

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


def prepared(place: Place) -> Path | None:
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
            write_atomic(root / MARKER, _marker_text(created).encode())
        (root / PYCACHE).mkdir(exist_ok=True)
        tempfile.TemporaryFile(dir=root / PYCACHE).close()  # Numba's own test of a cache folder
        return root
    except OSError as exc:
        if root not in _reported:
            _reported.add(root)
            log.info("the compile cache %s cannot be written (%s): compiling without it", root, reason(exc))
        return None


def _marker_text(created: bool) -> str:
    return ("labrys compile cache: `labrys cache info` describes it, `labrys cache clear` deletes the files\n"
            "labrys wrote here (labrys_<hash>.*, __pycache__/labrys_<hash>.*) and nothing else.\n"
            f"created-by-labrys: {'yes' if created else 'no'}\n")


def reason(exc: OSError) -> str:
    return f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)


def write_atomic(path: Path, data: bytes) -> None:
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
        return CacheInfo(place.root, reason(exc), 0, 0, 0)
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
        raise LabrysError(f"cannot clear the compile cache {root}: {reason(exc)}") from None
    return info


def _remove_if_empty(folder: Path) -> None:
    """rmdir, unless another process wrote into it meanwhile (or it is gone)."""
    try:
        os.rmdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError:
        if not os.path.isdir(folder) or os.listdir(folder):
            return
        raise
