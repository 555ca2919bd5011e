"""Hidden checks of @NAME@: compared with the reference on the random inputs of each student's input set.

Never released. `t.sizes` holds the check's named sizes, which the feedback
shrinks to the smallest that still fail; `t.rng` is seeded by the student's input set
(course.yaml `input_sets`).
"""
import numpy as np

from autograder.authoring import Check, Sizes, expect_close, normal


def double_matches_reference(t):
    """double matches the reference on random float32 and float64 arrays with batch axes."""
    for dtype in (np.float64, np.float32):
        x = normal(t.rng, (*t.sizes["batch"], t.sizes["n"]), dtype)
        expect_close(t.returned("double", x), t.ref.double(x.astype(np.float64)), t.tol(dtype),
                     f"double(x) for {np.dtype(dtype).name} x")


CHECKS = [Check("double.matches_reference", double_matches_reference, sizes=Sizes.of(batch=(2, 3), n=5))]
