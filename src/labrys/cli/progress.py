"""A progress line for long work on a terminal: a spinner on stderr that appears
once the work has taken a second, says what is being done, and disappears
when it ends; nothing at all when stderr is not a terminal (pipes, CI logs)."""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Callable, Iterator

DELAY = 1.0  # seconds of work before the spinner appears


@contextlib.contextmanager
def progress(what: str) -> Iterator[Callable[[str], None]]:
    """``with progress("checking") as say: say("f (2/5)")`` — say() updates the line."""
    if not sys.stderr.isatty():
        yield lambda text: None
        return
    from rich.console import Console

    status = Console(stderr=True).status(what)
    lock, state = threading.Lock(), {"shown": False, "done": False}

    def show() -> None:
        with lock:
            if not state["done"]:
                status.start()
                state["shown"] = True

    timer = threading.Timer(DELAY, show)
    timer.daemon = True
    timer.start()
    try:
        yield lambda text: status.update(f"{what}: {text}")
    finally:
        with lock:
            state["done"] = True
            timer.cancel()
            if state["shown"]:
                status.stop()
