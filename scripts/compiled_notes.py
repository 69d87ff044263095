"""Which functions and derivations still run on the ``python`` backend instead of
``compiled`` (docs/backends.md, "Fallback rules"): the notes ``--verbose`` prints.

For every example it runs ``main`` (or loads the program) on ``compiled``; then it
derives and runs each reverse/forward algorithm of the dual-numbers, CHAD and
dual-numbers-with-deltas papers on the small programs below (one of them
closure-heavy) and on ``examples/dualrev.ks``.  Each line: what was run, then
either ``compiled`` or the notes (function: why).

    python scripts/compiled_notes.py             # everything
    python scripts/compiled_notes.py --examples  # the examples only
"""
from __future__ import annotations

import argparse
import contextlib
import io
import logging
import pathlib
import sys

import numpy as np

import labrys

ROOT = pathlib.Path(__file__).resolve().parent.parent
METHODS = ("dualrev1", "dualrev2", "dualrev3", "dualrev4", "dualrev5", "dualrev", "dualrevtape",
           "chadfwd", "chadrev", "dualfwd", "deltarev", "rev", "fwd")
CLOSURES = """
(def twice Float ((f : Lam Float Float) (x : Float)) (f (f x)))
(def g Float ((x : Float) (y : Float))
  (let ((h (lam (z : Float) (mul z (add x y))))
        (k (lam (z : Float) (sin (h z)))))
    (add (twice k x) (h y))))
"""
POINTS = {  # function -> (arguments, tangent or cotangent seed of the result)
    "fig1": ((2.0, 3.0), 1.0), "tex": (((2.0, 3.0),), 1.0), "sumv": ((np.array([1.0, 2.0, 3.0]),), 1.0),
    "mapped": ((np.array([1.0, 2.0]), 3.0), 1.0), "g": ((0.3, 0.7), 1.0),
}


class Notes(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.INFO and "runs on the python backend" in record.getMessage():
            self.lines.append(record.getMessage())


def report(what: str, notes: Notes, error: str | None = None) -> None:
    if error:
        print(f"{what}: error: {error}")
    elif notes.lines:
        print(f"{what}: {len(notes.lines)} on python")
        for line in notes.lines:
            print(f"    {line}")
    else:
        print(f"{what}: compiled")
    notes.lines.clear()


def examples(notes: Notes) -> None:
    for path in sorted((ROOT / "examples").glob("*.ks")):
        error = None
        try:
            m = labrys.load(str(path), backend="compiled")
            if "main" in m.names():
                with contextlib.redirect_stdout(io.StringIO()):
                    m.main()
        except Exception as exc:  # a report, not a test
            error = str(exc).splitlines()[0]
        report(f"examples/{path.name}", notes, error)


def derivations(notes: Notes) -> None:
    programs = [("examples/dualrev.ks", labrys.load(str(ROOT / "examples/dualrev.ks"), backend="compiled"),
                 ("fig1", "tex", "sumv", "mapped")),
                ("closures (twice/g)", labrys.load(CLOSURES, backend="compiled"), ("g",))]
    for label, m, names in programs:
        for name in names:
            args, seed = POINTS[name]
            for method in METHODS:
                error = None
                try:
                    d = m.derive(method, name)
                    x = args[0] if len(args) == 1 else args
                    if method in ("chadfwd", "dualfwd", "fwd"):
                        d(x, tangent(x))
                    else:
                        d(x, seed)
                except Exception as exc:
                    error = str(exc).splitlines()[0][:160]
                report(f"[{method} {name}] ({label})", notes, error)


def tangent(x):
    """A tangent of x: ones in every Float."""
    if isinstance(x, tuple):
        return tuple(tangent(e) for e in x)
    return np.ones_like(x) if isinstance(x, np.ndarray) else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", action="store_true", help="only the examples")
    ap.add_argument("--derivations", action="store_true", help="only the derivations")
    args = ap.parse_args()
    notes = Notes()
    log = logging.getLogger("labrys.backends")
    log.addHandler(notes)
    log.setLevel(logging.INFO)
    log.propagate = False
    if not args.derivations:
        examples(notes)
    if not args.examples:
        derivations(notes)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
