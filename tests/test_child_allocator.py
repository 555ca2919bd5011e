"""Issue 24: a child puts a call's arrays where the ones freed before them lay, through the real sandbox.

The zygote's glibc takes blocks of up to 32 MiB from its heap (sandbox.kind.worker_environment). Left
to itself, glibc maps each large block on its own until one has been freed, so a child faulted in and
zeroed fresh pages for the first two arrays of each size: the second array of 4 or 16 MiB faulted
170-500 times again, and none now (docs/performance.md, twenty-sixth pass).
"""
from __future__ import annotations

import pytest

from autograder.authoring.protocol import Call
from autograder.sandbox.limits import Limits
from autograder.sandbox.session import Session

from conftest import module_spec

FUNCTIONS = '''
import resource

import numpy as np


def faults_of_arrays(size, times):
    """The minor page faults of each of `times` arrays of `size` float64 entries, written whole and freed."""
    counts = []
    for _ in range(times):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        array = np.ones(size)
        del array
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return counts
'''


@pytest.fixture
def spec(tmp_path):
    return module_spec(tmp_path, FUNCTIONS)


@pytest.mark.parametrize("mib", [4, 16])
def test_the_second_array_of_a_size_lies_where_the_first_did(sandbox, spec, mib):
    with Session(sandbox, spec, Limits(call_seconds=5.0)) as session:
        assert not session.open().failure
        counts = session.call(Call("faults_of_arrays", ((mib << 20) // 8, 3))).value
    assert counts[0] > 64  # the count is real: the first array's pages were new to this child
    assert max(counts[1:]) <= 16, counts  # on a mapping of its own, the second faulted again
