"""When Python's cyclic garbage collector runs in the processes that grade.

A command that grades loads some 200,000 objects that live as long as it
does: PyTorch, NumPy, the suite. A full collection walks every one of them
(about 0.2 s here) and frees almost nothing; in a grading process, forked
from the command, it also writes to each one's header, so every page holding
one is copied. So the loading runs with the collector off, and what it
loaded is then frozen (gc.freeze): later collections skip it, in the command
and in every process forked from it.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# A grading process makes many short-lived containers per submission (calls, replies, verdicts). Python's
# default (700) walked them about three times per submission; collecting every 5,000 walks fewer of them.
YOUNG_OBJECTS = 5000


@contextmanager
def loading_for_good() -> Iterator[None]:
    """Load what lives as long as the process: no collection meanwhile, none of it collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def for_grading() -> None:
    """In a grading process: what it holds now is kept for good, and young objects are collected less often."""
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])
