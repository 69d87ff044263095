"""The registry of derivations and the primitive table are the only lists of
algorithms and primitives: every consumer follows them, a derivation or a
primitive registered from this file works everywhere with no other change,
and the layers import only downward."""
from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys import LabrysError
from labrys.ad import REGISTRY
from labrys.ad.derivation import FWD, WHOLE_LANGUAGE, Derivation, Paper
from labrys.ad.pipeline import Pass
from labrys.ad.registry import coverage
from labrys.backends.numba_source import support
from labrys.cli.main import build_parser, main
from labrys.ir import nodes as ir
from labrys.ir.build import C, V, tup
from labrys.ir.names import DerivedName, erase_types
from labrys.ir.types import FLOAT, TTuple
from labrys.types.primitives import PRIMITIVES, primitive, unregister
from labrys.types.tangent import tangent_type
from labrys.verify import algorithms

SRC = Path(labrys.__file__).parent
ROOT = SRC.parent.parent


# --- 1. every consumer iterates the registry ----------------------------------------------

def test_registry_names_are_unique_and_every_entry_is_complete():
    names = [d.name for d in REGISTRY]
    assert len(names) == len(set(names))
    for d in REGISTRY:
        assert d.paper.authors and d.paper.year and d.where and d.convention.shape
        if d.implemented:
            assert d.treats is not None, f"{d.name}: how does it treat primitives?"
            assert all(isinstance(p, Pass) for p in d.pipeline)


def test_verify_cost_api_and_bench_use_every_forward_and_reverse_derivation():
    from labrys.bench.labrys_side import reverse_derivations

    forward, reverse = REGISTRY.names("forward"), REGISTRY.names("reverse")
    assert {"fwd", "fwdt", "dualfwd"} <= set(forward) and {"rev", "deltarev"} <= set(reverse)
    assert [a.name for a in algorithms()] == [n for n in REGISTRY.names() if n in forward + reverse]
    assert [name for name, _ in reverse_derivations()] == reverse


def test_the_checker_knows_exactly_the_registered_derivations():
    base = "(def f Float (x : Float) (mul x x))\n"
    for d in REGISTRY:
        text = base + f"(gdef {d.name} [f Float])\n"
        if d.implemented:
            labrys.load(text)
        else:
            with pytest.raises(LabrysError, match=f"'{d.name}'.*not implemented yet"):
                labrys.load(text)


def test_labrys_algorithms_lists_every_derivation(capsys):
    assert main(["algorithms", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == [d.name for d in REGISTRY]
    assert "implemented" in {r["status"] for r in rows} <= {"implemented", "planned"}
    assert main(["algorithms"]) == 0
    text = capsys.readouterr().out
    assert "Krawiec" in text and "Vákár & Smeding (2022)" in text and "seed" not in text


def test_show_help_names_every_derivation():
    show = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == "show")[1]
    help_text = show.format_help().replace("\n", " ")
    for name in REGISTRY.names(internal=True):
        assert name in help_text


# --- 2. a derivation registered from this file --------------------------------------------

H = 1e-6
TOY = Paper("A test", 2026, "Central differences as a derivation")


def _numfwd(d: ir.Def, work) -> ir.Def:
    """[numfwd f](x, dx) = (f(x + h dx) - f(x - h dx)) / 2h, for Float-structured S and T."""
    name = erase_types(d.name)
    x, dx = V("x"), V("dx")
    plus = ir.Call(name, C("ts_add", x, C("ts_scale", ir.const(H), dx)))
    minus = ir.Call(name, C("ts_add", x, C("ts_scale", ir.const(-H), dx)))
    body = C("ts_scale", ir.const(1 / (2 * H)), C("ts_add", plus, C("ts_neg", minus)))
    params = (ir.Param("x", d.arg_type), ir.Param("dx", tangent_type(d.arg_type)))
    return ir.Def(DerivedName("numfwd", name), tangent_type(d.ret), params, body, span=d.span)


NUMFWD = Derivation("numfwd", "central finite differences", "Tests", TOY, "§1", FWD, WHOLE_LANGUAGE,
                    lambda s, t: (TTuple((s, tangent_type(s))), tangent_type(t)),
                    (Pass("numfwd", "Central differences [numfwd f]", _numfwd),), treats=lambda p: "value")


@pytest.fixture
def numfwd():
    REGISTRY.register(NUMFWD)
    yield NUMFWD
    REGISTRY.unregister("numfwd")


PROGRAM = """(def f Float ((x : Float) (y : Float)) (mul (sin x) (exp y)))
(gdef numfwd [f (Tuple Float Float)])
(def main Integer () (print ([numfwd f] (tuple 0.5 0.25) (tuple 1.0 0.0)) "\\n"))
"""


def test_a_registered_derivation_works_in_every_tool(numfwd, tmp_path, capsys):
    path = tmp_path / "toy.ks"
    path.write_text(PROGRAM)
    expected = math.cos(0.5) * math.exp(0.25)
    m = labrys.load(path)
    assert m["[numfwd f]"]((0.5, 0.25), (1.0, 0.0)) == pytest.approx(expected, rel=1e-8)   # gdef + call
    assert labrys.jvp(m.f, (0.5, 0.25), (1.0, 0.0), method="numfwd")[1] == pytest.approx(expected, rel=1e-8)
    assert labrys.grad(m.f, method="numfwd")(0.5, 0.25) == pytest.approx(
        (expected, math.sin(0.5) * math.exp(0.25)), rel=1e-8)                              # grad by columns
    assert main(["algorithms"]) == 0 and "numfwd" in capsys.readouterr().out
    assert main(["show", str(path), "f", "--deriv", "numfwd", "--stages"]) == 0
    assert "Central differences [numfwd f]" in capsys.readouterr().out
    assert main(["run", str(path), "--backend", "interp"]) == 0
    assert float(capsys.readouterr().out) == pytest.approx(expected, rel=1e-8)
    main(["verify", str(path), "f", "--json", "--backend", "interp"])
    row = json.loads(capsys.readouterr().out)[0]
    assert row["numfwd"]["ok"] is True and row["agree"]["ok"] is True
    assert main(["cost", str(path), "f", "--deriv", "numfwd", "--sizes", "1,2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["numfwd"]["ops"]


def _trace(d: ir.Def, work) -> ir.Def:
    """[trace f] x = (f x, the tuple of the values f's top-level lets bind)."""
    body, binders = d.body, []
    while isinstance(body, ir.Let) and isinstance(body.binder, str):
        binders.append(V(body.binder))
        body = body.body

    def wrap(e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Let) and isinstance(e.binder, str):
            return ir.Let(e.binder, e.rhs, wrap(e.body))
        return tup(e, tup(*binders))
    ret = TTuple((d.ret, TTuple(tuple(FLOAT for _ in binders))))
    return ir.Def(DerivedName("trace", erase_types(d.name)), ret, d.params, wrap(d.body), span=d.span)


def test_a_signature_known_only_after_generation(tmp_path):
    """Note [Signatures after generation]: the type of [trace f] depends on f's body."""
    trace = Derivation("trace", "the values of f's lets", "Tests", TOY, "§2", FWD, WHOLE_LANGUAGE, None,
                       (Pass("trace", "Traced", _trace),), treats=lambda p: "value")
    REGISTRY.register(trace)
    try:
        m = labrys.load("""(def f Float (x : Float) (let ((a (mul x x)) (b (add a 1.0))) (mul a b)))
(gdef trace [f Float])
(def g Float (x : Float) (get$2$2 (get$2$2 ([trace f] x))))""")
        assert m.g(3.0) == 10.0
        assert m["[trace f]"](2.0) == (20.0, (4.0, 5.0))
    finally:
        REGISTRY.unregister("trace")


# --- 3. a primitive registered from this file ----------------------------------------------

@pytest.fixture
def cube():
    p = primitive("cube", lambda t: t if t == FLOAT else None, lambda t: lambda x: x * x * x,
                  "(cube x): x to the third.", foldable=True, numba=lambda xs, types, res: f"{xs[0]} ** 3",
                  fwd=lambda a, d, t, y: C("mul", C("mul", ir.const(3.0), C("mul", a[0], a[0])), d[0]),
                  rev=lambda a, r, t, y: (C("mul", C("mul", ir.const(3.0), C("mul", a[0], a[0])), r),))
    yield p
    unregister("cube")


CUBE = "(def f Float (x : Float) (cube (sin x)))"


def test_a_registered_primitive_works_everywhere(cube):
    m = labrys.load(CUBE)
    x = 0.7
    assert m.f(x) == pytest.approx(math.sin(x) ** 3)                               # evaluation
    with pytest.raises(LabrysError, match="no overload of 'cube'"):                  # type checking
        labrys.load("(def g Float (n : Integer) (cube n))")
    slope = 3 * math.sin(x) ** 2 * math.cos(x)
    for method in REGISTRY.names("reverse"):                                          # every derivation
        assert labrys.grad(m.f, method=method)(x) == pytest.approx(slope, rel=1e-12), method
    for method in REGISTRY.names("forward"):
        assert labrys.jvp(m.f, (x,), (1.0,), method=method)[1] == pytest.approx(slope, rel=1e-12), method
    compiled = labrys.load(CUBE, backend="compiled")                                 # compilation
    assert compiled.f(x) == pytest.approx(math.sin(x) ** 3)
    assert labrys.grad(compiled.f)(x) == pytest.approx(slope, rel=1e-12)
    assert compiled.backend.fallbacks == {}
    assert coverage()["cube"]["rev"] == "rule" and support(cube) == "lowered"


# --- 4. every primitive is classified for every algorithm and backend -----------------------

NO_DERIVATIVE = {  # primitives no derivation differentiates, and why
    "digamma": "its derivative, trigamma, is not in the prelude",
    "rfold": "the reverse sweep of fold in [rev f]; second derivatives of folds go [rev [fwd f]]",
    **{name: "Knossos's sparse builders: the values come out of a function argument, which rules over atoms "
             "cannot differentiate (Note [Derivatives of buildFromSparse])"
       for name in ("buildFromSparse", "buildFromSparseTupled")},
    **{name: "run-time support of Krawiec et al.'s algorithms, called by generated code only"
       for name in ("zeroS", "oplus", "otimes", "deltaInputs", "delta2Inputs", "delta1Inputs", "deltaGradient",
                    "delta2Gradient", "delta1Gradient", "dualZip")},
    **{name: "run-time support of Smeding & Vákár's algorithms, called by generated code only"
       for name in (*(f"dr{v}{io}" for v in ("c", "t", "1", "2", "3", "4", "5") for io in ("Inputs", "Gradient")),)},
}
NOT_COMPILED = {  # what still runs on the python backend (docs/backends.md), to shrink
    "$BENCH", "$check", "$ranhashdoub", "Vec_init", "bogOpen", "bogPack", "ccl",
    "dualZip",
    "lmAdd", "lmApply", "lmApplyR", "lmBuild", "lmBuildT", "lmCompose", "lmFold", "lmHCat", "lmHCatV", "lmMake",
    "lmOne", "lmScale", "lmSumBuild", "lmTranspose", "lmVCat", "lmVCatV", "lmZero", "nTimes",
    "pr", "print", "rfold", "setAt", "shape", "unzip", "buildFromSparse", "buildFromSparseTupled",
    "dotv",
    # CHAD's dynamic linear layer (closures, append-tree copowers, symbolic zeros): python backend;
    # where its §9 lowering applies (ad/chad_lower.py) the generated code calls none of them
    "chadZero", "chadZeroLike", "chadPlus", "chadOpen", "chadLeft", "chadRight", "chadApp", "chadIndex", "chadOneHot",
    "chadSumVec", "chadSumBuild", "chadCopow", "chadCopowFold", "chadFoldR", "chadIFoldR", "chadFoldF",
    "chadIFoldF", "chadDense", "chadZip", "chadUnzip",
    # Smeding & Vákár's run time (labrys.ad.dualrev_runtime, dualrev_staged): Python objects per run;
    # dualrevtape's tape and dualrev's Contribs compile (labrys.backends.numba_tape)
    "drNewId", "drZeroS", "drPlusS", "dr1Zero", "dr2Zero", "dr2Tag",
    "dr2Call", "dr3Zero", "dr3Call", "dr4Zero", "dr4Call", "dr5Zero", "dr5Call",
    *(f"dr{v}{io}" for v in ("1", "2", "3", "4", "5") for io in ("Inputs", "Gradient"))}


def test_every_primitive_is_classified_for_every_algorithm():
    table = coverage()
    assert set(table) == set(PRIMITIVES)
    implemented = {d.name for d in REGISTRY if d.implemented}
    for name, row in table.items():
        assert set(row) == implemented, name
        assert set(row.values()) <= {"rule", "zero", "structural", "own rule", "value", "no rule"}, name
        if "no rule" in row.values():
            assert name in NO_DERIVATIVE, f"{name}: give it derivative rules, nondiff=True, or a reason here"


def test_every_primitive_is_classified_for_every_backend():
    not_compiled = {name for name, p in PRIMITIVES.items() if support(p) == "python"}
    assert not_compiled <= NOT_COMPILED, f"new primitives without a compiled form: {not_compiled - NOT_COMPILED}"


# --- 5. the driver lints every stage of every algorithm on the examples and corpus -----------

PROGRAMS = sorted((ROOT / "examples").glob("*.ks")) + sorted((ROOT / "tests" / "corpus").glob("*/*.ks"))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_pass_of_every_algorithm_makes_well_typed_code(path, monkeypatch):
    monkeypatch.setenv("LABRYS_LINT", "1")
    try:
        m = labrys.load(path)
    except LabrysError:
        pytest.skip("the program itself asks for an unimplemented derivation")
    made = 0
    for d in m.program.decls:
        if not isinstance(d, ir.Def) or isinstance(d.name, DerivedName):
            continue
        sig = m.checked.functions.resolve(d.name, d.arg_type)
        for name in REGISTRY.names(internal=True):
            try:
                m.derivations.derive(name, sig, views=True)  # every pass type-checked and linted
                made += 1
            except LabrysError as exc:
                assert not exc.message.startswith("internal"), f"{path.name} {name}: {exc}"
    assert made > 0


# --- 6. layers import only downward; backends know nothing of AD ------------------------------

LAYERS = [{"errors", "context", "memory", "util", "version"}, {"ir"}, {"values", "syntax"}, {"types"}, {"prelude"},
          {"opt"}, {"cl"}, {"ad"}, {"backends"},
          {"api", "transforms", "cost", "verify", "verify_points", "verify_sizes", "checks", "adbench", "bench", "cli",
           "__init__", "__main__"}]


def _layer(part: str) -> int:
    return next(k for k, layer in enumerate(LAYERS) if part in layer)


def _imports(path: Path) -> list[str]:
    """The labrys packages a module imports (relative imports resolved)."""
    package = path.relative_to(SRC).parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            target = base + tuple((node.module or "").split(".")) if node.module else base
            names = [target[0]] if target else [a.name for a in node.names]
            out += [n.split(".")[0] for n in names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("labrys."):
            out.append(node.module.split(".")[1])
    return out


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_layers_import_only_downward(path):
    parts = path.relative_to(SRC).parts
    own = _layer(parts[0].removesuffix(".py"))
    for target in _imports(path):
        target = target.removesuffix(".py")
        assert _layer(target) <= own, f"{'/'.join(parts)} (layer {own}) imports {target} (layer {_layer(target)})"


def test_no_backend_imports_ad():
    for path in (SRC / "backends").glob("*.py"):
        assert "ad" not in _imports(path), path.name


def test_a_nested_program_is_not_differentiated_by_a_backend():
    """Backends run generated defs through the link step: a derived function called in
    a program runs on every backend with no AD import."""
    text = "(def f Float (x : Float) (mul x (exp x)))\n(def g Float (x : Float) ([rev f] x 1.0))"
    for backend in ("interp", "python", "compiled"):
        m = labrys.load(text, backend=backend)
        assert m.g(0.5) == pytest.approx(np.exp(0.5) * 1.5, rel=1e-14), backend


def test_the_primitive_reference_is_generated_and_up_to_date(capsys):
    from labrys.cli.prims import reference

    page = (ROOT / "docs" / "primitives.md").read_text()
    assert page == reference(markdown=True), "regenerate it: labrys prims --markdown > docs/primitives.md"
    for name in PRIMITIVES:
        assert f"| `{name}` |" in page
    assert main(["prims"]) == 0 and "Maths on Floats" in capsys.readouterr().out
