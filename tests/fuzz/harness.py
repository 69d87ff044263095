"""The fuzz harness: any `.ks` text through parse -> check -> run on every
backend -> every implemented registered derivation, classified.

Outcomes (:class:`Outcome`): ``ok`` (everything that ran, ran), ``error``
(a :class:`labrys.LabrysError` with a position: the user's mistake, reported
properly), and the bugs: ``bug`` (any other exception, or a LabrysError with
no position) and ``hang`` (over the time budget; only :func:`run_isolated`
can tell).  :func:`shrink` reduces a bug's input to a minimal `.ks` text
with the same signature (stage, exception type, first words of the message).

Inputs: mutants of ``examples/*.ks`` (:func:`mutants`), random well-typed
programs (``tests/strategies.py``, Hypothesis) and whatever else a caller
passes.  ``python tests/fuzz/run.py --help`` is the long run.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import re
import signal
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

import labrys
import labrys.context
from labrys.ad import REGISTRY
from labrys.backends import BACKENDS
from labrys.ir import nodes as ir
from labrys.ir.types import BOOL, FLOAT, INTEGER, STRING, TTensor, TTuple, Type

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.ks"))
CORPUS = sorted((ROOT / "tests" / "corpus").rglob("*.ks"))
MAX_DEPTH = 3000  # recursion limit inside fuzzed runs: infinite recursion fails fast


@dataclass
class Outcome:
    kind: str            # "ok" | "error" | "bug" | "hang"
    stage: str = ""      # "parse", "check", "run interp", "derive rev", "run rev on python", ...
    detail: str = ""

    @property
    def is_bug(self) -> bool:
        return self.kind in ("bug", "hang")

    def signature(self) -> tuple[str, str]:
        """What makes two bugs the same bug: the stage's kind and the message's head."""
        head = re.sub(r"[0-9]+", "N", self.detail.split(":")[0])[:60]
        return self.stage.split(" ")[0], head


# --- argument values ------------------------------------------------------------------

def sample(t: Type, rnd: random.Random) -> Any:
    """A Python value of labrys type ``t`` (None: no value of that type can be made)."""
    if t == FLOAT:
        return rnd.choice([0.5, -1.25, 2.0, 0.0, 3.7])
    if t == INTEGER:
        return rnd.choice([0, 1, 2, 3])
    if t == BOOL:
        return rnd.random() < 0.5
    if t == STRING:
        return "s"
    if isinstance(t, TTuple):
        parts = [sample(e, rnd) for e in t.elems]
        return None if any(p is None for p in parts) else tuple(parts)
    if isinstance(t, TTensor):
        n = rnd.choice([0, 1, 2, 3])
        if t.elem == FLOAT:
            return np.asarray([rnd.uniform(-2, 2) for _ in range(n ** t.rank)]).reshape((n,) * t.rank)
        if t.rank != 1:
            return None
        items = [sample(t.elem, rnd) for _ in range(n)]
        return None if any(i is None for i in items) else items
    return None


# --- one input ------------------------------------------------------------------------

def _classify(exc: BaseException, stage: str, text: str) -> Outcome:
    if isinstance(exc, labrys.LabrysError):
        if exc.span is None:
            return Outcome("bug", stage, f"error without a position: {exc.message}")
        return Outcome("error", stage, exc.message)
    if isinstance(exc, RecursionError):
        return Outcome("bug", stage, f"RecursionError: {exc}")
    return Outcome("bug", stage, f"{type(exc).__name__}: {exc}")


def _attempt(stage: str, text: str, fn: Callable[[], Any], errors: list[Outcome]) -> Any:
    """Run ``fn``; a bug propagates as :class:`Found`, a positioned error is noted (None)."""
    try:
        return fn()
    except Found:
        raise
    except Exception as exc:  # noqa: BLE001 - classifying every exception is the point
        out = _classify(exc, stage, text)
        if out.is_bug:
            raise Found(out) from exc
        errors.append(out)
        return None


class Found(Exception):
    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.detail)
        self.outcome = outcome


def derivations() -> list[str]:
    """Every implemented registered derivation (the registry's own list)."""
    return REGISTRY.names(internal=True)


def rotation(seed: int, compiled_derivations: int) -> Callable[[str, str], bool]:
    """Which derivations run on which backend in a bounded run: every derivation on
    every backend but ``compiled``, where a run of Numba compilations costs 0.2-1 s
    per derived def (Note [Fuzzing on a budget]); there only ``compiled_derivations``
    of them, a different slice of the registry for each ``seed``, so that successive
    samples and successive CI runs rotate through all of them."""
    names = derivations()
    k = max(0, min(compiled_derivations, len(names)))
    start = (seed * k) % len(names) if names else 0
    chosen = {names[(start + i) % len(names)] for i in range(k)}
    return lambda name, backend: backend != "compiled" or name in chosen


def run_input(text: str, backends: tuple[str, ...] = BACKENDS, seed: int = 0,
              derive: bool = True, derive_on: Callable[[str, str], bool] | None = None) -> Outcome:
    """``text`` through the whole pipeline, in this process.  ``derive_on(name,
    backend)`` says whether derivation ``name`` runs on ``backend`` (default: all)."""
    with contextlib.redirect_stdout(io.StringIO()):  # the programs' own print calls
        return _run_input(text, backends, random.Random(seed), derive, derive_on or (lambda n, b: True))


# Note [Fuzzing on a budget]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# One input through every backend and every derivation (38 registry entries) costs
# about 0.7 s of CPU on `interp` or `python` and 15 s on `compiled`, nearly all of it
# Numba compiling each derived def.  The suite's bounded run therefore runs every
# derivation on `interp` and `python` and a rotating slice of them on `compiled`
# (`rotation`); the seed of the run chooses the slice and the inputs, is printed
# with every failure, and the long run (tests/fuzz/run.py) runs everything everywhere.


def _run_input(text: str, backends: tuple[str, ...], rnd: random.Random, derive: bool,
               derive_on: Callable[[str, str], bool]) -> Outcome:
    errors: list[Outcome] = []
    saved = labrys.context.Limits.max_depth
    labrys.set_max_depth(MAX_DEPTH)
    try:
        program = _attempt("parse", text, lambda: labrys.parse_program(text, "fuzz.ks"), errors)
        if program is None:
            return errors[0]
        _attempt("fmt", text, lambda: _fmt_round_trip(text, program), errors)
        checked = _attempt("check", text, lambda: labrys.check_program(program), errors)
        if checked is None:
            return errors[0]
        defs = [d for d in checked.program.decls if isinstance(d, ir.Def)]
        for backend in backends:
            m = _attempt(f"load {backend}", text, lambda b=backend: labrys.Module(checked, backend=b), errors)
            if m is None:
                continue
            for d in defs[:6]:
                _call(m, d, d.name, [p.type for p in d.params], f"run {backend}", text, rnd, errors)
        if derive:
            m = labrys.Module(checked, backend="interp")
            single = [d for d in defs[:4] if len(m.function(d.name).sigs) == 1]
            for name in derivations():
                for d in single:
                    made = _attempt(f"derive {name}", text, lambda n=name, f=d.name: m.derive(n, f), errors)
                    if made is None:
                        continue
                    _attempt(f"show {name}", text, lambda x=made: x.source, errors)
                    for backend in backends:
                        if not derive_on(name, backend):
                            continue
                        mb = labrys.Module(checked, backend=backend)
                        dv = _attempt(f"derive {name} on {backend}", text,
                                      lambda x=mb, n=name, f=d.name: x.derive(n, f), errors)
                        if dv is not None:
                            _call(dv, dv.d, None, [p.type for p in dv.d.params], f"run {name} on {backend}",
                                  text, rnd, errors)
    except Found as found:
        return found.outcome
    finally:
        labrys.context.Limits.max_depth = saved
    return Outcome("error", errors[0].stage, errors[0].detail) if errors else Outcome("ok")


def _fmt_round_trip(text: str, program: ir.Program) -> None:
    from labrys.syntax.fmt import format_source

    out = format_source(text, "fuzz.ks")
    if labrys.parse_program(out, "fuzz.ks") != program or format_source(out, "fuzz.ks") != out:
        raise AssertionError("fmt changed the program or is not idempotent")


def _call(m: Any, d: ir.Def, name: Any, types: list[Type], stage: str, text: str, rnd: random.Random,
          errors: list[Outcome]) -> None:
    args = [sample(t, rnd) for t in types]
    if any(a is None for a in args):
        return
    fn = getattr(m, "function", None)
    target = m.function(name) if fn is not None and name is not None else m
    if hasattr(target, "sigs") and len(target.sigs) != 1:
        return
    _attempt(stage, text, lambda: target(*args), errors)


# --- isolation (hangs) ----------------------------------------------------------------

def run_isolated(text: str, timeout: float = 20.0, **kwargs: Any) -> Outcome:
    """:func:`run_input` in a forked child; over ``timeout`` seconds of CPU time
    is a hang (CPU, not wall time: on a shared machine the wall clock mostly
    measures the neighbours).  The backstop for a child that stops using CPU
    (a deadlock, a sleep): after ten times ``timeout`` of wall time, a child that
    ran or waited for a CPU under 1% of ``timeout`` in the last ``timeout`` seconds
    (``_busy_seconds``), and any
    child after a hundred times ``timeout``.  The wall-clock backstop alone called a
    starved child of a two-line program hung under a load of 10 (the long run, 2026-11)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a fresh deep-stack worker, then the pipeline
        try:
            os.close(r)
            import resource

            import labrys.util.deep as deep

            limit = int(math.ceil(timeout))
            resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
            deep._worker = None
            deep._jobs = type(deep._jobs)()
            out = run_input(text, **kwargs)
            os.write(w, json.dumps(asdict(out)).encode())
        finally:
            os._exit(0)
    os.close(w)
    import select

    waited, used = 0.0, 0.0
    while True:  # a child the machine's load starves is not hung: the wall clock waits while it gets CPU
        ready, _, _ = select.select([r], [], [], timeout)
        if ready:
            break
        waited += timeout
        now = _busy_seconds(pid)
        if waited >= 10 * timeout and (now is None or now - used < 0.01 * timeout or waited >= 100 * timeout):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return Outcome("hang", "run", f"no answer within {waited:g} s (stalled: {used:g} s running "
                                          "or waiting for a CPU)")
        used = now if now is not None else used
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
            return Outcome("hang", "run", f"no answer within {timeout:g} s of CPU time")
        return Outcome("bug", "run", f"the process died (status {status})")
    return Outcome(**json.loads(b"".join(chunks)))


def _busy_seconds(pid: int) -> float | None:
    """Seconds the child's threads ran or waited, runnable, for a CPU (Linux's
    schedstat; its CPU time where there is none).  A starved child is runnable and
    accumulates waiting time; a stalled one (deadlocked, asleep) accumulates neither.
    CPU time alone called a niced child under a load of 7 hung: 5 s of CPU in 330 s
    of wall time, on a one-line def (the long run of seed 9909)."""
    total, found = 0, False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        tasks = []
    for tid in tasks:
        try:
            ran, waited, _ = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()
            total, found = total + int(ran) + int(waited), True
        except (OSError, ValueError):
            continue
    return total / 1e9 if found else _cpu_seconds(pid)


def _cpu_seconds(pid: int) -> float | None:
    """CPU seconds a child has used (Linux's /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


# --- inputs ---------------------------------------------------------------------------

_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[()\[\]]|[^\s()\[\]"]+')
_REPLACEMENTS = ["0", "1", "-1", "0.0", "1e400", "-0.0", "3", "1000", "x", "v", "(size v)", "true",
                 "(index 0 v)", "(build 0 (lam (i : Integer) 1.0))", "Float", "Integer", "(Vec Float)"]


def strip_comments(text: str) -> str:
    return re.sub(r"#\|.*?\|#", " ", re.sub(r";[^\n]*", " ", text), flags=re.S)


def mutants(text: str, rnd: random.Random, n: int) -> list[str]:
    """Token-level mutants: replace a token (by one of the file's own tokens or a
    chosen one), delete it, duplicate it, or swap two."""
    toks = _TOKEN.findall(strip_comments(text))
    out = []
    for _ in range(n):
        t = list(toks)
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(t))
            op = rnd.randrange(5)
            if op == 0:
                t[i] = rnd.choice(_REPLACEMENTS)
            elif op == 1:
                t[i] = rnd.choice(toks)
            elif op == 2 and t[i] not in "()[]":
                del t[i]
            elif op == 3:
                t.insert(i, t[rnd.randrange(len(t))])
            else:
                j = rnd.randrange(len(t))
                t[i], t[j] = t[j], t[i]
        out.append(" ".join(t))
    return out


# --- shrinking --------------------------------------------------------------------------

def _candidates(toks: list[str]) -> list[list[str]]:
    """Smaller token lists: drop a top-level form; replace a bracketed form by one
    of its elements; drop a token."""
    out: list[list[str]] = []
    spans, stack = [], []
    for i, tk in enumerate(toks):
        if tk in "([":
            stack.append(i)
        elif tk in ")]" and stack:
            spans.append((stack.pop(), i, len(stack)))
    spans.sort(key=lambda s: (s[2], s[0]))
    for a, b, depth in spans:
        out.append(toks[:a] + toks[b + 1:])
        if depth:
            for k in range(a + 1, b):
                if toks[k] not in "()[]":
                    out.append(toks[:a] + [toks[k]] + toks[b + 1:])
    return out


def shrink(text: str, still_bug: Callable[[str], bool], budget: int = 400) -> str:
    """A minimal text (no single candidate step keeps the bug) within ``budget`` tries."""
    toks = _TOKEN.findall(text)
    tries, improved = 0, True
    while improved and tries < budget:
        improved = False
        for cand in _candidates(toks):
            tries += 1
            if tries > budget:
                break
            if still_bug(" ".join(cand)):
                toks, improved = cand, True
                break
    from labrys.syntax.fmt import format_text

    small = " ".join(toks)
    try:
        return format_text(small)
    except labrys.LabrysError:
        return small


def same_bug(outcome: Outcome, runner: Callable[[str], Outcome]) -> Callable[[str], bool]:
    sig = outcome.signature()
    return lambda text: (lambda o: o.is_bug and o.signature() == sig)(runner(text))

