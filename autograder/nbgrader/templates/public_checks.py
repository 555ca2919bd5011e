"""Public checks of @NAME@: released to students, so exact expected values only, no reference.

Each check is a function of `t` (autograder.authoring.Trial) listed in
CHECKS; its points are in course.yaml. `autograder checks @NAME@` lists them.
A check file imports what it needs from `autograder.authoring` only; what the
public and hidden checks share can go in checks_common.py beside this file
(released with it), imported as `from .checks_common import ...`.
"""
import numpy as np

from autograder.authoring import Check, expect_close, expect_equal


def double_small(t):
    """double([1, 2.5]) is [2, 5]."""
    got = t.returned("double", np.array([1.0, 2.5]))
    expect_close(got, np.array([2.0, 5.0]), t.tol(np.float64), "double([1, 2.5])")


def signs_small(t):
    """signs([1, -2, 0, 3]) counts 2 positive, 1 negative and 1 zero entries."""
    got = t.returned("signs", np.array([1.0, -2.0, 0.0, 3.0]))
    # A plain value (a dict, a str, a list, numbers): compared all the way down; the message names the key
    # or index where it differs, e.g. "signs([1, -2, 0, 3]) at key 'zero': got 0, expected 1".
    expect_equal(got, {"positive": 2, "negative": 1, "zero": 1}, "signs([1, -2, 0, 3])")


CHECKS = [Check("double.small", double_small), Check("signs.small", signs_small)]
