"""@NAME@: the reference solution. Never released; the grader compares students' answers with it."""
import numpy as np


def double(x):
    """Twice the input, element by element.

    x: array of any shape -> an array of the same shape, 2 * x.
    """
    return 2 * np.asarray(x)
