"""The bench's verdict on a target (bench/batch.py) names which of its figures met it."""
from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from batch import target  # noqa: E402


def test_a_target_met_by_one_figure_of_two_says_which():
    assert target((26.0, 24.0), 25) == "target >= 25: met for the whole command, NOT once loaded"
    assert target((24.0, 26.0), 25) == "target >= 25: met once loaded, NOT for the whole command"
    assert target((26.0, 26.0), 25) == "target >= 25: met"
    assert target((20.0, 20.0), 25) == "target >= 25: NOT met"
    assert target((1.7,), 1.6, at_most=True) == "target <= 1.6: NOT met"
    assert target((0.81, 0.76), 0.8, text="80 %") == "target >= 80 %: met for the whole command, NOT once loaded"
