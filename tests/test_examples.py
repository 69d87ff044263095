"""Every example program prints what its hand-computed expected output says."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import labrys

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.ks"))
NEEDS_AD: set[str] = set()  # every example runs (derivatives.ks calls [sufrev f]: split reverse mode)
_NUMBER = re.compile(r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|inf|nan)")


def same_output(actual: str, expected: str) -> bool:
    """Text equal, except numbers with a decimal point compare to 1e-9 relative."""
    a_nums, e_nums = _NUMBER.findall(actual), _NUMBER.findall(expected)
    if _NUMBER.sub("#", actual) != _NUMBER.sub("#", expected) or len(a_nums) != len(e_nums):
        return False
    return all(float(a) == pytest.approx(float(e), rel=1e-9, abs=1e-12, nan_ok=True)
               for a, e in zip(a_nums, e_nums))


def test_there_are_enough_examples():
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("path", [p for p in EXAMPLES if p.stem not in NEEDS_AD], ids=lambda p: p.stem)
def test_example_output(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labrys.load(path).function("main")()
    expected = (ROOT / "examples" / "expected" / f"{path.stem}.out").read_text()
    actual = capsys.readouterr().out
    assert same_output(actual, expected), f"--- actual\n{actual}\n--- expected\n{expected}"


def test_same_output_compares_numbers_not_digits():
    assert same_output("x = 0.30000000000000004\n", "x = 0.3\n")
    assert not same_output("x = 0.31\n", "x = 0.3\n")
    assert not same_output("y = 0.3\n", "x = 0.3\n")
