"""Public checks of @NAME@: released to students, so exact expected values only, no reference.

Each check is a function of `t` (autograder.authoring.checks.Trial) listed in
CHECKS; its points are in course.yaml. `autograder checks @NAME@` lists them.
"""
import numpy as np

from autograder.authoring.checks import Check
from autograder.authoring.compare import expect_close


def double_small(t):
    """double([1, 2.5]) is [2, 5]."""
    got = t.returned("double", np.array([1.0, 2.5]))
    expect_close(got, np.array([2.0, 5.0]), t.tol(np.float64), "double([1, 2.5])")


CHECKS = [Check("double.small", double_small)]
