"""A function whose answer to the same inputs changes from call to call: noise, dropout or state kept between calls.

Its wrong answers fit no known idea, so without this its feedback would only list the values that differ.
When no idea explains a failing check (grading.diagnosis), one of its calls is sent again, after every graded
call has been answered (grading.explain), and the two answers are compared. The zygote seeds the libraries'
generators (sandbox.libraries.seed_random), so the second answer draws other numbers than the first, but the
same ones in every run: the feedback, like the points, is the same each time the file is graded.
Feedback only: nothing here changes a status or a score.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autograder.authoring.misconceptions import Misconception
from autograder.authoring.protocol import Call, Reply, TensorData
from autograder.sandbox.replies import CallFailed

# The largest call sent again: a few milliseconds at most, like one of shrinking's re-runs.
MAX_REPEATED_BYTES = 1 << 16
# Differences of a few units in the last place can come from the same code on the same values (a library's
# vectorized loop over memory aligned otherwise); randomness and leftover state differ by far more.
ULPS = 64

VARYING = Misconception(
    id="answers_vary",
    sentence=("called again with the same inputs, it gave a different answer: randomness in it or in what it "
              "calls (noise, dropout, np.random or torch.rand) or state it keeps from earlier calls changes what it "
              "returns. An answer must depend on the inputs alone: take the randomness out (dropout_p=0, no dropout "
              "layer) and keep no state between calls"),
    functions=())


def answers_vary(calls: list[tuple[Call, Reply]], call_again: Callable[[Call], Reply]) -> bool:
    """Whether one of a failing check's `calls` that returned a value returns a different one when sent again.

    The call whose answer has the most entries is sent (of those small enough; ties: the last, the one most likely
    to have failed): randomness shows surest in a large answer, where dropout of p = 0.1 over a lecture example's
    four weights gave the same answer again about half the time. Not one of shrinking's budgeted re-runs
    (shrink.ShrinkBudget), whose count decides where its examples stop: one call per function at most
    (`checks_to_repeat`), within its own time limit. A call that fails or raises the second time tells nothing."""
    answered = _answered(calls)
    if not answered:
        return False
    call, first = max(reversed(answered), key=lambda pair: entries(pair[1].value))  # max keeps the first: the last
    try:
        second = call_again(call)
    except CallFailed:
        return False
    return second.raised is None and differ(first.value, second.value)


def checks_to_repeat(judged: list) -> set[str]:
    """The names of the checks, one per function, whose call `answers_vary` sends again: of each function's failing
    checks that a reply shows (explain.Judged.explainable), the one with the largest answer."""
    best: dict[str, tuple[int, str]] = {}
    for one in judged:
        answered = _answered(one.tried.calls) if one.explainable() else []
        size = max((entries(reply.value) for _, reply in answered), default=-1)
        if size > best.get(one.entry.function, (-1, ""))[0]:
            best[one.entry.function] = (size, one.entry.name)
    return {name for _, name in best.values()}


def entries(value) -> int:
    """How many entries a decoded answer holds (an array's size, summed over a tuple's or list's items); 1 else."""
    if isinstance(value, TensorData):
        return value.array.size
    if isinstance(value, np.ndarray):
        return value.size
    if isinstance(value, (tuple, list)):
        return sum(entries(item) for item in value)
    return 1


def _answered(calls: list[tuple[Call, Reply]]) -> list[tuple[Call, Reply]]:
    """The calls that returned a value, small enough to send again."""
    return [(call, reply) for call, reply in calls if reply.raised is None and reply.value is not None
            and call.payload_bytes() <= MAX_REPEATED_BYTES]


def differ(a, b) -> bool:
    """Whether two decoded answers differ by more than the rounding of the same computation repeated.

    Containers are compared entry by entry; values of other kinds (an opaque object, a string) are not compared."""
    if isinstance(a, TensorData) and isinstance(b, TensorData):
        return differ(a.array, b.array)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) != len(b) or any(differ(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() != b.keys() or any(differ(a[key], b[key]) for key in a)
    if isinstance(a, int) and isinstance(b, int):  # exactly: an int may be too large for a float
        return a != b
    if isinstance(a, float) and isinstance(b, float):
        return differ(np.asarray(a), np.asarray(b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return _arrays_differ(a, b)
    return False


def _arrays_differ(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return True
    if a.dtype.kind in "fc":
        finite = np.abs(a[np.isfinite(a)])
        size = float(finite.max()) if finite.size else 1.0
        step = ULPS * float(np.finfo(a.dtype).eps) * max(size, 1.0)
        return not np.allclose(a, b, rtol=0.0, atol=step, equal_nan=True)
    if a.dtype.kind in "biu":
        return not np.array_equal(a, b)
    return False
