"""Index checks hoisted out of generated loops.

Note [Hoisted index checks]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
Every ``index`` the compiled backend generates is checked
(``v[_checkindex(i, v.shape[0])]``): an index out of range must be an error,
re-run on ``python`` for the interpreter's message (Note [Compiled
fallback]).  Inside a loop the check is a call and a branch per element,
and it keeps LLVM from vectorising the loop: on ADBench GMM's gradient
the checks were 40% of the time.  In ``for i in range(n):`` a statement
at the top level of the body runs on every iteration, so its ``v[i]``, with
``v`` not assigned in the loop, is in range on every iteration exactly when
``n <= v.shape[0]``.  That one comparison is made before the loop and the
element is read unchecked.  If it fails the original loop would also have
failed (at iteration ``v.shape[0]``, or earlier on another error), so the
call fails either way and is re-run on ``python``, which reports the
interpreter's error: no answer changes.  Reads under an ``if`` in the body,
or in a nested loop, are left checked (they might not run).
"""
from __future__ import annotations

import re
from typing import Any

_FOR = re.compile(r"^( *)for (\w+) in range\(([\w.]+)\):$")
_ASSIGNED = re.compile(r"^ *([\w, ]+?) *=(?!=)")
_FOR_VAR = re.compile(r"^ *for (\w+) in ")
Line = tuple[str, Any]


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def hoist_index_checks(lines: list[Line]) -> list[Line]:
    """The function body ``lines`` with loop-variable index checks hoisted (Note [Hoisted index checks])."""
    texts = [t for t, _ in lines]
    before: dict[int, list[str]] = {}
    for k, text in enumerate(texts):
        m = _FOR.match(text)
        if not m:
            continue
        pad, i, n = m.group(1), m.group(2), m.group(3)
        end = k + 1
        while end < len(texts) and (not texts[end].strip() or _indent(texts[end]) > len(pad)):
            end += 1
        assigned: set[str] = set()
        for body_line in texts[k + 1:end]:
            a = _ASSIGNED.match(body_line) or _FOR_VAR.match(body_line)
            if a:
                assigned.update(x.strip() for x in a.group(1).split(",") if x.strip())
        top = len(pad) + 4
        aliases = [i] + [a.group(1) for t in texts[k + 1:end] if _indent(t) == top  # (v_j = i): the generator's names
                         for a in [re.match(r"^ *(\w+) = " + re.escape(i) + "$", t)] if a]
        arrays = []
        for name in aliases:
            arrays += [v for v in _unchecked_reads(texts, k + 1, end, top, name, assigned) if v not in arrays]
        if arrays:
            before[k] = [line for v in arrays for line in (f"{pad}if {n} > {v}.shape[0]:",
                                                           f'{pad}    raise IndexError("index out of range")')]
    out: list[Line] = []
    for k, (text, span) in enumerate(zip(texts, (s for _, s in lines))):
        out += [(check, None) for check in before.get(k, ())]
        out.append((text, span))
    return out


def _unchecked_reads(texts: list[str], start: int, end: int, top: int, i: str, assigned: set[str]) -> list[str]:
    """Rewrite the reads ``v[_checkindex(i, v.shape[0])]`` of texts[start:end] at indentation ``top`` to ``v[i]``
    (``v`` not assigned in the loop); the arrays so read, in order."""
    read = re.compile(r"\b(\w+)\[_checkindex\(" + re.escape(i) + r", \1\.shape\[0\]\)\]")
    arrays: list[str] = []

    def unchecked(r: re.Match) -> str:
        if r.group(1) in assigned or r.group(1) in (i, "_"):
            return r.group(0)
        if r.group(1) not in arrays:
            arrays.append(r.group(1))
        return f"{r.group(1)}[{i}]"
    for j in range(start, end):
        if _indent(texts[j]) == top:
            texts[j] = read.sub(unchecked, texts[j])
    return arrays
