"""Linux process controls (prctl) that both the grader and the worker use.

Shipped to the worker (see sandbox.zygote.BOOT): standard library only.
"""
from __future__ import annotations

import ctypes

PR_SET_PDEATHSIG = 1  # a signal this process gets when its parent dies
PR_SET_DUMPABLE = 4  # 0: no process of the same uid may read our memory or ptrace us
PR_SET_CHILD_SUBREAPER = 36  # orphans of our descendants become our children, not init's


def prctl(option: int, value: int) -> None:
    """Set one process control; where the call is unavailable, nothing happens."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass
