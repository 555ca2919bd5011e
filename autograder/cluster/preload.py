"""A Dask preload for grading workers: `dask worker ADDRESS --nthreads 1 --preload autograder.cluster.preload`.

It imports the grader, NumPy and PyTorch when the worker starts, instead of
when the first run needs them, so each run's warm-up on the worker is only
unpacking the course, loading the suite, timing the reference and starting
the sandboxes (README: Grading on a cluster).
"""
from __future__ import annotations

import importlib.util

import numpy  # noqa: F401 - imported for its side effect: it is in memory before the first run

import autograder.cluster.warm  # noqa: F401 - the plugin's code, which every run unpickles

if importlib.util.find_spec("torch") is not None:
    import torch  # noqa: F401
