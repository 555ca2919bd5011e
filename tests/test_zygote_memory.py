"""Issue 24: the zygote's memory lies on huge pages, so that each fork copies few page-table entries.

A fork copies one entry per 4 KiB page of the parent's anonymous memory and one per 2 MiB huge page;
the zygote forks once or twice a submission. Measured in docs/performance.md (the sixteenth and
twenty-sixth passes).
"""
from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.sandbox.protections import probe
from autograder.sandbox.worker import COLLAPSE_AFTER
from autograder.sandbox.zygote import Sandbox

from conftest import ROOT

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _collapse_possible() -> bool:
    """MADV_COLLAPSE came with Linux 6.1, and does nothing where transparent huge pages are off."""
    version = re.match(r"(\d+)\.(\d+)", platform.release())
    return (version is not None and (int(version[1]), int(version[2])) >= (6, 1) and THP.exists()
            and "[never]" not in THP.read_text())


pytestmark = pytest.mark.skipif(not _collapse_possible(), reason="this kernel cannot collapse memory into huge pages")


def _huge_share(smaps: str) -> float:
    """Of the anonymous memory that `smaps` (a smaps or smaps_rollup text) counts, the share on huge pages."""
    kib = {line.split(":")[0]: int(line.split()[1]) for line in smaps.splitlines()
           if line.startswith(("Anonymous:", "AnonHugePages:"))}
    return kib["AnonHugePages"] / kib["Anonymous"]


MAPPED = """
import ctypes, mmap
from autograder.sandbox.kernel import collapse_anonymous_memory
area = mmap.mmap(-1, 32 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # as malloc maps it
area.write(b"x" * (32 << 20))  # every page touched now, while the kernel gives it small ones (THP mode madvise)
moved = collapse_anonymous_memory()
address = format(ctypes.addressof(ctypes.c_char.from_buffer(area)), "x")
blocks = open("/proc/self/smaps").read().split("\\n" + address + "-")
print(moved >> 20)
print(blocks[1].split("VmFlags")[0])
"""


def test_memory_mapped_on_small_pages_is_moved_onto_huge_ones():
    done = subprocess.run([sys.executable, "-c", MAPPED], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "GLIBC_TUNABLES": ""}, timeout=60)
    assert done.returncode == 0, done.stderr
    moved, area = done.stdout.split("\n", 1)
    assert int(moved) >= 30  # MiB: the area, less at most its unaligned ends
    assert _huge_share(area) >= 0.9


def test_the_zygote_moves_its_memory_onto_huge_pages_once_it_has_served_many_sessions(suite):
    """Before the move, only glibc's heap is on huge pages: about half of a zygote's anonymous memory.

    A zygote of its own: a zygote splits huge pages again as it writes beside its children."""
    with Sandbox(probe("auto"), suite.assignment.preload, warmup=suite.assignment.warmup) as sandbox:
        sandbox.start()
        rollup = Path(f"/proc/{sandbox.zygote_pid()}/smaps_rollup")
        shares = [_huge_share(rollup.read_text())]
        for _ in range(COLLAPSE_AFTER):  # sessions that load nothing: each child ends as its socket closes
            ours, output, stamps, pid = sandbox.spawn({})
            ours.close()
            stamps.close()
            os.close(output)
            sandbox.clean(pid)
            sandbox.readable([])  # answered once the zygote is done with what it does after a clean
            shares.append(_huge_share(rollup.read_text()))
    assert shares[-1] >= 0.75, shares[::50]
    if "[madvise]" in THP.read_text():  # else the kernel may move some of it on its own meanwhile
        assert shares[-2] < 0.75, shares[::50]
