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


MADV_COLLAPSE = 25  # Linux 6.1+: back this range with transparent huge pages now, synchronously
HUGE_PAGE = 2 << 20  # bytes: one page-middle-directory entry on x86-64 and arm64 (4 KiB pages)


def collapse_into_huge_pages(maps: str = "/proc/self/maps") -> int:
    """Back this process's writable anonymous memory with huge pages, where the kernel can; MiB collapsed.

    For the zygote, once its memory is what every child starts from: fork copies one page-table entry
    per huge page instead of 512, and each child's exit frees as few, which was most of what a fork of a
    process holding PyTorch cost (the heap is on huge pages already, glibc.malloc.hugetlb; Python's object
    arenas and the libraries' own mappings are not). The memory keeps its contents and protections; a
    child that writes to a page still gets a copy of that 4 KiB page alone. Kernels without MADV_COLLAPSE
    (or without transparent huge pages) refuse it, and nothing changes.
    """
    madvise = ctypes.CDLL(None, use_errno=True).madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    collapsed = 0
    with open(maps) as lines:
        ranges = [line.split() for line in lines]
    for fields in ranges:
        if len(fields) > 5 and fields[5] != "[heap]" or "w" not in fields[1]:
            continue  # files (shared with the page cache), the stack, and read-only memory keep their pages
        start, end = (int(x, 16) for x in fields[0].split("-"))
        start = -(-start // HUGE_PAGE) * HUGE_PAGE
        end -= end % HUGE_PAGE
        if end > start and madvise(start, end - start, MADV_COLLAPSE) == 0:
            collapsed += (end - start) >> 20
    return collapsed
