"""@NAME@: what students implement. Edit this file, then `autograder release @NAME@ --rebuild`.

Every graded function needs a docstring here (students read the contract
there) and the same signature in solutions/@NAME@/reference.py.
"""


def double(x):
    """Twice the input, element by element.

    Args:
        x: array of any shape.

    Returns:
        An array of the same shape as x, equal to 2 * x.
    """
    raise NotImplementedError("double")


def signs(x):
    """How many entries of x are positive, negative and zero.

    Args:
        x: array of any shape.

    Returns:
        A dict {"positive": p, "negative": n, "zero": z} of three ints.
    """
    raise NotImplementedError("signs")
