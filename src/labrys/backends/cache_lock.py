"""Advisory file locks of the compile cache (Note [Compile cache], Concurrency).

Note [Cache locks]
~~~~~~~~~~~~~~~~~~
Numba may save code for the shared helpers entry whenever any module is
compiled, so a process that verified the helpers' files between another's
save and its record would find "damage" and rebuild them.  Different entries
must still compile at the same time.  Four ``flock``s, always taken in this
order:

1. the *gate* (``labrys_<helpers key>.gate``), exclusive and only for the
   moment of taking the marker: a process waiting to verify holds it, so new
   compiles queue behind that process instead of starving it (``flock`` does
   not prefer a waiting exclusive lock to new shared ones);
2. the folder's *marker* (``labrys-cache.tag``): exclusive while a process
   verifies (and, if damaged, rebuilds) the helpers entry -- once a process
   and cache folder, and again only when a load fails -- shared while it
   compiles anything;
3. the *entry's lock* (``labrys_<key>.lock``), exclusive while the process
   verifies, compiles and records that entry, so two processes never build
   one entry: the second waits, then loads what the first recorded;
4. the *helpers' lock* (``labrys_<helpers key>.lock``), exclusive while a
   process takes the helpers' checksums and writes their record, when it
   saved code for them.

No deadlock: every process takes them in this order, holds at most one of
each, never upgrades one it holds (two upgraders would wait for each other:
to go from shared to exclusive it lets go first), and the only lock held
while waiting for the marker is the gate, which nobody holding the marker
waits for.  Consistency: each process that saved helpers' code records it
(checksums of what is on disk then, under their lock, so records are written
one at a time and the last one taken covers every save before it) before it
lets the marker go, and a verifier needs the marker alone, so it sees the
helpers' files and record agree.

``flock`` locks belong to the open file and go with the process, however
it ends.  Where there is no ``fcntl`` (Windows), or a lock file cannot be
opened or was deleted under its holder (``clear`` deletes everything labrys
wrote), the block runs unlocked: racing records may then disagree with the
files, which only costs a rebuild.
"""
from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Iterator

log = logging.getLogger("labrys.cache")


@contextlib.contextmanager
def locked(path: Path, *, exclusive: bool, create: bool = False) -> Iterator[None]:
    """``path`` flocked (exclusive or shared) while the block runs; created first when ``create``."""
    try:
        import fcntl
        fd = os.open(path, os.O_RDWR | os.O_CREAT if create else os.O_RDONLY, 0o666)
    except (ImportError, OSError):  # no flock here, or the file is gone or unwritable: unlocked
        yield
        return
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            log.debug("waiting for another process compiling into %s (%s)", path.parent, path.name)
            fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # and the lock with it


@contextlib.contextmanager
def verifying(marker: Path, gate: Path) -> Iterator[None]:
    """The cache folder to this process alone: no other process compiles (locks 1 and 2)."""
    with locked(gate, exclusive=True, create=True), locked(marker, exclusive=True):
        yield


@contextlib.contextmanager
def compiling(marker: Path, gate: Path, entry_lock: Path) -> Iterator[None]:
    """The folder shared with other compiling processes, one entry to this one (locks 1 to 3)."""
    with contextlib.ExitStack() as held:
        with locked(gate, exclusive=True, create=True):
            held.enter_context(locked(marker, exclusive=False))
        held.enter_context(locked(entry_lock, exclusive=True, create=True))
        yield
