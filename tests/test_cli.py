"""The `labrys` command line, run as a subprocess.

Files are written to a temporary directory and named relative to it, so the
error location starts with the bare file name: ``prog.ks:LINE:COL: error:``.
Expected positions were read off the program texts below by hand.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import labrys

_SCRIPT = Path(sys.executable).with_name("labrys")
LABRYS = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "labrys.cli.main"]


def labrys_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*LABRYS, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def write(dir: Path, name: str, text: str) -> str:
    (dir / name).write_text(text, encoding="utf-8")
    return name


def assert_user_error(proc: subprocess.CompletedProcess, file: str, line: int, col: int,
                      source_line: str, fragment: str) -> None:
    """Exit 1; stderr is `file:line:col: error: ...`, the source line, a caret; no traceback.

    ``source_line`` is the whole offending line of the program, as written.
    """
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    err = proc.stderr
    assert err.startswith(f"{file}:{line}:{col}: error: "), err
    assert fragment in err.splitlines()[0], err
    lines = err.splitlines()
    assert source_line in lines[1], err
    caret = lines[2]
    assert "^" in caret, err
    # the caret sits under column `col` of the source line (both indented alike)
    assert lines[1].endswith(source_line), err
    start = len(lines[1]) - len(source_line)
    assert caret.index("^") == start + col - 1, err
    assert "Traceback" not in err


PROGRAM = """\
; a small program for the command line
(def sq Float (x : Float) (mul x x))
(def sq Integer (n : Integer) (mul n n))

(def idx Float ((v : Vec Float) (i : Integer))
  (add 1.0 (index i v)))

(def pair (Tuple Integer (Vec Float)) ((n : Integer) (x : Float))
  (tuple (add n 1) (build n (lam (i : Integer) (mul x (to_float i))))))

(def neg_it Float (x : Float) (neg x))

(def main Integer ()
  (print "sum " (add 1 2) " " (mul 1.5 2.0) "\\n"
         (sq 3) " " (sq 0.5) "\\n"))
"""


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    write(tmp_path, "prog.ks", PROGRAM)
    return tmp_path


# --- run ----------------------------------------------------------------------


def test_run_main(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "sum 3 3.0\n9 0.25\n"
    assert proc.stderr == ""


def test_run_function_with_json_args(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", "idx", "[1.0, 2.0, 4.0]", "2", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == 5.0


def test_run_function_with_ks_expression_args(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", "idx", "(build 3 (lam (i : Integer) (to_float (mul i 10))))",
                      "(add 1 1)", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == 21.0


def test_run_function_returning_a_tuple(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", "pair", "3", "2.0", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(4, [0.0, 2.0, 4.0])"


def test_run_negative_number_argument(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", "neg_it", "-2.5", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == 2.5


@pytest.mark.parametrize("name,arg,out", [
    ("[sq Float]", "3.0", "9.0"),
    ("[sq Float]", "3", "9.0"),       # an Integer-looking JSON number for a Float parameter
    ("[sq Integer]", "3", "9"),
    ("[sq Float]", "(to_float 4)", "16.0"),
])
def test_run_overload_selected_by_type(prog: Path, name: str, arg: str, out: str) -> None:
    proc = labrys_cli("run", "prog.ks", name, arg, cwd=prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == out


OVERLOADED_INTEGER_FIRST = """\
(def sq Integer (n : Integer) (mul n n))
(def sq Float (x : Float) (mul x x))
"""


@pytest.mark.parametrize("arg,out", [
    ("3", "9"),
    ("3.5", "12.25"),          # must reach the Float overload, not fail on the Integer one
    ("3.0", "9.0"),            # 3.0 is a Float literal: the Float overload
    ("(to_float 2)", "4.0"),   # a Float-typed .ks expression
])
def test_run_unqualified_overload_picks_by_argument_type(tmp_path: Path, arg: str, out: str) -> None:
    write(tmp_path, "ov.ks", OVERLOADED_INTEGER_FIRST)
    proc = labrys_cli("run", "ov.ks", "sq", arg, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == out


def test_run_without_main(tmp_path: Path) -> None:
    write(tmp_path, "nomain.ks", "(def f Float (x : Float) x)\n")
    proc = labrys_cli("run", "nomain.ks", cwd=tmp_path)
    assert proc.returncode == 1
    assert "main" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_unknown_function(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", "nosuch", "1", cwd=prog)
    assert proc.returncode == 1
    assert "nosuch" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_wrong_number_of_arguments(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", "idx", "[1.0]", cwd=prog)
    assert proc.returncode == 1
    assert proc.stderr.startswith("labrys: error: ")
    assert "idx" in proc.stderr and "argument" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_json_argument_of_the_wrong_type(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", "idx", "[1.0]", '"zero"', cwd=prog)
    assert proc.returncode == 1
    assert "argument 2" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_ks_argument_with_a_type_error(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", "idx", "[1.0]", "(add 1 2.0)", cwd=prog)
    assert_user_error(proc, "<argument 2>", 1, 1, "(add 1 2.0)", "no overload of 'add'")


def test_run_ks_argument_with_a_parse_error(prog: Path) -> None:
    proc = labrys_cli("run", "prog.ks", "idx", "[1.0]", "(add 1", cwd=prog)
    assert_user_error(proc, "<argument 2>", 1, 1, "(add 1", "unclosed '('")


def test_run_missing_file(tmp_path: Path) -> None:
    proc = labrys_cli("run", "missing.ks", cwd=tmp_path)
    assert proc.returncode == 1
    assert "missing.ks" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- check --------------------------------------------------------------------


def test_check_success(prog: Path) -> None:
    write(prog, "other.ks", "(def g Float (y : Float) (mul y y))\n")
    proc = labrys_cli("check", "prog.ks", "other.ks", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("prog.ks: ok")
    assert lines[1].startswith("other.ks: ok")
    # prog.ks defines sq, idx, pair, neg_it and main
    assert "(5 functions)" in lines[0]
    assert proc.stderr == ""


def test_check_quiet(prog: Path) -> None:
    proc = labrys_cli("check", "-q", "prog.ks", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""


def test_check_reports_the_error_of_a_bad_file(prog: Path) -> None:
    write(prog, "bad.ks", """\
(def f Float (x : Float)
  (let (y (mul x x))
    (add y
         (sqrt y true))))
""")
    proc = labrys_cli("check", "prog.ks", "bad.ks", cwd=prog)
    assert_user_error(proc, "bad.ks", 4, 10, "         (sqrt y true))))", "no overload of 'sqrt'")


def test_check_parse_error(tmp_path: Path) -> None:
    write(tmp_path, "bad.ks", """\
(def f Float (x : Float)
  (add x
       (mul x 2.0]))
""")
    proc = labrys_cli("check", "bad.ks", cwd=tmp_path)
    assert_user_error(proc, "bad.ks", 3, 18, "       (mul x 2.0]))", "closed by ']'")


def test_run_type_error(tmp_path: Path) -> None:
    write(tmp_path, "bad.ks", """\
(def main Integer ()
  (print "x = "
         (add 1 2.0)))
""")
    proc = labrys_cli("run", "bad.ks", cwd=tmp_path)
    assert_user_error(proc, "bad.ks", 3, 10, "         (add 1 2.0)))", "no overload of 'add'")
    assert proc.stdout == ""


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    write(tmp_path, "bad.ks", "(def f Float (x : Float)\n  (add x true))\n")
    proc = labrys_cli("--debug", "check", "bad.ks", cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr
    assert "LabrysError" in proc.stderr


# --- fmt ----------------------------------------------------------------------


FMT_SOURCE = """\
; comments are kept
(edef ext Float (Float))
(def f Float ((x : Float) (y : Float))
      (let ((a (mul x y)) (b (sin x)) ((p q) (tuple a b)))
   (if (gt p 0.0) (add (mul p q) (div x y)) (neg (get$2$2 (tuple 1 q))))))
(def g Float (s : Sum Float Integer)
  (case s ((inl a) a) ((inr k) (to_float k))))
(def h (Vec Float) (v : Vec Float) (map (lam (t : Float) (mul t 2.0)) v))
(def s String () "tab\\there \\"quoted\\" \\\\ newline\\n")
(def m (Tensor 2 Float) (n : Integer)
  (build (tuple n n) (lam (ij : Tuple Integer Integer) (to_float (get$1$2 ij)))))
(def u Float (x : Float) (let (k (fn [f (Tuple Float Float)])) (k (tuple x 1e-3))))
(gdef rev [f (Tuple Float Float)])
(rule "mul2" (x : Float) (mul x 2.0) (add x x))
"""


def test_fmt_output_reparses_to_the_same_program(tmp_path: Path) -> None:
    write(tmp_path, "src.ks", FMT_SOURCE)
    proc = labrys_cli("fmt", "src.ks", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("; comments are kept\n")
    assert labrys.parse_program(out, "fmt.ks") == labrys.parse_program(FMT_SOURCE, "src.ks")
    labrys.load(out)  # and it type-checks

    # formatting is idempotent and `fmt --check` accepts its own output
    write(tmp_path, "fmt.ks", out)
    again = labrys_cli("fmt", "fmt.ks", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == out
    assert labrys_cli("fmt", "--check", "fmt.ks", cwd=tmp_path).returncode == 0
    not_canonical = labrys_cli("fmt", "--check", "src.ks", cwd=tmp_path)
    assert not_canonical.returncode == 1
    assert "src.ks" in not_canonical.stderr


def test_fmt_of_a_bad_file(tmp_path: Path) -> None:
    write(tmp_path, "bad.ks", "(def f Float (x : Float)\n  (add x \"unterminated))\n")
    proc = labrys_cli("fmt", "bad.ks", cwd=tmp_path)
    assert_user_error(proc, "bad.ks", 2, 10, '  (add x "unterminated))', "unterminated string")
    assert proc.stdout == ""


# --- help and demo ------------------------------------------------------------


@pytest.mark.parametrize("args", [[], ["run"], ["check"], ["fmt"], ["demo"]], ids=lambda a: " ".join(a) or "top")
def test_help(tmp_path: Path, args: list[str]) -> None:
    proc = labrys_cli(*args, "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: labrys")


def test_module_entry_point(prog: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "run", "prog.ks", "[sq Float]", "1.5"],
                          cwd=prog, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2.25"


def test_no_command_is_a_usage_error(tmp_path: Path) -> None:
    proc = labrys_cli(cwd=tmp_path)
    assert proc.returncode == 2
    assert "usage:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_demo(tmp_path: Path) -> None:
    proc = labrys_cli("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "3.748121239953041" in proc.stdout  # f(1.5, 0.5) = 0.75 sin 1.5 + 3 of the bundled demo
    assert "Traceback" not in proc.stderr


# --- run-time errors ----------------------------------------------------------

RUNTIME = """\
(edef ext Float (Float))

(def idx Float ((v : Vec Float) (i : Integer))
  (add 1.0
       (index i v)))

(def chk Float (x : Float)
  (assert (gt x 0.0)
    (sqrt x)))

(def idiv Integer ((a : Integer) (b : Integer))
  (mul 2
       (div a b)))

(def callext Float (x : Float)
  (add x
       (ext x)))

(def main Integer ()
  (print "before "
         (idiv 1 0)))

(def inlam (Vec Float) (v : Vec Float)
  (build 3 (lam (i : Integer)
    (mul 2.0 (index (add i 1) v)))))

(def count Integer (n : Integer)
  (if (eq n 0) 0 (add 1 (count (sub n 1)))))
"""


@pytest.fixture
def rt(tmp_path: Path) -> Path:
    write(tmp_path, "rt.ks", RUNTIME)
    return tmp_path


def test_runtime_index_out_of_range(rt: Path) -> None:
    proc = labrys_cli("run", "rt.ks", "idx", "[1.0, 2.0]", "5", cwd=rt)
    assert_user_error(proc, "rt.ks", 5, 8, "       (index i v)))", "out of range")


def test_runtime_negative_index(rt: Path) -> None:
    proc = labrys_cli("run", "rt.ks", "idx", "[1.0, 2.0]", "-1", cwd=rt)
    assert_user_error(proc, "rt.ks", 5, 8, "       (index i v)))", "out of range")


def test_runtime_index_in_range_is_fine(rt: Path) -> None:
    proc = labrys_cli("run", "rt.ks", "idx", "[1.0, 2.0]", "1", cwd=rt)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == 3.0


def test_runtime_failed_assert(rt: Path) -> None:
    # the caret goes under the condition that failed
    proc = labrys_cli("run", "rt.ks", "chk", "-1.0", cwd=rt)
    assert_user_error(proc, "rt.ks", 8, 11, "  (assert (gt x 0.0)", "assert")


def test_runtime_integer_division_by_zero(rt: Path) -> None:
    proc = labrys_cli("run", "rt.ks", "idiv", "7", "0", cwd=rt)
    assert_user_error(proc, "rt.ks", 13, 8, "       (div a b)))", "division by zero")


def test_runtime_error_in_main(rt: Path) -> None:
    proc = labrys_cli("run", "rt.ks", cwd=rt)
    assert_user_error(proc, "rt.ks", 13, 8, "       (div a b)))", "division by zero")


def test_runtime_edef_without_implementation(rt: Path) -> None:
    # the offending call is (ext x) in callext, not the edef declaration
    proc = labrys_cli("run", "rt.ks", "callext", "1.0", cwd=rt)
    assert_user_error(proc, "rt.ks", 17, 8, "       (ext x)))", "no implementation")


def test_runtime_error_inside_a_lambda(rt: Path) -> None:
    proc = labrys_cli("run", "rt.ks", "inlam", "[1.0, 2.0, 3.0]", cwd=rt)
    assert_user_error(proc, "rt.ks", 25, 14, "    (mul 2.0 (index (add i 1) v)))))", "out of range")


def test_run_deep_recursion(rt: Path) -> None:
    proc = labrys_cli("run", "rt.ks", "count", "100000", cwd=rt)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "100000"


def test_runtime_integer_division_truncates(rt: Path) -> None:
    proc = labrys_cli("run", "rt.ks", "idiv", "-7", "2", cwd=rt)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "-6"


def test_error_output_has_exactly_the_documented_shape(rt: Path) -> None:
    proc = labrys_cli("run", "rt.ks", "idiv", "7", "0", cwd=rt)
    lines = proc.stderr.splitlines()
    assert re.fullmatch(r"rt\.ks:13:8: error: .*division by zero.*", lines[0])
    assert lines[1] == "         (div a b)))"
    assert re.fullmatch(r" {9}\^~*", lines[2])
