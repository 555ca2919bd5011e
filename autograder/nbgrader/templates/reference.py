"""@NAME@: the reference solution. Never released; the grader compares students' answers with it."""
import numpy as np


def double(x):
    """Twice the input, element by element.

    x: array of any shape -> an array of the same shape, 2 * x.
    """
    return 2 * np.asarray(x)


def signs(x):
    """How many entries of x are positive, negative and zero.

    x: array of any shape -> {"positive": p, "negative": n, "zero": z}, three ints.
    """
    x = np.asarray(x)
    return {"positive": int((x > 0).sum()), "negative": int((x < 0).sum()), "zero": int((x == 0).sum())}
