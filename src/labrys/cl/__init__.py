"""CL, the categorical combinator language of Ellis, Peyton Jones & Fitzgibbon's
working notes (§6, Figs 9–11): syntax, printer, parser, typing, semantics, and
the conversions from and back to the IR.  ``[CL f]`` (``labrys.ad.cl``) is f
converted to CL and back; ``docs/cl-and-procedures.md`` explains it."""
from .back import from_cl
from .convert import convert, to_cl
from .parser import parse
from .printer import show, show_def
from .semantics import evaluate, run_def
from .syntax import CLDef, Term, comp
from .typing import check_def, infer

__all__ = ["CLDef", "Term", "check_def", "comp", "convert", "evaluate", "from_cl", "infer", "parse", "run_def",
           "show", "show_def", "to_cl"]
