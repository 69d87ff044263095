"""A `.ks` file cannot make labrys execute code it wrote: generated source
holds user text only as mangled identifiers (Note [Generated names]) or as
string constants."""
from __future__ import annotations

import ast

import pytest

import labrys
from labrys.backends.numba_source import BUILTINS_USED
from labrys.backends.pysource import NAME_PATTERN

HOSTILE_STRINGS = ['"); __import__(\'os\').system(\'echo PWNED\') #', "back\\slash\n'''\"\"\" ",
                   "ünïcødé λ \t end", "{__import__}"]
HOSTILE_NAMES = ["__import__", "eval", "a\\b", "x$1"]


def ks_literal(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def hostile_program() -> str:
    binds = " ".join(f"({n} {ks_literal(s)})" for n, s in zip(HOSTILE_NAMES, HOSTILE_STRINGS))
    return f"""
(def __import__ String ((exec : Float) (os.system : Integer) (λ' : String))
  (let ({binds}
        (__builtins__ (add exec 1.0))
        (x (print __import__ eval a\\b x$1 os.system λ')))
   (assert (gt __builtins__ 0.0) eval)))
(def getattr Float ((__class__ : Float) (os.system : Vec Float))
  (let ((eval (sumbuild (size os.system) (lam (exec : Integer) (mul __class__ (index exec os.system)))))
        (__builtins__ (build 3 (lam (λ' : Integer) (to_float λ')))))
    (add eval (sum __builtins__))))
"""


def generated_sources(backend: str) -> list[str]:
    m = labrys.load(hostile_program(), name="hostile.ks", backend=backend)
    assert m["__import__"](1.0, 2, 'ü"\n') == HOSTILE_STRINGS[1]
    assert m.getattr(2.0, [1.0, 2.0]) == 9.0
    return list(m.backend.sources.values())


def user_text_appears_only_as_constants(source: str) -> None:
    tree = ast.parse(source)
    constants = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, (ast.FunctionDef, ast.arg)):
            names = [node.name if isinstance(node, ast.FunctionDef) else node.arg]
        elif isinstance(node, ast.Attribute):
            assert node.attr in ("left", "value", "shape", "copy", "empty", "zeros", "full", "exp", "log", "sin",
                                 "cos", "tan", "tanh", "sinh", "cosh", "sqrt", "lgamma", "erf",
                                 # closures (Note [Defunctionalisation]): the python backend's marks, the heap
                                 "_ks", "append", "int64", "empty_list"), node.attr
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.asname or a.name for a in node.names if a.name not in ("numpy", "math")]
        for name in names:
            assert NAME_PATTERN.fullmatch(name) or name in BUILTINS_USED, f"unexpected identifier {name!r}"
    assert any("PWNED" in c for c in constants) or "String" not in source


@pytest.mark.parametrize("backend", ["python", "compiled"])
def test_generated_source_holds_no_user_code(backend: str) -> None:
    sources = generated_sources(backend)
    assert len(sources) == 2
    for source in sources:
        user_text_appears_only_as_constants(source)


def test_hostile_function_runs_compiled() -> None:
    m = labrys.load(hostile_program(), name="hostile.ks", backend="compiled")
    m.getattr(2.0, [1.0, 2.0])
    assert "getattr" not in m.backend.fallbacks
