"""Random inputs for checks: arrays and boolean masks drawn from a check's own generator."""
from __future__ import annotations

import numpy as np


def normal(rng: np.random.Generator, shape, dtype=np.float64, scale: float = 1.0) -> np.ndarray:
    """Standard-normal values times `scale`, in `dtype`."""
    return (rng.standard_normal(shape) * scale).astype(dtype)


def mask_rows(rng: np.random.Generator, shape, keep: float = 0.6) -> np.ndarray:
    """Random booleans, each True with probability `keep`, with at least one True in every row.

    shape: (..., rows, columns); rows run along the last axis, so no row is
    all False. With more than one column, at least one entry is False, so a
    function that ignores the mask never gives the right answer by luck.
    """
    allowed = rng.random(shape) < keep
    rows = allowed.reshape(-1, shape[-1])
    empty = ~rows.any(axis=1)
    rows[empty, rng.integers(0, shape[-1], size=int(empty.sum()))] = True
    if shape[-1] > 1 and rows.all():
        rows[0, -1] = False  # no draw, so every other mask stays as it was
    return rows.reshape(shape)
