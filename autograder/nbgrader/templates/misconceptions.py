"""Known wrong ideas of @NAME@, and the wrong answers each produces: none yet.

Add a Misconception per idea students get wrong: `wrong` computes the
answer a student holding the idea would give, from the reference, and
`sentence` is what their feedback then says. See solutions/*/misconceptions.py
of other assignments for examples.
"""
from autograder.authoring import Catalogue


def _right(seen):
    """The reference's answer to an observed call."""
    return getattr(seen.ref, seen.function)(**seen.args)


CATALOGUE = Catalogue(misconceptions=(), right=_right)
