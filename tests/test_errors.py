"""Every user mistake is a LabrysError that points at the right place.

Each case is a small multi-line program with one mistake; the expected line
and column (1-based) were read off the program text by hand, and name the
natural place for a user to look: the offending sub-expression or form.
"""
from __future__ import annotations

import re

import pytest

import labrys
from labrys import LabrysError


def load_error(text: str) -> LabrysError:
    with pytest.raises(LabrysError) as info:
        labrys.load(text)
    return info.value


def assert_error(text: str, line: int, col: int, fragment: str) -> LabrysError:
    err = load_error(text)
    assert err.span is not None, f"no position in: {err}"
    assert (err.span.line, err.span.col) == (line, col), str(err)
    assert fragment in err.message, str(err)
    return err


# --- parse errors -----------------------------------------------------------

PARSE_ERRORS = {
    # the innermost bracket still open at the end is `(mul` on line 5
    "unclosed paren": ("""\
(def f Float (x : Float)
  (add x 1.0))

(def g Float (y : Float)
  (mul y
    (f y)
""", 5, 3, "unclosed '('"),

    "unclosed paren of a def": ("""\
(def f Float (x : Float)
  (add x 1.0))

(def g Float (y : Float)
  (mul y
    (f y))
""", 4, 1, "unclosed '('"),

    "stray closing paren": ("""\
(def f Float (x : Float)
  (add x 1.0)))

(def g Float (y : Float) y)
""", 2, 15, "unexpected ')'"),

    "paren closed by bracket": ("""\
(def f Float (x : Float)
  (add x
       (mul x 2.0]))
""", 3, 18, "'(' closed by ']'"),

    "unterminated string": ("""\
(def main Integer ()
  (print "hello
    world))
""", 2, 10, "unterminated string"),

    "unknown escape": ("""\
(def main Integer ()
  (print "a\\qb"))
""", 2, 12, "unknown escape"),

    # a backslash just before the end of the file is not an escape
    "unterminated string ending in a backslash": ("""\
(def main Integer ()
  (print "abc\\""", 2, 10, "unterminated string"),

    "unterminated nested block comment": ("""\
(def f Float (x : Float) x)
#| outer
   #| inner |#
   still in outer
(def g Float (y : Float) y)
""", 2, 1, "unterminated block comment"),

    "let with three parts": ("""\
(def f Float (x : Float)
  (let (y (mul x x))
    (add y 1.0)
    y))
""", 2, 3, "malformed 'let'"),

    "let bindings not a list": ("""\
(def f Float (x : Float)
  (add 1.0
       (let y x)))
""", 3, 13, "let bindings"),

    "if without else": ("""\
(def f Float (x : Float)
  (if (gt x 0.0)
      x))
""", 2, 3, "malformed 'if'"),

    "lam parameter without type": ("""\
(def f (Vec Float) (v : Vec Float)
  (map (lam x (mul x 2.0))
       v))
""", 2, 13, "expected a parameter"),

    "def without body": ("""\
(def g Float (y : Float) y)

(def f Float (x : Float))
""", 3, 1, "malformed def"),

    "edef without argument type": ("""\
(def g Float (y : Float) y)

(edef sqr Float)
""", 3, 1, "malformed edef"),

    "gdef without function": ("""\
(def g Float (y : Float) y)

(gdef rev)
""", 3, 1, "malformed gdef"),

    "rule name not a string": ("""\
(def g Float (y : Float) y)

(rule mul2 (x : Float)
  (mul x 2.0)
  (add x x))
""", 3, 1, "malformed rule"),

    "case alternative with extra part": ("""\
(def f Float (s : Sum Float Integer)
  (case s
    ((inl a) a)
    ((inr b) (to_float b) b)))
""", 4, 5, "((inr x) body)"),

    "unknown type": ("""\
(def f Float (x : Float)
  x)

(def g Float (v : Vec Flaot)
  (index 0 v))
""", 4, 23, "unknown type 'Flaot'"),

    "tensor rank zero": ("""\
(def f Float (x : Float) x)

(def g Integer (m : Tensor 0 Float)
  1)
""", 3, 28, "rank"),

    "tensor rank not a number": ("""\
(def f Float (x : Float) x)

(def g Integer (m : Tensor two Float)
  1)
""", 3, 28, "rank"),

    "get index beyond tuple size": ("""\
(def f Float (p : Tuple Float Float)
  (add (get$1$2 p)
       (get$3$2 p)))
""", 3, 9, "get$3$2"),

    "unknown declaration": ("""\
(def f Float (x : Float) x)

(define g Float (y : Float) y)
""", 3, 2, "unknown declaration 'define'"),

    "empty expression": ("""\
(def f Float (x : Float)
  (add x
       ()))
""", 3, 8, "empty expression"),

    "structured name used as a value": ("""\
(def f Float (x : Float) x)

(def g Float (y : Float)
  (let (h [f Float])
    y))
""", 4, 11, "(fn [f T])"),

    "keyword used as a value": ("""\
(def f Float (x : Float)
  (add x
       lam))
""", 3, 8, "keyword"),

    "duplicate parameter": ("""\
(def f Float ((x : Float)
              (x : Float))
  x)
""", 2, 15, "appears twice"),
}


@pytest.mark.parametrize("text,line,col,fragment", PARSE_ERRORS.values(), ids=list(PARSE_ERRORS))
def test_parse_error(text: str, line: int, col: int, fragment: str) -> None:
    assert_error(text, line, col, fragment)


@pytest.mark.parametrize("text,line,col,fragment", PARSE_ERRORS.values(), ids=list(PARSE_ERRORS))
def test_parse_error_from_parse_program(text: str, line: int, col: int, fragment: str) -> None:
    """The same errors come out of parse_program alone, with the given file name."""
    with pytest.raises(LabrysError) as info:
        labrys.parse_program(text, "bad.ks")
    err = info.value
    assert (err.span.line, err.span.col) == (line, col), str(err)
    assert str(err).startswith(f"bad.ks:{line}:{col}: error: ")


# --- type errors ------------------------------------------------------------

TYPE_ERRORS = {
    "unknown variable": ("""\
(def f Float (x : Float)
  (let (y (mul x x))
    (add y z)))
""", 3, 12, "unknown variable 'z'"),

    "unknown variable inside a lambda": ("""\
(def f (Vec Float) (v : Vec Float)
  (map (lam (t : Float)
         (mul t scale))
       v))
""", 3, 17, "unknown variable 'scale'"),

    "unknown function": ("""\
(def f Float (x : Float)
  (add x
       (sqaure x)))
""", 3, 8, "unknown function 'sqaure'"),

    "add of Integer and Float": ("""\
(def f Float (x : Float)
  (let (k (add 1 2.0))
    (mul x k)))
""", 2, 11, "no overload of 'add'"),

    "if condition not Bool": ("""\
(def f Float (x : Float)
  (if (add x 1.0)
      x
      0.0))
""", 2, 7, "condition of 'if'"),

    # the condition is the whole let expression, not its binding
    "if condition is a let of the wrong type": ("""\
(def f Float (x : Float)
  (if (let (c (mul x 2.0))
        (add c 1.0))
      x
      0.0))
""", 2, 7, "condition of 'if'"),

    "if branches of different types": ("""\
(def f Float (x : Float)
  (if (gt x 0.0)
      x
      0))
""", 2, 3, "branches of 'if'"),

    "wrong return type": ("""\
(def f Integer (x : Float)
  (let (y (mul x 2.0))
    y))
""", 2, 3, "declared to return Integer"),

    "wrong arity of a user function": ("""\
(def f Float ((x : Float) (y : Float))
  (mul x y))

(def g Float (z : Float)
  (f z))
""", 5, 3, "no overload of 'f'"),

    "wrong arity of a primitive": ("""\
(def f Float ((x : Float) (y : Float))
  (add x
       (sin x y)))
""", 3, 8, "no overload of 'sin'"),

    "overload not found": ("""\
(def f Float (x : Float) x)
(def f Integer (x : Integer) x)

(def g Bool (b : Bool)
  (f b))
""", 5, 3, "no overload of 'f'"),

    # the error is in the binding `((a b) x)`, which is where the caret belongs
    "destructuring a non-tuple": ("""\
(def f Float (x : Float)
  (let ((a b) x)
    (add a b)))
""", 2, 8, "cannot destructure"),

    "destructuring a tuple of the wrong size": ("""\
(def f Float (v : Vec Float)
  (let ((n (size v))
        ((a b) (tuple 1.0 2.0 3.0)))
    (add a b)))
""", 3, 9, "cannot destructure"),

    "get on a tuple of the wrong size": ("""\
(def f Float (p : Tuple Float Float Float)
  (add (get$1$3 p)
       (get$2$2 p)))
""", 3, 8, "get$2$2 needs a tuple of 2"),

    "calling a non-function local": ("""\
(def f Float ((x : Float) (y : Float))
  (let (z (add x y))
    (z x)))
""", 3, 5, "'z' is not a function"),

    "lambda applied to the wrong type": ("""\
(def f Float (x : Float)
  (let (g (lam (t : Float) (mul t t)))
    (g 3)))
""", 3, 5, "takes Float"),

    "index with a Float index": ("""\
(def f Float (v : Vec Float)
  (let (i 1.0)
    (index i v)))
""", 3, 5, "no overload of 'index'"),

    "build lambda taking Float": ("""\
(def f (Vec Float) (n : Integer)
  (build n
    (lam (i : Float) (mul i 2.0))))
""", 2, 3, "no overload of 'build'"),

    "fold lambda with the wrong accumulator type": ("""\
(def f Float (v : Vec Float)
  (fold (lam (acc_x : Tuple Float Float)
          (gt (get$1$2 acc_x) (get$2$2 acc_x)))
        0.0
        v))
""", 2, 3, "no overload of 'fold'"),

    "duplicate def": ("""\
(def f Float (x : Float)
  x)

(def f Integer (y : Float)
  2)
""", 4, 1, "already defined"),   # at one result type the later def replaces the earlier (test_knossos_compat)

    "gdef of an unknown function": ("""\
(def f Float (x : Float)
  x)

(gdef rev [g Float])
""", 4, 1, "no def matches"),

    # a derivative needs tangent types, and a linear map has none
    "gdef of a function taking a linear map": ("""\
(def f Float (m : LM Float Float)
  1.0)

(gdef fwd [f (LM Float Float)])
""", 4, 1, "(LM Float Float)"),

    "gdef of a function returning a linear map": ("""\
(edef g (LM Float Float) (Float))
(def f (LM Float Float) (x : Float)
  (g x))

(gdef rev [f Float])
""", 5, 1, "(LM Float Float)"),

    "unknown derivation in gdef": ("""\
(def f Float (x : Float)
  x)

(gdef frobnicate [f Float])
""", 4, 1, "unknown derivation 'frobnicate'"),

    "inl payload of the wrong type": ("""\
(def f (Sum Float Integer) (x : Integer)
  (inl (Sum Float Integer)
       x))
""", 3, 8, "payload of 'inl'"),

    "inr payload of the wrong type": ("""\
(def f (Sum Float Integer) (x : Float)
  (inr (Sum Float Integer)
       x))
""", 3, 8, "payload of 'inr'"),

    # the scrutinee is the offending sub-expression, as the condition is for `if`
    "case on a non-sum": ("""\
(def f Float (x : Float)
  (case x
    ((inl a) a)
    ((inr b) b)))
""", 2, 9, "Sum type"),

    "case alternatives of different types": ("""\
(def f Float (s : Sum Float Integer)
  (case s
    ((inl a) a)
    ((inr b) b)))
""", 2, 3, "alternatives of 'case'"),

    "assert with a non-Bool condition": ("""\
(def f Float (x : Float)
  (assert (sub x 1.0)
    x))
""", 2, 11, "condition of 'assert'"),

    "fn of an overloaded function": ("""\
(def f Float (x : Float) x)
(def f Integer (x : Integer) x)

(def g (Lam Float Float) ()
  (fn f))
""", 5, 3, "ambiguous"),

    "fn of an unknown function": ("""\
(def f Float (x : Float) x)

(def g (Lam Float Float) ()
  (fn h))
""", 4, 3, "not a defined function"),

    "typed name with the wrong type": ("""\
(def f Float (x : Float) x)

(def g Float (y : Float)
  ([f Integer] y))
""", 4, 3, "[f Integer]"),

    "rule sides of different types": ("""\
(def f Float (x : Float) x)

(rule "silly" (x : Float)
  (mul x 2.0)
  (gt x 0.0))
""", 3, 1, 'rule "silly"'),
}


@pytest.mark.parametrize("text,line,col,fragment", TYPE_ERRORS.values(), ids=list(TYPE_ERRORS))
def test_type_error(text: str, line: int, col: int, fragment: str) -> None:
    assert_error(text, line, col, fragment)


@pytest.mark.parametrize("text", [t for t, *_ in TYPE_ERRORS.values()], ids=list(TYPE_ERRORS))
def test_type_errors_parse_fine(text: str) -> None:
    """Type errors are found by the checker, not by the parser."""
    program = labrys.parse_program(text, "ok-syntax.ks")
    with pytest.raises(LabrysError):
        labrys.check_program(program)


def test_at_least_twenty_kinds() -> None:
    assert len(PARSE_ERRORS) + len(TYPE_ERRORS) >= 40


# --- the shape of the message -------------------------------------------------

CARET_RE = re.compile(r"^  ( *)\^~*$")


def test_str_has_location_source_line_and_caret() -> None:
    text = """\
(def f Float (x : Float)
  (add x
       (sqaure x)))
"""
    with pytest.raises(LabrysError) as info:
        labrys.check_program(labrys.parse_program(text, "prog.ks"))
    lines = str(info.value).splitlines()
    assert lines[0] == "prog.ks:3:8: error: unknown function 'sqaure'"
    assert lines[1] == "         (sqaure x)))"
    m = CARET_RE.match(lines[2])
    assert m is not None, lines[2]
    assert len(m.group(1)) == 7  # the caret sits under the `(` in column 8


def test_load_from_a_path_names_the_file(tmp_path) -> None:
    path = tmp_path / "broken.ks"
    path.write_text("(def f Float (x : Float)\n  (add x true))\n", encoding="utf-8")
    with pytest.raises(LabrysError) as info:
        labrys.load(path)
    err = info.value
    assert (err.span.line, err.span.col) == (2, 3)
    assert str(err).startswith(f"{path}:2:3: error: ")
    assert "    (add x true))" in str(err).splitlines()  # two spaces + the source line


def test_load_of_a_missing_file_is_a_labrys_error(tmp_path) -> None:
    with pytest.raises(LabrysError) as info:
        labrys.load(tmp_path / "nope.ks")
    assert "nope.ks" in info.value.message


def test_tabs_do_not_shift_the_caret() -> None:
    text = "(def f Float (x : Float)\n\t(add x true))\n"
    with pytest.raises(LabrysError) as info:
        labrys.load(text)
    err = info.value
    assert (err.span.line, err.span.col) == (2, 2)
    lines = str(err).splitlines()
    assert lines[1].index("(") == lines[2].index("^")


def test_error_on_the_last_line_without_newline() -> None:
    text = "(def f Float (x : Float)\n  (add x 1.0))\n(def g Float (y : Float) (f y y))"
    err = assert_error(text, 3, 26, "no overload of 'f'")
    assert "(def g Float (y : Float) (f y y))" in str(err)
