"""``labrys prims``: the primitive reference, generated from the primitive table
(so it is never out of date; docs/primitives.md is its ``--markdown`` output)."""
from __future__ import annotations

from ..ad.registry import coverage
from ..backends.numba_source import support
from ..types.primitives import PRIMITIVES, Primitive

SECTIONS = (  # the prelude module (or algorithm run time) that registers a primitive -> its section
    ("labrys.prelude.arith", "Arithmetic, comparison and logic"),
    ("labrys.prelude.maths", "Maths on Floats"),
    ("labrys.prelude.vectors", "Vectors and tensors"),
    ("labrys.prelude.loops", "Loops: build, sumbuild, sum, fold, map"),
    ("labrys.prelude.tangents", "Tangent-space operations (used by derivative code)"),
    ("labrys.prelude.knossos", "Knossos compatibility"),
    ("labrys.prelude.sparse_build", "Knossos compatibility"),
    ("labrys.prelude.misc", "Printing, hints and test data"),
    ("labrys.prelude.linear_maps", "Linear maps (the Jacobians of Ellis et al.'s Fig. 2)"),
    ("labrys.ad.deltas", "Run time of Krawiec et al.'s algorithms: Delta values and the tape"),
    ("labrys.ad.dual_io", "Run time of Krawiec et al.'s algorithms: seeding inputs, reading gradients"),
)
DERIVATIVE = {"rule": "derivative rules", "zero": "derivative zero", "structural": "moves reals",
              "own rule": "the algorithms' own rules", "value": "", "no rule": "not differentiable"}


def _section(p: Primitive) -> str:
    module = p.typeof.__module__
    return next((title for prefix, title in SECTIONS if module.startswith(prefix)), "Other primitives")


def _facts(p: Primitive, treats: dict[str, str]) -> str:
    kinds = {treats[name] for name in ("rev",) if name in treats} or set(treats.values())
    facts = [DERIVATIVE[k] for k in sorted(kinds) if DERIVATIVE.get(k)]
    if p.impure:
        facts.append("effect")
    facts.append("compiled" if support(p) != "python" else "python backend only")
    return "; ".join(facts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference(markdown: bool = False) -> str:
    table = coverage()
    by_section: dict[str, list[Primitive]] = {}
    for p in PRIMITIVES.values():
        by_section.setdefault(_section(p), []).append(p)
    order = list(dict.fromkeys([title for _, title in SECTIONS] + ["Other primitives"]))
    lines = []
    if markdown:
        lines += ["# Primitives", "",
                  "Every primitive of the prelude (`labrys prims --markdown` writes this page from the primitive",
                  "table, `src/labrys/types/primitives.py`). All take one argument, a tuple when called with",
                  "several, and are overloaded by argument type; a type suffix (`add@ff`) is accepted and ignored.",
                  "\"derivative rules\": forward and reverse rules in the entry; \"derivative zero\": comparisons,",
                  "sizes and the like; \"compiled\": the compiled backend has code for it.", ""]
    for title in order:
        prims = sorted(by_section.get(title, []), key=lambda p: p.name.lower())
        if not prims:
            continue
        if markdown:
            lines += [f"## {title}", "", "| primitive | what it does | facts |", "| --- | --- | --- |"]
            lines += [f"| `{p.name}` | {_cell(p.doc)} | {_facts(p, table[p.name])} |" for p in prims]
            lines.append("")
        else:
            width = max(len(p.name) for p in prims)
            lines += [title] + [f"  {p.name.ljust(width)}  {p.doc}" for p in prims] + [""]
    return "\n".join(lines).rstrip() + "\n"
