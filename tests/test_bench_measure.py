"""The bench's processor-time split (bench/measure.py): each part of a real process tree is charged what it used.

The tree mimics `grade`'s: the command forks a grading process (its own command line), and starts a
zygote (`python -c`) whose forked children each burn processor time and are reaped by it, as the
submissions' processes are. Every child is shorter than a reading's interval, and still counted.
"""
from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from measure import run_measured  # noqa: E402

SPIN = """
import os, subprocess, sys, time

def spin(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass

def forked(seconds):
    pid = os.fork()
    if pid == 0:
        spin(seconds)
        os._exit(0)
    os.waitpid(pid, 0)
"""
# A zygote outlives its children (the grader closes it after the last one): its last reading sees them all.
ZYGOTE = SPIN + "spin(0.1)\nfor _ in range(3):\n    forked(0.4)\ntime.sleep(0.6)\n"
COMMAND = SPIN + f"""
zygote = subprocess.Popen([sys.executable, "-c", {ZYGOTE!r}])
forked(0.6)
zygote.wait()
time.sleep(0.6)  # the last readings see everything reaped
"""


def test_the_split_charges_each_part_of_the_tree_what_it_used():
    done = run_measured([sys.executable, "-c", COMMAND])
    assert done.returncode == 0, done.stderr
    split = done.processor
    assert 1.1 <= split.submissions <= 1.5  # three children of 0.4 s, charged to the zygote when it reaped them
    # The forked process with the command's own command line: what it used after the last reading is lost.
    assert 0.3 <= split.grading <= 0.8
    assert 0.05 <= split.zygotes <= 0.35 and split.zygotes_start <= split.zygotes
    assert split.command < 0.4
    assert split.submissions_kernel <= split.submissions and split.other < 0.1
