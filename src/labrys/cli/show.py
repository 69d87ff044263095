"""``labrys show``: derived programs as `.ks`, and the pipeline view."""
from __future__ import annotations

import sys

from ..api import load
from ..syntax.printer import show_decl


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


def show(path: str, fn: str, stages: bool, derivation: str, optimise: bool) -> int:
    module = load(path, backend="interp")
    if stages:
        from ..ad.stages import pipeline

        for title, d in pipeline(module.derivations, module.derive("rev", fn).sig):
            rule(title)
            highlight(show_decl(d))
        return 0
    derived = module.derive(derivation, fn, optimise=optimise)
    highlight(derived.source)
    return 0

