"""What an assignment's checks are written against: import everything a check file needs from here.

    from autograder.authoring import Check, CheckFailed, Sizes, expect_close, expect_equal, normal

A check is `def name(t)`: it calls the student's function with `t.returned("f", ...)` (or `t.call` for
the whole `Reply`), judges the value with the `expect_*` functions, and raises `CheckFailed` with a
message in the course's words (a returned value goes into it as `shown(value)`, which writes any
value, an int of 100,000 digits too); `CHECKS` lists them as `Check("f.aspect", name, sizes=...)`. A
misconception catalogue defines `CATALOGUE = Catalogue(...)` of `Misconception`s. The modules behind
these names (arguments_after, checks, compare, error_paths, exact, gradients, inputs, misconceptions, protocol,
rounding) are the implementation; a check file imports only this package. Nothing here starts a process or
touches the sandbox.
"""
from autograder.authoring.arguments_after import holds_returned_mark
from autograder.authoring.checks import (
    Check,
    CheckFailed,
    Sizes,
    StudentError,
    Tolerance,
    Trial,
    called_with,
    raise_for,
)
from autograder.authoring.compare import (
    as_array,
    as_tensor,
    expect_close,
    expect_floating,
    expect_pair,
    expect_shape,
    holds_float32_only,
    precision_of_factors,
    shown,
)
from autograder.authoring.error_paths import Inputs, expect_error_path, invalid_first
from autograder.authoring.exact import expect_equal_mask, expect_exact_zeros
from autograder.authoring.gradients import expect_gradients
from autograder.authoring.inputs import mask_rows, normal
from autograder.authoring.misconceptions import Catalogue, Misconception, Observed
from autograder.authoring.plain_values import expect_equal
from autograder.authoring.protocol import Opaque, Reply, TensorData
from autograder.authoring.rounding import (
    FLOAT32_UNIT,
    additive_rounding,
    expect_within_rounding,
    product_rounding,
    rounding_terms,
)
from autograder.authoring.row_sums import expect_rows_sum_to_one

__all__ = [
    "FLOAT32_UNIT", "Catalogue", "Check", "CheckFailed", "Inputs", "Misconception", "Observed", "Opaque", "Reply",
    "Sizes",
    "StudentError", "TensorData", "Tolerance", "Trial", "additive_rounding", "as_array", "as_tensor", "called_with",
    "expect_close", "expect_equal", "expect_equal_mask", "expect_error_path", "expect_exact_zeros", "expect_floating",
    "expect_gradients", "expect_pair", "expect_rows_sum_to_one", "expect_shape", "expect_within_rounding",
    "holds_float32_only", "holds_returned_mark", "invalid_first", "mask_rows", "normal", "precision_of_factors",
    "product_rounding", "raise_for", "rounding_terms", "shown",
]
