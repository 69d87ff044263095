"""Which functions and derivations still run on the ``python`` backend instead of
``compiled`` (docs/backends.md, "Fallback rules"): the notes ``--verbose`` prints.

For every example it runs ``main`` (or loads the program) on ``compiled``; then it
derives and runs each reverse/forward algorithm of the dual-numbers, CHAD and
dual-numbers-with-deltas papers on the small programs below (one of them
closure-heavy) and on ``examples/dualrev.ks``.  Each line: what was run, then
either ``compiled`` or the notes (function: why).

    python scripts/compiled_notes.py             # everything
    python scripts/compiled_notes.py --examples  # the examples only
    python scripts/compiled_notes.py --corpus    # the Knossos corpus only (tests/corpus/knossos)
    python scripts/compiled_notes.py --adbench   # every ADBench program under every derivation
    python scripts/compiled_notes.py --adbench --problem hand --deriv dualfwd,sufrev

``--adbench`` runs ``labrys adbench PROBLEM FILE --deriv D`` in process on ``compiled``
for the small data files (gmm, ba and hand's ``test.txt``, hand's ``simple_small``, LSTM's
``lstm_l2_c1024``) and every derivation ``labrys adbench`` accepts for the problem (a
gradient: the reverse ones; a Jacobian: forward and reverse ones), and prints each run's
notes (or ``compiled``) and whether its finite-difference check passed.  Under this
machine's load a full sweep takes hours (compiling each derivation of each program);
``--problem`` and ``--deriv`` narrow it.

``--corpus`` loads each program of the Knossos corpus on ``compiled``, runs its
``main`` if it has one, runs the ``;; ENTRY:`` def on its ``;; ARGS:`` and then,
for every def, ``[rev f]`` and ``[fwd f]`` (the ENTRY's at its ARGS, any other
def's at small values made from its parameter types: 0.7 for a Float, 2 for an
Integer, vectors of 3).  A derivative the program's types do not allow (Knossos
AD refuses it) or a run-time error of made-up arguments (an index out of range)
is printed as an error line, not as a note: only notes are fallbacks.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import pathlib
import re
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


def corpus(notes: Notes) -> None:
    from labrys.ir.types import BOOL, FLOAT, INTEGER, TTensor, TTuple

    def value(t, depth: int = 0):
        """A small argument of type t (Note in the docstring: made up, not the corpus's)."""
        if t == FLOAT:
            return 0.7
        if t == INTEGER:
            return 2
        if t == BOOL:
            return True
        if isinstance(t, TTuple):
            return tuple(value(e, depth + 1) for e in t.elems)
        if isinstance(t, TTensor) and t.elem == FLOAT:
            return np.linspace(0.3, 0.9, 3 ** t.rank).reshape((3,) * t.rank)
        if isinstance(t, TTensor) and t.rank == 1:
            return [value(t.elem, depth + 1) for _ in range(3)]
        raise ValueError(f"no made-up value of type {t}")

    def ones(t, v):
        """A (co)tangent of the value v of type t: ones in every Float, () for an Integer or Bool."""
        if t == FLOAT:
            return 1.0
        if t in (INTEGER, BOOL):
            return ()
        if isinstance(t, TTuple):
            return tuple(ones(e, x) for e, x in zip(t.elems, v))
        if isinstance(t, TTensor) and t.elem == FLOAT:
            return np.ones_like(np.asarray(v, dtype=float))
        return [ones(t.elem, x) for x in v]

    for path in sorted((ROOT / "tests" / "corpus" / "knossos").glob("*.ks")):
        text, label = path.read_text(), f"tests/corpus/knossos/{path.name}"
        entry = re.search(r"^;; ENTRY: (\S+)", text, re.M)
        entry_args = re.search(r"^;; ARGS: (.*)$", text, re.M)
        try:
            m = labrys.load(str(path), backend="compiled")
        except Exception as exc:
            report(label, notes, str(exc).splitlines()[0][:160])
            continue
        names = m.names()
        error = None
        try:
            if "main" in names:
                with contextlib.redirect_stdout(io.StringIO()):
                    m.main()
            if entry and entry_args:
                getattr(m, entry.group(1))(*json.loads(entry_args.group(1)))
        except Exception as exc:
            error = str(exc).splitlines()[0][:160]
        report(f"{label} (load, main, entry)", notes, error)
        for name in names:
            if name == "main":
                continue
            decl = getattr(m, name).sigs[0].decl
            params = getattr(decl, "params", None)
            if params is None or not params:  # an edef, or no parameter: nothing to differentiate
                continue
            for method in ("rev", "fwd"):
                error = None
                try:
                    if entry and entry_args and name == entry.group(1):
                        args = tuple(json.loads(entry_args.group(1)))
                    else:
                        args = tuple(value(p.type) for p in params)
                    x = args[0] if len(args) == 1 else args
                    d = m.derive(method, name)
                    if method == "fwd":
                        dx = tuple(ones(p.type, a) for p, a in zip(params, args))
                        d(x, dx[0] if len(dx) == 1 else dx)
                    else:
                        d(x, ones(decl.ret, getattr(m, name)(*args)))
                except Exception as exc:
                    error = str(exc).splitlines()[0][:160]
                report(f"[{method} {name}] ({label})", notes, error)


ADBENCH = {"gmm": ("data/adbench/gmm/test.txt",), "ba": ("data/adbench/ba/test.txt",),
           "hand": ("data/adbench/hand/test.txt", "data/adbench/hand/simple_small/hand1_t26_c100.txt"),
           "lstm": ("data/adbench/lstm/lstm_l2_c1024.txt",)}


def adbench(notes: Notes, problems: list[str] | None, only: list[str] | None) -> None:
    """Every ADBench program under every derivation ``labrys adbench`` accepts, on compiled."""
    from labrys.ad.registry import REGISTRY
    from labrys.adbench import RUNNERS

    for problem, files in ADBENCH.items():
        if problems and problem not in problems:
            continue
        directions = ("reverse",) if problem in ("gmm", "lstm") else ("forward", "reverse")
        methods = [n for d in directions for n in REGISTRY.names(d)]
        for path in files:
            for method in methods:
                if only and method not in only:
                    continue
                error = None
                try:
                    result = RUNNERS[problem](str(ROOT / path), method, backend="compiled")
                    if not result.ok:
                        error = "the finite-difference check failed"
                except Exception as exc:
                    error = str(exc).splitlines()[0][:160]
                report(f"adbench {problem} {path} --deriv {method}", notes, error)
                sys.stdout.flush()


def tangent(x):
    """A tangent of x: ones in every Float."""
    if isinstance(x, tuple):
        return tuple(tangent(e) for e in x)
    return np.ones_like(x) if isinstance(x, np.ndarray) else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", action="store_true", help="only the examples")
    ap.add_argument("--derivations", action="store_true", help="only the derivations")
    ap.add_argument("--corpus", action="store_true",
                    help="only the Knossos corpus (tests/corpus/knossos): load, main, rev and fwd of each def")
    ap.add_argument("--adbench", action="store_true",
                    help="only ADBench: every program (small data files) under every derivation it accepts")
    ap.add_argument("--problem", help="with --adbench: only these problems (comma-separated: gmm,lstm,ba,hand)")
    ap.add_argument("--deriv", help="with --adbench: only these derivations (comma-separated)")
    args = ap.parse_args()
    notes = Notes()
    log = logging.getLogger("labrys.backends")
    log.addHandler(notes)
    log.setLevel(logging.INFO)
    log.propagate = False
    if args.adbench:
        adbench(notes, args.problem.split(",") if args.problem else None,
                args.deriv.split(",") if args.deriv else None)
        sys.stdout.flush()
        return
    if args.corpus:
        corpus(notes)
        sys.stdout.flush()
        return
    if not args.derivations:
        examples(notes)
    if not args.examples:
        derivations(notes)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
