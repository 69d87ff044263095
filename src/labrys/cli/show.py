"""``labrys show`` (derived programs as `.ks`, pass by pass) and ``labrys algorithms``."""
from __future__ import annotations

import json
import sys

from ..ad import REGISTRY
from ..ad.default_gradient import default_gradient
from ..api import load
from ..syntax.printer import show_decl

DEMO = ("fwd", "rev")  # the 2019 Knossos notes' Demo: the stages of both, shared ones once


def highlight(text: str) -> None:
    """Print `.ks` text, syntax-highlighted when writing to a terminal."""
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.syntax import Syntax

        Console().print(Syntax(text, "scheme", theme="ansi_dark", background_color="default"))
    else:
        sys.stdout.write(text + "\n")


def rule(title: str) -> None:
    print("-" * 72)
    print(title)
    print("-" * 72)


def show(path: str, fn: str, stages: bool, derivation: str | None, optimise: bool, timings: bool = False,
         wrt: str | None = None) -> int:
    """No derivation named: the default gradient (with which one and why), or with
    ``stages`` the 2019 Demo's stages.  ``wrt``: comma-separated parameters
    (docs/activity.md), for ``rev``; the Demo's stages then show rev only."""
    module = load(path, backend="interp")
    if derivation is None and not wrt:
        sigs = module.function(fn).sigs
        if len(sigs) == 1:
            choice = default_gradient(module.derivations, sigs[0])
            print(f"; the default gradient (labrys.grad, labrys adbench) is {choice.method}: {choice.reason}")
            derivation = None if stages else choice.method
    if not stages:
        derived = module.derive(derivation or "rev", fn, optimise=optimise, wrt=wrt)
        terms = [s.text for s in module.derivations.derive(derived.derivation, derived.sig).stages if s.text]
        if terms:  # a translation through another language (CL): its term, then the def it comes back as
            sys.stdout.write(terms[-1] + "\n\n")
        highlight(derived.source)
        return 0
    active = module.derive(derivation or "rev", fn, wrt=wrt)
    sig = active.sig
    shown: set[str] = set()
    for name in (derivation,) if derivation else DEMO if not wrt else ("rev",):
        for stage in module.derivations.derive(name, sig, views=True, wrt=active.wrt).stages:
            if stage.title in shown:
                continue
            shown.add(stage.title)
            rule(stage.title + (f"   [{stage.seconds * 1e3:.1f} ms]" if timings else ""))
            highlight(stage.text if stage.text is not None else show_decl(stage.d))
    return 0


def algorithms_table(as_json: bool = False) -> str:
    rows = [{"name": d.name, "paper": f"{d.paper.cite()}, {d.paper.title}", "where": d.where,
             "convention": f"{d.convention.name}: {d.convention.shape}", "language": d.language,
             "status": d.status, "backend": (f"compiled {d.compiled_where}".strip() if d.compiled else "python")
             if d.implemented else "",
             "summary": d.summary, "internal": d.internal} for d in REGISTRY]
    if as_json:
        return json.dumps(rows, indent=2, ensure_ascii=False)
    cols = [("name", "name"), ("status", "status"), ("convention", "called"), ("language", "accepts"),
            ("where", "where")]
    lines, family = [], None
    widths = {k: max(len(h), *(len(r[k]) for r in rows)) for k, h in cols}
    header = "  ".join(h.ljust(widths[k]) for k, h in cols).rstrip()
    for d, r in zip(REGISTRY, rows):
        if d.family != family:
            family = d.family
            lines += ["", f"{d.paper.cite()}: {d.paper.title}", header]
        lines.append("  ".join(r[k].ljust(widths[k]) for k, _ in cols).rstrip()
                     + ("   (internal step)" if d.internal else ""))
    return "\n".join(lines).lstrip("\n")
