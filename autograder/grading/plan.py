"""The calls a submission's session sees, fixed before any of its answers is judged.

A worker that could tell which of its answers failed (a failed check re-run,
a shrunk call, a check that stops early) could change its later answers, so
grading has three steps, and only the third looks at the answers:

1. `plan_check`: run the check in the grader against the trusted reference.
   The reference's answers make the check take its full path; its inputs
   come from the student's seeded generator, never from a reply. The calls
   it made are the check's plan.
2. send: every check's planned calls go, in suite order, to the student's
   session as one stream (sandbox.stream), and the replies are recorded
   (`by_check`). What is sent depends on the seed, the suite, the loaded
   file's function names and the sandbox's own observations (a call that
   timed out or crashed ends its check's calls and its child; work as large
   as a timed-out call is not sent again), never on a verdict.
3. `judge`: run the check again on the recorded replies. A check that stops
   at its first failure uses a prefix of its plan. A check that asks for a
   call outside its plan has a fault of its own (`UnplannedCall`): its calls
   must depend on its inputs alone. A check whose every reply is, bit for
   bit, what the reference answered in step 1 would run the same code on the
   same data: it passes as it did there, without running again
   (`Plan.answered_alike`).
"""
from __future__ import annotations

import dataclasses
import signal
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from autograder.authoring.arguments_after import same_bytes
from autograder.authoring.checks import Trial
from autograder.authoring.protocol import Call, Reply
from autograder.grading.attempt import SuiteFault, run_check
from autograder.grading.reference_cache import copied
from autograder.grading.suite import SuiteCheck
from autograder.sandbox import values, worker
from autograder.sandbox.replies import CallFailed, argument_trees, encode_call, read_reply, request_frame

# Input sets whose plans a Grader keeps: all of course.yaml's default 16; a course that gives every student a set
# of their own plans each student's calls once anyway, and keeps only the latest sets' plans.
MAX_KEPT_SETS = 64


class UnplannedCall(Exception):
    """A check asked the student for a call its plan does not hold: a fault in the suite, not the student's."""


@dataclass
class Sent:
    """What one check's planned calls brought back, in order.

    replies: a Reply, or the CallFailed that ended the call; sending stops
        after a CallFailed, so only the last entry can be one.
    seconds: wall-clock time of the check's calls together.
    """

    replies: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def stopped(self) -> CallFailed | None:
        last = self.replies[-1] if self.replies else None
        return last if isinstance(last, CallFailed) else None


@dataclass
class ReferenceAnswers:
    """The trusted reference answering planned calls in this process.

    Through the worker's own call code (`worker._call`), so tensors,
    gradients and arguments read back are as a worker gives them, on copies
    of the arguments as a worker gets them; without the wire, deadlines and
    output capture that untrusted code needs (a busy machine must not cut a
    plan short). namespace: the reference's functions by name.
    """

    namespace: dict

    def call(self, call: Call) -> Reply:
        header, buffers = request_frame(call, 0)
        buffers = [bytearray(buffer) for buffer in buffers]
        # A worker's call stops the interval timers as it returns; here one is the check's own clock
        # (attempt.run_check), which must go on where it was.
        clock = signal.getitimer(signal.ITIMER_REAL) if hasattr(signal, "getitimer") else (0.0, 0.0)
        started = time.monotonic()
        reply, out = worker._call(header, buffers, self.namespace)
        if clock[0]:
            signal.setitimer(signal.ITIMER_REAL, max(clock[0] - (time.monotonic() - started), 1e-3), clock[1])
        inputs = tuple(values.decode(tree, buffers) for tree in argument_trees(header)) if call.return_inputs else None
        return read_reply(reply, out, call, inputs)


@dataclass(frozen=True)
class Plan:
    """A check's calls, fixed before any answer is judged, and what the reference answered them.

    answers: the reference's reply to each call, copied as it came (the
        check may change what it was given); empty where nothing planned.
    passed: the check passed on those answers.
    fault: the SuiteFault the check's own code gave against the reference (it returned a value or ran
        too long), which judging raises for every student rather than running the check again.
    requests: the calls encoded for the wire, once kept (KeptPlans), so that
        the students of a set are sent them without encoding them again.
    """

    calls: list
    answers: tuple = ()
    passed: bool = False
    requests: tuple = ()
    fault: SuiteFault | None = None

    def to_send(self) -> list | tuple:
        """The calls as a session streams them: encoded already where this plan is kept."""
        return self.requests or self.calls

    def answered_alike(self, sent: Sent) -> bool:
        """Whether `sent` brought back, bit for bit, every answer the check passed on against the reference.

        Judging would then run the same code on the same inputs and replies, and pass it again.
        """
        return (self.passed and sent.stopped is None and len(sent.replies) == len(self.answers) == len(self.calls)
                and all(identical(got, answer) for got, answer in zip(sent.replies, self.answers)))


@dataclass
class KeptPlans:
    """Plans kept across students, since a plan follows from the seed and the suite alone (and from its Grader's
    time limits, which its calls carry: so a KeptPlans belongs to one Grader, and is never shared with another).

    For the class, a check that drew nothing from its student's generator (fixed cases, the class-wide
    T = 512 ones): no student's calls can differ. For its seed, any other: every student of one input set
    gets the same (authoring.seeds.student_seed), so the reference answers each set's calls once.
    """

    by_check: dict[str, Plan] = field(default_factory=dict)
    by_seed: OrderedDict[int, dict[str, Plan]] = field(default_factory=OrderedDict)  # the latest used last

    def plan(self, entry: SuiteCheck, seed: int, trial: Callable[[], Trial], reference: ReferenceAnswers) -> Plan:
        """`entry`'s plan for `seed`: the one kept, else planned with a fresh `trial()` (`plan_check`) and kept."""
        planned = self._get(entry.name, seed)
        if planned is None:
            fresh = trial()
            untouched = fresh.rng.bit_generator.state
            planned = self._keep(entry.name, seed, plan_check(entry, fresh, reference),
                                 drew=fresh.rng.bit_generator.state != untouched)
        return planned

    def _get(self, name: str, seed: int) -> Plan | None:
        if name in self.by_check:
            return self.by_check[name]
        if seed in self.by_seed:
            self.by_seed.move_to_end(seed)
            return self.by_seed[seed].get(name)
        return None

    def _keep(self, name: str, seed: int, plan: Plan, drew: bool) -> Plan:
        """`plan`, read-only and with its requests encoded, as kept."""
        # Shared by every student of the set from now on: a write into one of its arrays while grading one
        # student would change what the next is sent or judged against, so any such write raises instead.
        for call in plan.calls:
            _read_only((call.args, call.kwargs, call.backward))
        _read_only(plan.answers)
        plan = dataclasses.replace(plan, requests=tuple(encode_call(call) for call in plan.calls))
        if not drew:
            self.by_check[name] = plan
            return plan
        self.by_seed.setdefault(seed, {})[name] = plan
        self.by_seed.move_to_end(seed)
        if len(self.by_seed) > MAX_KEPT_SETS:
            self.by_seed.popitem(last=False)
        return plan


def _read_only(value) -> None:
    """Every array in `value` (nested in tuples, lists, dicts and dataclasses such as Reply) made read-only."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, (tuple, list)):
        for item in value:
            _read_only(item)
    elif isinstance(value, dict):
        _read_only(list(value.values()))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        _read_only([getattr(value, f.name) for f in dataclasses.fields(value)])


def plan_check(entry: SuiteCheck, trial: Trial, reference: ReferenceAnswers) -> Plan:
    """The calls `entry` makes when `reference` answers them, with its answers; `trial` is the check's.

    Whatever the check does against the reference ends planning; a check
    that fails against the reference has a fault that judging reports.
    """
    answers = []

    def answer(call: Call) -> Reply:
        reply = reference.call(call)
        answers.append(dataclasses.replace(reply, value=copied(reply.value), inputs=copied(reply.inputs),
                                           grads=copied(reply.grads)))
        return reply
    trial.call_function = answer
    try:
        run_check(entry, trial)
    except SuiteFault as fault:
        return Plan([call for call, _ in trial.calls], tuple(answers), fault=fault)
    except Exception:  # noqa: BLE001 - judging runs the check again and reports what it does
        return Plan([call for call, _ in trial.calls], tuple(answers))
    return Plan([call for call, _ in trial.calls], tuple(answers), passed=True)


def by_check(order: list[tuple[SuiteCheck, Plan]], answers: list) -> list[tuple[SuiteCheck, Plan, Sent]]:
    """A stream's answers (sandbox.stream.Answer), check by check in the order `order` sent their calls.

    Ends with the check whose call gave no reply, if one did: the calls sent after it were never answered.
    """
    checks, position = [], 0
    for entry, planned in order:
        mine = answers[position:position + len(planned.calls)]
        position += len(mine)
        sent = Sent([answer.reply for answer in mine], sum(answer.seconds for answer in mine))
        if sent.stopped is None and len(mine) < len(planned.calls):
            break  # sent, but the stream ended before it: it goes again
        checks.append((entry, planned, sent))
        if sent.stopped is not None:
            break
    return checks


def timed_out(sent: Sent) -> CallFailed | None:
    """The timeout that ended the check's calls, if one did (the sandbox's timing, not a verdict)."""
    stopped = sent.stopped
    return stopped if stopped is not None and stopped.how.timed_out else None


def recorded(name: str, planned: list[Call], sent: Sent) -> Callable[[Call], Reply]:
    """A `Trial.call_function` that answers from `sent`, refusing any call not in `planned` at its place."""
    position = 0

    def answer(call: Call) -> Reply:
        nonlocal position
        index, position = position, position + 1
        if index >= len(planned) or not same_call(call, planned[index]):
            raise UnplannedCall(
                f"{name} asked for call {index + 1} ({call.function}), which is not the call planned for it "
                f"(its plan has {len(planned)} calls). A check's calls must follow from its inputs alone, never "
                "from a reply: fix the check")
        if index >= len(sent.replies):  # the check went on after a stopped call: it stays stopped
            raise sent.stopped
        reply = sent.replies[index]
        if isinstance(reply, CallFailed):
            raise reply
        return reply
    return answer


def same_call(a: Call, b: Call) -> bool:
    """The same request: function, options and every argument equal, arrays in dtype, shape and values."""
    return (a.function == b.function and a.as_tensors == b.as_tensors and a.return_inputs == b.return_inputs
            and a.mark_returned == b.mark_returned
            and a.seconds == b.seconds and _same(a.args, b.args) and _same(a.backward, b.backward)
            and sorted(a.kwargs) == sorted(b.kwargs) and all(_same(a.kwargs[k], b.kwargs[k]) for k in a.kwargs))


def identical(a, b) -> bool:
    """The same value to the bit: types, dtypes, shapes and every byte, so -0.0 is not 0.0 here (as it is not
    to np.signbit); what a worker's reply can hold (sandbox.values.decode, authoring.protocol.Reply)."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is np.ndarray:
        return a.dtype == b.dtype and a.shape == b.shape and not a.dtype.hasobject and same_bytes(a, b)
    if kind is tuple or kind is list:
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if kind is dict:  # in order: a check may read a dict's order
        return list(a) == list(b) and all(identical(a[key], b[key]) for key in a)
    if kind is float:
        return a.hex() == b.hex()
    if dataclasses.is_dataclass(a):  # Reply, Raised, TensorData, Opaque
        return all(identical(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return kind in (bool, int, str, type(None)) and a == b


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        # The same bytes are equal values (NaN included); array_equal decides the rest (-0.0 is 0.0).
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and ((not a.dtype.hasobject and same_bytes(a, b))
                                            or bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))))
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return (type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b)))
    return type(a) is type(b) and (a == b or (a != a and b != b))  # NaN equals NaN here


def run_live(entry: SuiteCheck, trial: Trial, session) -> tuple[Plan, Sent]:
    """Plan and send at once, for a suite with no reference to plan with (a student's own public checks).

    trial: its `call_function` is replaced by one that calls `session` and
    records; returns the calls made (with no answers to judge them by) and what they brought back.
    """
    calls, sent = [], Sent()
    started = time.monotonic()

    def call(request: Call) -> Reply:
        calls.append(request)
        try:
            reply = session.call(request)
        except CallFailed as failure:
            sent.replies.append(failure)
            raise
        sent.replies.append(reply)
        return reply
    trial.call_function = call
    try:
        run_check(entry, trial)
    except SuiteFault:
        raise  # judging would only run it as long again
    except Exception:  # noqa: BLE001 - judging runs the check again and reports what it does
        pass
    sent.seconds = time.monotonic() - started
    return Plan(calls), sent
