"""ADBench hand's ``rev`` Jacobian compiles whole: the driver asks for θ's cotangent only,
[rev hand_objective (wrt theta)] (docs/activity.md), so the model's data — its ragged skinning
weights among it — gets no cotangent code and nothing runs on python.  The Jacobian equals the
forward-mode one (another algorithm) and central finite differences."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from labrys.adbench import program, read_hand
from labrys.adbench.hand import fd_check, hand_jacobian

HAND = Path(__file__).resolve().parents[1] / "data" / "adbench" / "hand" / "test.txt"


@pytest.fixture(scope="module")
def hand():
    return read_hand(HAND)


def test_hand_rev_jacobian_compiles_whole(hand, caplog):
    compiled = program("hand", backend="compiled")
    with caplog.at_level(logging.INFO, logger="labrys"):
        rev = hand_jacobian(compiled, hand, "rev")
    assert not [r.getMessage() for r in caplog.records if "python backend" in r.getMessage()]
    assert rev.shape == (3 * hand.points.shape[0], hand.theta.size)
    fwd = hand_jacobian(compiled, hand, "fwd")
    assert np.allclose(rev, fwd, rtol=1e-12, atol=1e-13)
    assert fd_check(compiled, hand, rev) < 1e-6
