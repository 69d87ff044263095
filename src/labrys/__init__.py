"""labrys: automatic differentiation of the `.ks` language, every algorithm
of the seed papers as a printable source-to-source transformation."""
from . import prelude  # noqa: F401  (fills the primitive table: Note [Primitive table])
from .api import Derivative, Function, Module, check_program, evaluate, load
from .context import METER, set_fast_math, set_max_depth, set_threads
from .errors import LabrysError
from .memory import set_max_memory
from .syntax.parser import parse_expr, parse_program
from .syntax.printer import show_expr, show_program
from .transforms import default_method, grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp, value_and_grad, vjp
from .types.tangent import tangent_type
from .verify import verify
from .version import __version__

__all__ = ["Derivative", "Function", "LabrysError", "default_method", "grad", "hessian", "hvp", "jacfwd", "jacobian",
           "jacrev", "jvp",
           "value_and_grad", "vjp", "METER", "Module", "check_program",
           "evaluate", "load", "parse_expr", "parse_program", "show_expr", "show_program", "tangent_type", "verify",
           "set_fast_math", "set_max_depth", "set_max_memory", "set_threads",
           "__version__"]
