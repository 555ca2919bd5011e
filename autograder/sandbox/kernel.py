"""Linux process controls (prctl) that both the grader and the worker use.

A control that could not be set is returned, never dropped: each one stands for a protection that
`autograder doctor` lists, and the worker refuses to run student code without it (worker.zygote_main).

Shipped to the worker (see sandbox.boot.BOOT): standard library only.
"""
from __future__ import annotations

import ctypes
import os

PR_SET_PDEATHSIG = 1  # a signal this process gets when its parent dies
PR_SET_DUMPABLE = 4  # 0: no process of the same uid may read our memory or ptrace us
PR_SET_CHILD_SUBREAPER = 36  # orphans of our descendants become our children, not init's
NAMES = {PR_SET_PDEATHSIG: "PR_SET_PDEATHSIG", PR_SET_DUMPABLE: "PR_SET_DUMPABLE",
         PR_SET_CHILD_SUBREAPER: "PR_SET_CHILD_SUBREAPER"}


def prctl(option: int, value: int) -> str:
    """Set one process control: "" once it is set, else why it could not be (the caller decides what then)."""
    try:
        done = ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError) as error:
        return f"prctl is not available here ({error})"
    return "" if done == 0 else os.strerror(ctypes.get_errno())


def set_controls(controls: list[tuple[int, int]]) -> dict[str, str]:
    """Set each (option, value); returns {name: why} for those that could not be set, {} when all were."""
    return {NAMES.get(option, str(option)): why for option, value in controls if (why := prctl(option, value))}
