"""labrys: automatic differentiation of the `.ks` language, every algorithm
of the seed papers as a printable source-to-source transformation."""
from .api import Derivative, Function, Module, evaluate, grad, jvp, load, vjp
from .errors import LabrysError
from .prelude.registry import METER
from .syntax.parser import parse_expr, parse_program
from .syntax.printer import show_expr, show_program
from .types.checker import check_program
from .types.tangent import tangent_type
from .verify import verify  # noqa: E402  (after .api, which it uses)

__all__ = ["Derivative", "Function", "LabrysError", "grad", "jvp", "vjp", "METER", "Module", "check_program", "evaluate", "load",
           "parse_expr", "parse_program", "show_expr", "show_program", "tangent_type", "verify"]
__version__ = "0.1.0"
