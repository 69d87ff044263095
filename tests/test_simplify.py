"""Regressions of the simplifier (opt/simplify.py) found by differentiating derived
code: each rewrite keeps the program's type and value."""
from __future__ import annotations

import labrys
from labrys.ad import REGISTRY
from labrys.ir.types import FLOAT, TTensor, TTuple
from labrys.opt.simplify import simplify
from labrys.syntax.parser import parse_expr
from labrys.types.checker import Functions, check_expr


def typed(text: str, **env):
    return check_expr(parse_expr(text), Functions(REGISTRY), env)


def test_the_zero_of_a_tuple_literal_stays_a_tuple():
    e = typed("(ts_zero (tuple x v))", x=FLOAT, v=TTensor(1, FLOAT))
    out = simplify(e)
    assert check_expr(out, Functions(REGISTRY), {"x": FLOAT, "v": TTensor(1, FLOAT)}).type == \
        TTuple((FLOAT, TTensor(1, FLOAT)))


def test_a_projection_of_a_variable_copied_from_a_constant():
    e = typed("(let ((p (tuple 0.0 x)) (q p)) (get$1$2 q))", x=FLOAT)
    assert labrys.show_expr(simplify(e)) == "0.0"
