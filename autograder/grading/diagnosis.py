"""Naming the idea behind a wrong answer: the engine that runs an assignment's catalogue.

When a check fails, `diagnose` looks at the calls the check made, last
first, and names the first misconception (autograder.authoring.misconceptions)
whose wrong answer the student's reply matches on a call the student got
wrong, or whose behaviour the call shows. An exception on an input that must
raise is no evidence when the same function raised the same type on an
ordinary input of the check (one the reference answers): its cause is elsewhere. An idea matched by
its wrong answer is named only if the student's other calls of that function fit it too (`Evidence`).
It runs in the trusted grader, on calls already made and replies already decoded; nothing is sent to a worker.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from autograder.authoring.checks import Tolerance
from autograder.authoring.misconceptions import Catalogue, Misconception, Observed, bind_arguments
from autograder.authoring.protocol import Call, Reply, TensorData

# Wrong answers are recomputed for every misconception a failing call might show: on the
# largest cases (a scale check's) that costs tens of milliseconds per idea, and the same idea
# shows on the small cases every function is also checked on, so larger calls are skipped.
MAX_DIAGNOSED_BYTES = 1 << 16


@dataclass(frozen=True)
class _Answer:
    """What a function did with a call: returned `value`, or raised (type, message)."""

    value: Any = None
    raised: tuple[str, str] | None = None


class Evidence:
    """Every call of one submission, against which an idea matched on one call is held.

    At random sizes, or on an input with a single row, another mistake (or none in this function) can
    give the numbers of a known idea by coincidence: two sizes that happen to be equal, an answer of all
    ones where every normalization gives ones, a shape error from another cause. So an idea matched by
    its wrong answer is named only where the student's other calls of the same function fit it: wherever
    the idea's answer differs from the reference's, the student gave the idea's answer (an exception in a
    function built from others, or an input the reference refuses, tells nothing: `_contradicts`). Each
    idea is weighed once per function and submission.
    runs: each check's judged run (grading.attempt.Attempt: its `calls`, (Call, Reply) pairs), passed ones
        included; None for a check that made no calls.
    """

    def __init__(self, runs: list, ref: ModuleType | None, tolerance: dict[str, Tolerance]):
        self._calls = [(call, reply) for run in runs if run is not None for call, reply in run.calls
                       if call.payload_bytes() <= MAX_DIAGNOSED_BYTES]
        self._ref, self._tolerance = ref, tolerance
        self._seen: dict[str, list] = {}  # function -> its (Call, Observed) pairs, observed when first asked
        self._verdicts: dict[tuple[str, str], bool] = {}

    def fits(self, catalogue: Catalogue, idea: Misconception, function: str) -> bool:
        """Whether no call of `function` in the submission contradicts `idea`."""
        key = (idea.id, function)
        if key not in self._verdicts:
            self._verdicts[key] = not any(_contradicts(catalogue, idea, seen, _tolerance_for(call, self._tolerance))
                                          for call, seen in self._of(function))
        return self._verdicts[key]

    def _of(self, function: str) -> list:
        if function not in self._seen and self._ref is not None:
            observed = ((call, observe(call, reply, self._ref)) for call, reply in self._calls
                        if call.function == function)
            self._seen[function] = [(call, seen) for call, seen in observed if seen is not None]
        return self._seen.get(function, [])


def diagnose(catalogue: Catalogue | None, calls: list, ref: ModuleType | None,
             tolerance: dict[str, Tolerance], evidence: Evidence | None = None) -> Misconception | None:
    """The misconception a failing check's calls reveal, or None.

    calls: (Call, Reply) pairs in the order the check made them; the last
    one is usually the call the check failed on, so it is examined first.
    tolerance: by dtype name, as in course.yaml.
    evidence: the submission's other calls, which an idea matched by its wrong answer must fit (None: not held).
    """
    if catalogue is None or ref is None:
        return None
    observed = [(call, observe(call, reply, ref)) for call, reply in calls
                if call.payload_bytes() <= MAX_DIAGNOSED_BYTES]
    observed = [(call, seen) for call, seen in observed if seen is not None]
    rights: dict[int, _Answer | None] = {}

    def right(index: int) -> _Answer | None:  # the reference's answer, computed once and only when needed
        if index not in rights:
            rights[index] = _attempt(catalogue.right, observed[index][1])
        return rights[index]

    # Exceptions the student's functions raised where the reference returns: on ordinary input.
    ordinary = {(seen.function, seen.raised[0]) for index, (_, seen) in enumerate(observed)
                if seen.raised is not None and right(index) is not None and right(index).raised is None}
    for index in reversed(range(len(observed))):
        call, seen = observed[index]
        if seen.raised is not None and (seen.function, seen.raised[0]) in ordinary and right(index) is not None \
                and right(index).raised is not None:
            continue  # raised on ordinary input too, so it says nothing about the input that must raise
        found = _first_match(catalogue, seen, right(index), _tolerance_for(call, tolerance), evidence)
        if found is not None:
            return found
    return None


def diagnose_timeout(catalogue: Catalogue | None, check: str, function: str,
                     earlier: list[tuple[str, str]]) -> Misconception | None:
    """The idea a timeout of `check` (a check of `function`) reveals, or None.

    earlier: (function, status) of the checks run before it. Only an idea
    that lists the check in `too_slow` is named, and only when `function`
    passed at least one earlier check and failed none: its values are right
    on small inputs, so the timeout is its speed at scale, not a hang or a bug.
    """
    if catalogue is None:
        return None
    own = [status for name, status in earlier if name == function]
    if not own or any(status != "passed" for status in own):
        return None
    return next((idea for idea in catalogue.misconceptions if check in idea.too_slow), None)


def observe(call: Call, reply: Reply, ref: ModuleType) -> Observed | None:
    """The call as misconceptions see it; None when the reference has no such function."""
    args = bind_arguments(ref, call.function, call.args, call.kwargs)
    if args is None:
        return None
    after = None
    if reply.inputs is not None:
        positional = len(call.args)
        after = bind_arguments(ref, call.function, reply.inputs[:positional],
                               dict(zip(call.kwargs, reply.inputs[positional:])))
    raised = (reply.raised.type, reply.raised.message) if reply.raised is not None else None
    return Observed(call.function, args, _arrays(reply.value), raised, after, call, reply, ref)


def _first_match(catalogue: Catalogue, seen: Observed, right: _Answer | None, tol: Tolerance,
                 evidence: Evidence | None = None) -> Misconception | None:
    """The first idea the call shows; right: the reference's answer to it (None where it does not apply)."""
    student = _Answer(seen.value, seen.raised)
    student_is_right = right is not None and _same(student, right, tol, compare_raised=True)
    for idea in catalogue.misconceptions:
        if seen.function not in idea.functions:
            continue
        if idea.shows is not None and _safely(idea.shows, seen):
            return idea
        compare_raised = seen.function == idea.functions[0]
        if idea.wrong is None or student_is_right or (student.raised is not None and not compare_raised):
            continue  # an exception matches an idea only on the idea's first function (`_same`): no need to compute
        wrong = _attempt(idea.wrong, seen)
        if wrong is None or (right is not None and _same(wrong, right, tol, compare_raised=True)):
            continue  # the idea gives the right answer here, so the call cannot show it
        if _same(student, wrong, tol, compare_raised) and (
                evidence is None or evidence.fits(catalogue, idea, seen.function)):
            return idea
    return None


def _contradicts(catalogue: Catalogue, idea: Misconception, seen: Observed, tol: Tolerance) -> bool:
    """Whether the call shows the student does not hold `idea`: the idea answers it otherwise than the reference,
    and the student gave neither the idea's answer nor an exception that may have another cause.

    An exception counts only in the function the idea lives in (as in `_first_match`): in a function built from
    others it may come from another part, and an idea's exception there is not compared. An input the reference
    refuses says nothing: an idea says how values go wrong, not what must be refused. Nor does a call where the
    idea's answer is the reference's, whatever the student gave.
    """
    wrong = _attempt(idea.wrong, seen)
    compare_raised = seen.function == idea.functions[0]
    if wrong is None or not compare_raised and (wrong.raised is not None or seen.raised is not None):
        return False
    if _same(_Answer(seen.value, seen.raised), wrong, tol, compare_raised):
        return False
    right = _attempt(catalogue.right, seen)
    return right is not None and right.raised is None and not _same(wrong, right, tol, compare_raised=True)


def _attempt(compute: Callable[[Observed], Any], seen: Observed) -> _Answer | None:
    """Run a catalogue function; None when it says the idea does not apply."""
    with np.errstate(all="ignore"):  # wrong answers overflow and divide by zero on purpose
        try:
            value = compute(seen)
        except Exception as error:  # noqa: BLE001 - an exception is this answer's outcome
            return _Answer(raised=(type(error).__name__, str(error)))
    return None if value is None else _Answer(value=_arrays(value))


def _safely(predicate: Callable[[Observed], bool], seen: Observed) -> bool:
    try:
        return bool(predicate(seen))
    except Exception:  # noqa: BLE001 - a predicate that cannot decide has not found anything
        return False


def _same(a: _Answer, b: _Answer, tol: Tolerance, compare_raised: bool) -> bool:
    if a.raised is not None or b.raised is not None:
        if a.raised is None or b.raised is None or not compare_raised:
            return False
        # Messages are compared too: "ValueError" alone has too many causes.
        return a.raised[0] == b.raised[0] and a.raised[1][:300] == b.raised[1][:300]
    return _same_value(a.value, b.value, tol)


def _same_value(a, b, tol: Tolerance) -> bool:
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return (isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b)
                and all(_same_value(x, y, tol) for x, y in zip(a, b)))
    if a is None or b is None:
        return a is b
    try:
        a, b = np.asarray(a), np.asarray(b)
    except (TypeError, ValueError):
        return False
    if a.shape != b.shape or a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        return False
    if a.dtype.kind == "b" or b.dtype.kind == "b":
        return a.dtype == b.dtype and bool(np.array_equal(a, b))
    a, b = a.astype(np.float64), b.astype(np.float64)
    # NaN and ±inf must sit in the same places: overflow and 0/0 are part of a wrong answer.
    for kind in (np.isnan, np.isposinf, np.isneginf):
        if not np.array_equal(kind(a), kind(b)):
            return False
    finite = np.isfinite(a)
    if not finite.any():
        return True
    a, b = a[finite], b[finite]
    scale = max(1.0, float(np.abs(b).max()))
    return bool(np.all(np.abs(a - b) <= tol.atol * scale + tol.rtol * np.abs(b)))


def _arrays(value):
    """A reply value with torch tensors replaced by their arrays, tuples kept."""
    if isinstance(value, TensorData):
        return value.array
    if isinstance(value, (tuple, list)):
        return tuple(_arrays(v) for v in value)
    return value


def _tolerance_for(call: Call, tolerance: dict[str, Tolerance]) -> Tolerance:
    """The tolerance of the least precise floating-point argument (float64 if none)."""
    sizes = [a.dtype.itemsize for a in (*call.args, *call.kwargs.values())
             if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    return tolerance["float32" if sizes and min(sizes) <= 4 else "float64"]
