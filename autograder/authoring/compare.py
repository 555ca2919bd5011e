"""Trusted comparison of what a student's function returned with what was expected.

Runs in the grader only, on values already rebuilt from plain bytes by
`sandbox.values.decode`. Arrays are checked in a fixed order — missing or not
an array, then shape, dtype, finiteness, values — and the first problem found
becomes the message, phrased so a student knows what to change. Plain values (str, int, bool, None, floats,
and lists, tuples and dicts of them, arrays inside) are compared by `plain_values.expect_equal`, which uses these.
"""
from __future__ import annotations

import numpy as np

from autograder.authoring.checks import CheckFailed, Tolerance
from autograder.authoring.protocol import Opaque, TensorData, chosen
from autograder.authoring.shown import SHOWN, int_text, int_too_long, sized
from autograder.authoring.shown import shown as shown_within

HALF_ADVICE = ("compute in float32 or float64: a half precision (float16, bfloat16) keeps about 3 significant "
               "digits, too few for the checks' tolerances")


def as_array(got, what: str, expected_shape: tuple) -> np.ndarray:
    """The returned value as an ndarray, or CheckFailed saying what it was instead."""
    if isinstance(got, np.ndarray):
        return got
    if got is None:
        raise CheckFailed(f"{what} is None: the function returned nothing (is a `return` missing?)")
    if isinstance(got, TensorData):
        raise CheckFailed(f"{what} is a torch tensor; this function should return a NumPy array")
    if isinstance(got, Opaque):
        raise CheckFailed(f"{what} is {opaque_kind(got)}, not a NumPy array of shape {expected_shape}")
    if isinstance(got, (list, tuple)):
        raise CheckFailed(f"{what} is a {returned_size(got)}, not a NumPy array "
                          f"of shape {expected_shape}; return np.asarray(...) of it, or compute with NumPy")
    if isinstance(got, dict):
        raise CheckFailed(f"{what} is a {returned_size(got)}, not a NumPy array of shape {expected_shape}")
    if isinstance(got, int) and not isinstance(got, bool) and int_too_long(got):
        raise CheckFailed(f"{what} is a single int, {chosen(int_text(got))}, not an array of shape {expected_shape}")
    raise CheckFailed(f"{what} is a single {type(got).__name__} ({shown(got)}), not an array of shape "
                      f"{expected_shape}")


def opaque_kind(value: Opaque) -> str:
    """"a Foo object (detail)": the type's name is the code's choice (a class it made), so it is marked as such."""
    return f"a {chosen(value.type_name)} object" + (f" ({chosen(value.detail)})" if value.detail else "")


def returned_shape(shape) -> str:
    """A shape the student's function returned, as a message quotes it: its sizes are the code's choice (an empty
    array of shape (0, 16351, 18845, 49040) holds four numbers), so it is marked as such (protocol.chosen)."""
    return chosen(str(tuple(int(n) for n in shape)))


def returned_size(value) -> str:
    """"list of 3 items" for a container the function returned; its length is the code's choice, marked so."""
    return sized(value, chosen)

def as_tensor(got, what: str, expected_shape: tuple) -> TensorData:
    """The returned value as a tensor, or CheckFailed saying what it was instead."""
    if isinstance(got, TensorData):
        return got
    if isinstance(got, np.ndarray):
        raise CheckFailed(f"{what} is a NumPy array; this function should return torch tensors "
                          "(compute with torch operations so autograd can follow)")
    if isinstance(got, Opaque) and got.type_name == "torch.Tensor":  # a sparse layout, or a dtype NumPy has not
        advice = "return a dense one (.to_dense())" if got.detail.startswith("layout=") else HALF_ADVICE
        raise CheckFailed(f"{what} is a torch tensor of {got.detail}, which NumPy cannot hold; {advice}")
    as_array(got, what, expected_shape)  # raises with the right message
    raise AssertionError("unreachable")


def expect_pair(value, what: str, names: tuple[str, str] = ("first", "second")):
    """A function that returns two values returned exactly two; `names` are theirs in the contract."""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return value
    if isinstance(value, (tuple, list)):
        kind = f"a {returned_size(value)}"
    elif isinstance(value, np.ndarray):
        kind = f"a single array of shape {returned_shape(value.shape)}"
    elif isinstance(value, TensorData):
        kind = f"a single torch tensor of shape {returned_shape(value.array.shape)}"
    elif isinstance(value, Opaque):
        kind = opaque_kind(value)
    elif isinstance(value, int) and not isinstance(value, bool) and int_too_long(value):
        kind = f"a single int, {chosen(int_text(value))}"
    else:
        kind = "None" if value is None else f"a single {type(value).__name__} ({shown(value)})"
    raise CheckFailed(f"{what} should return a pair ({names[0]}, {names[1]}), got {kind}")


def expect_shape(got: np.ndarray, expected_shape: tuple, what: str, hint: str = "") -> None:
    """The shape must be `expected_shape`; `hint` says what to look at when it is not."""
    if got.shape == tuple(expected_shape):
        return
    swapped = tuple(expected_shape[:-2]) + tuple(expected_shape[-2:][::-1])
    if not hint and len(expected_shape) >= 2 and got.shape == swapped:
        hint = "its last two axes are the other way round"
    raise CheckFailed(f"{what}: expected shape {tuple(expected_shape)}, got {returned_shape(got.shape)}"
                      + (f": {hint}" if hint else ""), got=got)


def expect_close(got, expected: np.ndarray, tol: Tolerance, what: str, shape_hint: str = "",
                 terms: np.ndarray | None = None) -> np.ndarray:
    """Floating-point comparison: array → shape → dtype → finiteness → values.

    expected: the trusted value; may hold −inf (masked scores) and must then
    be matched exactly there. Every entry of `got` is compared: a worker
    cannot know which part of its answer would otherwise be looked at.
    terms: for a sum or a matrix product, the sum of its terms' magnitudes,
    entry by entry (expected's shape): for C = A V, |A| @ |V|, i.e.
    Σⱼ |aᵢⱼ| |vⱼₖ|. Rounding errs in proportion to the terms, not to the
    result, which cancellation can bring near zero (see `allowed_error`).
    """
    got = expect_floating(got, expected, what, shape_hint)
    tol = tolerance_for_precision(tol, got.dtype, expected.dtype)
    flat = got.reshape(-1)
    exp64 = expected.reshape(-1).astype(np.float64, copy=False)  # the reference is float64 already: no copy
    magnitude = None if terms is None else np.asarray(terms, dtype=np.float64)
    if magnitude is not None:  # broadcast_to costs more than most comparisons: only where the shapes differ
        magnitude = (magnitude if magnitude.shape == expected.shape
                     else np.broadcast_to(magnitude, expected.shape)).reshape(-1)
    if not _all_within(flat, exp64, tol, magnitude):
        if rounded_to_lower_precision(tol, flat):  # looked at only when float64's tolerance fails: it costs a pass
            tol = tol.coarser
            if _all_within(flat, exp64, tol, magnitude):
                return got
        _explain_difference(flat, exp64, tol, magnitude, what, expected, got)
    return got


def expect_floating(got, expected: np.ndarray, what: str, shape_hint: str = "") -> np.ndarray:
    """`got` as an array of `expected`'s shape, in a floating-point dtype precise enough to compare; else
    CheckFailed saying which of these it is not. Checked before any value, so a wrong type or dtype is
    never reported as wrong numbers."""
    got = as_array(got, what, expected.shape)
    expect_shape(got, expected.shape, what, shape_hint)
    if got.dtype.kind in "iu":
        raise CheckFailed(f"{what} has integer dtype {got.dtype}; expected floating-point numbers "
                          "(an integer result has lost the fractions)", expected, got)
    if got.dtype.kind != "f":
        raise CheckFailed(f"{what} has dtype {got.dtype}; expected floating-point numbers", expected, got)
    if got.dtype.itemsize < min(4, expected.dtype.itemsize):  # held to no tolerance of its own: a lottery
        raise CheckFailed(f"{what} has dtype {got.dtype}; {HALF_ADVICE}", expected, got)
    return got


BLOCK = 1 << 15  # entries compared at a time (256 KiB of float64): see _all_within


def tolerance_for_precision(tol: Tolerance, got: np.dtype, expected: np.dtype) -> Tolerance:
    """`tol`, or its coarser tolerance for an answer computed in a lower precision than `expected`'s: held to
    that precision's tolerance every time, not by where its values happen to round (Tolerance.coarser)."""
    return tol.coarser if tol.coarser is not None and got.itemsize < expected.itemsize else tol


def rounded_to_lower_precision(tol: Tolerance, flat: np.ndarray) -> bool:
    """Whether a float64 answer is held to its tolerance's coarser one for holding float32 numbers only."""
    return tol.coarser is not None and holds_float32_only(flat)


def precision_of_factors(tol: Tolerance, *factors) -> Tolerance:
    """The tolerance for a product of the student's own `factors` (C = A V, of the weights A they returned): its
    coarser one where a factor holds float32 numbers only. A result can be no more precise than what it was
    computed from, so mixed-precision code (one step run in float32 and cast back) is held to float32's tolerance
    in the product too, not to float64's by where its values happen to round."""
    if tol.coarser is None:
        return tol
    for factor in factors:
        values = factor if isinstance(factor, np.ndarray) else None
        if values is not None and values.dtype.kind == "f" and (
                values.dtype.itemsize < 8 or holds_float32_only(values.reshape(-1))):
            return tol.coarser
    return tol


def holds_float32_only(values: np.ndarray) -> bool:
    """Whether a float64 answer holds float32 numbers only: computed in float32 and cast back, it is held to
    float32's tolerance, as the same answer returned in float32 is. (Any answer could be rounded so on purpose;
    returning float32 gets that tolerance anyway, so doing so gains nothing.)"""
    if values.dtype != np.float64:
        return False
    with np.errstate(over="ignore"):  # a value beyond float32's range becomes inf: not a float32 number
        return bool(np.array_equal(values.astype(np.float32).astype(np.float64), values, equal_nan=True))


def holds_float16_only(values: np.ndarray) -> bool:
    """Whether a float32 or float64 answer holds float16 numbers only: computed in half precision and cast back, it
    is told so, as the same answer returned in float16 is, rather than what its rounding looks like."""
    if values.dtype not in (np.float32, np.float64):
        return False
    with np.errstate(over="ignore"):  # a value beyond float16's range becomes inf: not a float16 number
        return bool(np.array_equal(values.astype(np.float16).astype(values.dtype), values, equal_nan=True))


def _all_within(got: np.ndarray, exp64: np.ndarray, tol: Tolerance, magnitude: np.ndarray | None,
                block: int = BLOCK) -> bool:
    """Whether every entry is within its allowed error, for a reference with no -inf or NaN in it.

    got, exp64, magnitude: flat, of one length. The common case (a right answer, a finite reference), block by
    block in buffers allocated once: the T = 512 comparisons were most of the grader's own time, most of it page
    faults on fresh multi-megabyte temporaries. Anything else, a right answer with masked -inf scores included, is
    left to `_explain_difference`, which decides and says why. NaN or inf in `got` fails here.
    """
    if exp64.size <= block:  # most comparisons are small, and cost their NumPy calls more than their arithmetic
        return _one_block_within(got, exp64, tol, magnitude)
    peak = max(float(exp64.max()), -float(exp64.min()))  # max |expected| without a temporary; NaN stays NaN
    if not np.isfinite(peak):
        return False
    error, allowed, within = np.empty(block), np.empty(block), np.empty(block, dtype=bool)
    for start in range(0, exp64.size, block):
        part = slice(start, start + block)
        expected = exp64[part]
        size = expected.size
        np.abs(np.subtract(got[part], expected, out=error[:size]), out=error[:size])
        limit = _allowed(np.abs(expected, out=allowed[:size]), peak, tol,
                         None if magnitude is None else magnitude[part])
        if not np.less_equal(error[:size], limit, out=within[:size]).all():
            return False
    return True


def _one_block_within(got: np.ndarray, exp64: np.ndarray, tol: Tolerance, magnitude: np.ndarray | None) -> bool:
    """_all_within for one block: the same arithmetic on the same values, in fewer NumPy calls."""
    if not (peak := float((size := np.abs(exp64)).max(initial=0.0))) < np.inf:  # inf or NaN (which stays NaN)
        return False
    error = np.empty(exp64.size)  # float64 whatever got's dtype, as the blocks' buffers are
    np.abs(np.subtract(got, exp64, out=error), out=error)
    return bool(np.less_equal(error, _allowed(size, peak, tol, magnitude)).all())


def _explain_difference(flat, exp64, tol, magnitude, what, expected, got, block: int = BLOCK) -> None:
    """Raise CheckFailed for the first kind of difference found; return if there is none after all.

    flat, exp64, magnitude: flat, of one length (flat in got's dtype, compared as float64). Non-finite
    values first (they must match exactly), then the finite entries against their allowed error. Block by
    block, as `_all_within`: a wrong answer of T = 512 cost 5 ms in whole-array temporaries. Where both
    are finite throughout (most wrong answers), no masks for non-finite entries are needed: a wrong
    score at T = 512 took 4.7 ms with them, 2.8 ms without (timed in one run).
    """
    def index(i):  # a position in the flattened values -> an index into the arrays
        return as_index(np.unravel_index(i, expected.shape))

    # max |expected|, without a temporary: NaN carries through, and an infinity shows
    peak = max(float(exp64.max(initial=-np.inf)), -float(exp64.min(initial=np.inf)))
    if np.isfinite(peak) and _all_finite(flat):
        count, worst, worst_error, worst_allowed = _finite_differences(flat, exp64, tol, magnitude, peak, block)
    else:
        _expect_same_nonfinite(flat, exp64, what, expected, got, index, block)
        count, worst, worst_error, worst_allowed = _differences(flat, exp64, tol, magnitude, block)
    if count:
        shown_got, shown_expected = distinct_digits(np.float64(flat[worst]), exp64[worst])
        shown_error, shown_allowed = _distinct_sizes(worst_error, worst_allowed)
        raise CheckFailed(
            f"{what} differs from the expected values at {count} of {exp64.size} positions; the largest difference "
            f"is at index {index(worst)}: got {chosen(shown_got)}, expected {shown_expected} (differs by "
            f"{chosen(shown_error)}, allowed {shown_allowed})", expected, got)


def _distinct_sizes(error: float, allowed: float) -> tuple[str, str]:
    """An error and its allowance in as few digits as tell them apart ("5.0e-05, allowed 5.0e-05" showed none)."""
    shown = [(f"{error:.{digits}e}", f"{allowed:.{digits}e}") for digits in range(1, 17)]
    return next((pair for pair in shown if pair[0] != pair[1]), shown[-1])


def _finite_differences(flat, exp64, tol, magnitude, peak: float, block: int) -> tuple[int, int, float, float]:
    """(entries over their allowed error, the first of the largest, its error, its allowance), for finite
    values whose largest magnitude in `exp64` is `peak`, block by block in buffers allocated once (fresh
    temporaries of T = 512 were page faults)."""
    room = min(block, exp64.size)
    error, allowed, bad, ranked = np.empty(room), np.empty(room), np.empty(room, dtype=bool), np.empty(room)
    count, worst, worst_error, worst_allowed = 0, -1, -1.0, 0.0
    for start in range(0, exp64.size, block):
        part = slice(start, start + block)
        size = exp64[part].size
        np.abs(np.subtract(flat[part], exp64[part], out=error[:size]), out=error[:size])
        limit = _allowed(np.abs(exp64[part], out=allowed[:size]), peak, tol,
                         None if magnitude is None else magnitude[part])
        over = np.greater(error[:size], limit, out=bad[:size])
        if over.any():
            count += int(np.count_nonzero(over))
            ranked[:size] = -1.0
            np.copyto(ranked[:size], error[:size], where=over)
            here = int(np.argmax(ranked[:size]))
            if error[here] > worst_error:  # the first of equal largest differences, as one argmax would
                worst, worst_error, worst_allowed = start + here, float(error[here]), float(limit[here])
    return count, worst, worst_error, worst_allowed


def _differences(flat, exp64, tol, magnitude, block: int) -> tuple[int, int, float, float]:
    """_finite_differences where either side has non-finite entries (which `_expect_same_nonfinite` found
    to match): those are left out."""
    peak = max((float(np.abs(part[np.isfinite(part)]).max(initial=0.0)) for part in _blocks(exp64, block)),
               default=0.0)
    count, worst, worst_error, worst_allowed = 0, -1, -1.0, 0.0
    for start in range(0, exp64.size, block):
        part = slice(start, start + block)
        kept = np.isfinite(exp64[part])
        exp_finite = np.where(kept, exp64[part], 0.0)
        error = np.where(kept, np.abs(flat[part].astype(np.float64, copy=False) - exp_finite), 0.0)
        allowed = _allowed(np.abs(exp_finite), peak, tol, None if magnitude is None else magnitude[part])
        bad = error > allowed
        if bad.any():
            count += int(bad.sum())
            here = int(np.argmax(np.where(bad, error, -1.0)))
            if error[here] > worst_error:  # the first of equal largest differences, as one argmax would
                worst, worst_error, worst_allowed = start + here, float(error[here]), float(allowed[here])
    return count, worst, worst_error, worst_allowed


def _all_finite(values: np.ndarray) -> bool:
    """Whether every entry is finite: NaN carries through min and max, and an infinity shows in one of them."""
    return bool(np.isfinite(values.min(initial=0.0)) and np.isfinite(values.max(initial=0.0)))


def _blocks(values: np.ndarray, block: int):
    return (values[start:start + block] for start in range(0, values.size, block))


def allowed_error(expected: np.ndarray, tol: Tolerance, terms: np.ndarray | None = None) -> np.ndarray:
    """The error each entry may have: atol · max(1, max|expected|) + rtol · max(|expected|, terms).

    expected: finite values (float64). terms: Σ of the magnitudes of the
    terms summed into each entry (None for a value that is not a sum). A sum
    computed in a lower precision is off by up to about n · ε · Σ|terms|,
    however small the sum itself is, so the relative part scales with the
    terms; without them it scales with the entry itself.
    """
    size = np.abs(expected)
    return _allowed(size, float(size.max(initial=0.0)), tol, terms)


def _allowed(size: np.ndarray, peak: float, tol: Tolerance, terms: np.ndarray | None) -> np.ndarray:
    """allowed_error from |expected| (`size`, overwritten with the result) and its largest entry `peak`."""
    if terms is not None:
        np.maximum(size, terms, out=size)
    size *= tol.rtol
    size += tol.atol * max(1.0, peak)
    return size


def distinct_digits(got: float, expected: float) -> tuple[str, str]:
    """Both numbers with enough significant digits to show where they differ (6 at least, one past the first
    digit that differs)."""
    for digits in range(6, 18):
        if f"{got:.{digits}g}" != f"{expected:.{digits}g}":
            digits = min(digits + 1, 17)
            return f"{got:.{digits}g}", f"{expected:.{digits}g}"
    return f"{got:.17g}", f"{expected:.17g}"


def _expect_same_nonfinite(flat, exp64, what, expected, got, index, block: int = BLOCK) -> None:
    """CheckFailed for the first kind of non-finite mismatch that any entry has, with how many have it."""
    kinds = ("NaN", "an infinite value", "a value other than -inf where -inf is expected")
    counts, firsts = [0, 0, 0], [-1, -1, -1]
    for start in range(0, exp64.size, block):
        mine, theirs = flat[start:start + block], exp64[start:start + block]
        masks = (np.isnan(mine) & ~np.isnan(theirs), np.isinf(mine) & np.isfinite(theirs),
                 np.isneginf(theirs) & ~np.isneginf(mine))
        for kind, mask in enumerate(masks):
            if mask.any():
                counts[kind] += int(mask.sum())
                if firsts[kind] < 0:
                    firsts[kind] = start + int(np.argmax(mask))
    for kind, name in enumerate(kinds):
        if counts[kind]:
            first = firsts[kind]
            where = f"{counts[kind]} positions, e.g." if counts[kind] > 1 else "one position,"
            raise CheckFailed(f"{what} has {name} at {where} index {index(first)} "
                              f"(got {chosen(str(np.float64(flat[first])))}, expected {exp64[first]})", expected, got)


def as_index(position) -> tuple:
    """A position (NumPy's integers) as a tuple of Python ints, as a message shows it."""
    return tuple(int(i) for i in position)


def shown(value) -> str:
    """repr(value), cut to SHOWN characters; an int too long to write is shown as <an int of 10,001 digits>. The
    one way a check should write a returned value into a message: repr() of a returned 10**100000 raises
    ValueError, which would make the check, not the student's answer, the fault (authoring.shown). All of it is the
    code's own choice, marked as such (protocol.chosen): a str can hold a hidden check's inputs, and so can an int
    (six float32 values' bits packed into one) or a float. A value the grader chose is written with `told`."""
    return chosen(shown_within(value, SHOWN))


def told(value) -> str:
    """A value the grader chose (an expected one, a key it asks for), as `shown` writes it, unmarked."""
    return shown_within(value, SHOWN)
