"""One call's messages, as the grader writes and reads them.

`request_frame` turns a Call into the wire header and buffers a worker
answers (`encode_call` encodes it once, as a Request, for many sendings);
`read_reply` decodes the answer and refuses what cannot be trusted:
gradients that are not one per argument and of its shape, anything the
wire decoder rejects. The
`CallFailed` family is how a call that produced no usable reply ends, and
`Stopped`, which each carries, is the one word for how it ended;
`CapturedOutput` keeps what the calls printed.
Used by the sandbox's Session and by the in-kernel runner alike.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from autograder.authoring.protocol import Call, Parameter, Raised, Reply, TensorData
from autograder.sandbox import values, wire
from autograder.text import safe


class Stopped(Enum):
    """How a call that gave no usable reply ended: what every consumer decides by, never the message.

    The value is the word a check's result stores (CheckResult.stopped), so it must never change.
    """

    TIMEOUT = "timeout"  # it ran past its own time limit
    BUDGET = "budget"  # the submission's whole time budget ran out while it ran
    CRASHED = "crashed"  # the worker process ended or was stopped: it exited, was killed, flooded its output
    LEFT_RUNNING = "left running"  # the call returned, but left processes running, which the grader stopped
    REJECTED = "rejected"  # the worker answered, but the reply could not be trusted (too large, malformed)

    @property
    def timed_out(self) -> bool:
        """Whether the clock stopped the call (its limit or the submission's budget)."""
        return self in (Stopped.TIMEOUT, Stopped.BUDGET)


class CallFailed(Exception):
    """A call produced no usable reply; `how` says how it ended, the message says it to the student.

    ended: how the worker process ended on its own, as the zygote saw it (("exit", code) or
    ("signal", name)); None when it did not, or when the grader stopped it (a timeout, a flood of
    output, processes left running) or nobody saw.
    """

    how = Stopped.CRASHED

    def __init__(self, message: str, how: Stopped | None = None, ended: tuple | None = None):
        super().__init__(message)
        self.how = how or self.how
        self.ended = ended


class CallTimedOut(CallFailed):
    """The clock stopped the call: how is Stopped.TIMEOUT, or Stopped.BUDGET when the submission's time ran out.

    idle: stopped at its own limit without having used that much processor time, by the kernel's account
    read from outside the sandbox (sandbox.waiting): it slept, or something held it up. asleep: idle, and
    asleep in `time.sleep` at its deadline, so the wait was the submission's own (WaitCredit.asleep). resting:
    idle, and its main thread sleeping interruptibly at its deadline, in a wait it asked for (asleep or not), not
    stopped, in a disk wait or running (WaitCredit.resting). busy: idle, and kept waiting for a processor for
    half its limit or more: the machine left it short of processor time (WaitCredit.busy).
    at_limit: the message ends on the call's own limit, which the grader may then compare with the
    reference's time (not so for a one-time warm-up that ran out of its own, longer time).
    where: where the child said its code was when it was stopped, for the student ("line 5 (`while True:`)";
    sandbox.stopped_at), or "".
    spent: what the kernel counted of it, for the student ("the operating system counted 0.10 s of processor
    time for it"; WaitCredit.spent), or "". in_kernel: most of that was the kernel's (memory allocated or
    touched), so the call was not computing in Python.
    cause: what the sandbox knows stopped it, as what to do ("import what the function needs at the top of the
    file"), said in place of any other advice (grading.explain.stopped_advice), or "".
    """

    how = Stopped.TIMEOUT
    idle = False
    asleep = False
    resting = False
    busy = False
    in_kernel = False
    at_limit = True
    where = ""
    spent = ""
    cause = ""


class WorkerDied(CallFailed):
    """The worker process ended during the call, or was stopped for what the call did."""

    how = Stopped.CRASHED


class LeftRunning(WorkerDied):
    """The call returned, but processes it started were still running: its child was stopped with them. Nothing
    crashed, so a TA's summary names it by the processes left (SubmissionResult.killed_processes), not as a crash."""

    how = Stopped.LEFT_RUNNING


class ReplyRejected(CallFailed):
    how = Stopped.REJECTED


class SandboxLost(BaseException):
    """A child died and its zygote is gone with it, so nothing says how the child ended: something outside ended
    the sandbox (the kernel's out-of-memory killer, a kill), not the submission. The grader grades the file again
    from the start in a fresh sandbox (grading.grader_faults.again_if_sandbox_lost). A BaseException, so that no
    `except Exception` on the way (a check's code, the plan's) takes it for a call that failed."""


# The replies of one session together (the grader keeps them until it judges): a few MB for an honest file, the
# T = 512 answers included. One reply may hold ALWAYS_ROOM however much came before.
REPLIES_KEPT = 256 << 20
ALWAYS_ROOM = 1 << 20


def reply_limit(call: Call) -> int:
    """The most bytes a reply to `call` may hold: an honest answer is at most a few times the size of the inputs."""
    return (32 << 20) + 16 * call.payload_bytes()


def past_limit(function: str, seconds: float) -> CallTimedOut:
    """The failure of a call stopped at its own time limit of `seconds`."""
    return CallTimedOut(f"{function} did not return within {seconds:.3g} s and was stopped")


def too_large(error: wire.FrameTooLarge) -> str:
    """What a call whose reply was refused unread for its size did, after its function's name."""
    return (f"returned {size_text(error.size)}, far more than an answer to this call can be "
            f"(limit {size_text(error.limit)}, lower once the submission's replies together near "
            f"{size_text(REPLIES_KEPT)}); it was not read")


@dataclass(frozen=True)
class Request:
    """A call encoded for the wire once, to be sent any number of times.

    A kept plan's calls go to every student of an input set (grading.plan.KeptPlans), so they are
    encoded when kept, not again at each sending. header: the wire header without the call's id;
    buffers: views of the call's arrays (read-only in a kept plan, so the encoding cannot go stale).
    """

    call: Call
    header: dict
    buffers: list

    def frame(self, call_id: int) -> tuple[dict, list]:
        """The header (a copy, with `call_id`) and buffers of one sending."""
        return dict(self.header, id=call_id), self.buffers


def encode_call(call: Call) -> Request:
    """`call` as the wire header and buffers a worker answers."""
    buffers: list = []
    header = {"op": "call", "function": call.function,
              "args": [values.encode(a, buffers) for a in call.args],
              "kwargs": {k: values.encode(v, buffers) for k, v in call.kwargs.items()},
              "as_tensors": call.as_tensors, "return_inputs": call.return_inputs,
              "mark_returned": call.mark_returned,
              "backward": None if call.backward is None else [values.encode(g, buffers) for g in call.backward]}
    return Request(call, header, buffers)


def argument_trees(header: dict) -> list:
    """A call header's trees of its arguments, positional then keyword in the call's order: what `Reply.inputs`
    reads back after the call."""
    return [*header["args"], *header["kwargs"].values()]


def request_frame(call: Call, call_id: int) -> tuple[dict, list]:
    """The wire header and buffers asking a worker to make `call`."""
    return encode_call(call).frame(call_id)


def read_reply(header: dict, buffers: list, call: Call, inputs: tuple | None = None) -> Reply:
    """Decode and validate a worker's reply to `call`; raises ReplyRejected when it cannot be trusted.

    For a call with `backward`, exactly one gradient per positional argument, each
    None or of that argument's shape. inputs: the arguments after the call,
    as the caller (not the worker) read them.
    """
    try:
        if header.get("raised") is not None:
            return Reply(raised=read_raised(header["raised"], call.kwargs), inputs=inputs)
        if header.get("unsendable") is not None:
            problem = read_raised(header["unsendable"])
            raise ReplyRejected(f"the returned value could not be sent back ({problem.describe()})")
        grad_error = header.get("grad_error")
        budget = values.Budget()  # one for the whole reply: its value and its gradients
        return Reply(
            value=values.decode(header.get("value"), buffers, budget),
            inputs=inputs,
            grads=_gradients(header.get("grads"), buffers, call, budget) if grad_error is None else None,
            grad_error=None if grad_error is None else safe(grad_error, wire.MAX_TEXT))
    except values.ValueTooLarge as error:
        raise ReplyRejected(f"{call.function} returned a value too large to grade: {error}. Return what the "
                            "function's contract asks for; bulk numbers belong in a NumPy array") from None
    except (wire.WireError, TypeError, ValueError) as error:
        raise ReplyRejected(f"the reply could not be read: {error}") from None


def _gradients(trees, buffers: list, call: Call, budget: values.Budget) -> tuple | None:
    """One gradient per positional argument, None or shaped like the argument; else ReplyRejected."""
    if call.backward is None:
        return None
    if not isinstance(trees, list) or len(trees) != len(call.args):
        raise ReplyRejected(f"the reply to {call.function} does not carry one gradient per argument")
    grads = tuple(values.decode(tree, buffers, budget) for tree in trees)
    for number, (grad, arg) in enumerate(zip(grads, call.args), start=1):
        array = grad.array if isinstance(grad, TensorData) else grad
        if grad is None:
            continue
        if not (isinstance(array, np.ndarray) and isinstance(arg, np.ndarray) and array.shape == arg.shape
                and array.dtype.kind == "f"):
            raise ReplyRejected(f"the gradient for argument {number} of {call.function} is not a float array "
                                "of that argument's shape")
    return grads


def read_raised(tree, keywords=()) -> Raised:
    """The worker's account of an exception (sandbox.loader.describe) as a Raised, whatever shape it came in.
    keywords: those the call passed, the first of which the function's parameters (the worker's word) do not take
    by name (none is so named, or the one so named comes before `/`) is `missing`."""
    if not isinstance(tree, dict):
        return Raised("Exception", "(no details)")
    line = tree.get("line")
    kinds = tree.get("kinds")
    parameters = _parameters(tree.get("parameters")) if tree.get("unfit") is True else None
    by_name = {p.name for p in parameters if p.kind != inspect.Parameter.POSITIONAL_ONLY} if parameters else set()
    missing = next((name for name in keywords if name not in by_name), "") if parameters is not None else ""
    return Raised(safe(tree.get("type"), 80), safe(tree.get("message", ""), wire.MAX_TEXT),
                  line if type(line) is int else None, tree.get("unfit") is True,
                  cell=safe(tree.get("cell", ""), 40), within=safe(tree.get("in", ""), 80),
                  kinds=tuple(safe(kind, 80) for kind in kinds[:wire.MAX_KINDS]) if isinstance(kinds, list) else (),
                  own=tree.get("own") if type(tree.get("own")) is bool else None,
                  module=safe(tree.get("module", ""), 80), parameters=parameters, missing=missing)


def _parameters(sent) -> tuple[Parameter, ...] | None:
    """A function's parameters as the worker sent them: at most wire.MAX_KINDS of [name, kind, has a default], each
    name an identifier and each kind one of inspect.Parameter's; None for anything else."""
    if not (isinstance(sent, list) and len(sent) <= wire.MAX_KINDS and all(map(_is_parameter, sent))):
        return None
    return tuple(Parameter(name, kind, default) for name, kind, default in sent)


_KINDS = frozenset(int(kind) for kind in type(inspect.Parameter.POSITIONAL_ONLY))  # 0 to 4, as inspect numbers them


def _is_parameter(sent) -> bool:
    return (isinstance(sent, list) and len(sent) == 3 and isinstance(sent[0], str) and sent[0].isidentifier()
            and len(sent[0]) <= 80 and type(sent[1]) is int and sent[1] in _KINDS and type(sent[2]) is bool)


def size_text(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


TAIL_SHARE = 4  # a quarter of what is kept is the end of the output: where a crash's traceback and error are


@dataclass
class CapturedOutput:
    """What the student's code printed, at most `limit` bytes of it: the beginning, and the end, and a count
    of what lies between. The end is kept because a process that fails prints why last (a traceback's final
    line); the first `limit` bytes alone would lose it behind any long output before."""

    limit: int
    head: bytearray = field(default_factory=bytearray)  # the beginning
    tail: bytearray = field(default_factory=bytearray)  # the latest bytes after the beginning
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        keep = self.limit // TAIL_SHARE
        room = self.limit - keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and keep:
            self.tail += chunk[-keep:]
            del self.tail[:-keep]

    def text(self) -> str:
        tail = bytes(self.tail)
        cut = self.total - len(self.head) - len(tail)
        if cut > 0 and b"\n" in tail:  # begin the end at a line's start
            tail = tail[tail.index(b"\n") + 1:]
            cut = self.total - len(self.head) - len(tail)
        text = safe(self.head.decode(errors="replace"))
        if cut > 0:
            text += f"\n[... {size_text(cut)} more output not kept]\n"
        return text + safe(tail.decode(errors="replace"))


# How a signal that ended a worker child usually came about, in the student's words.
_SIGNALS = {"SIGKILL": "killed, perhaps for using too much memory", "SIGXCPU": "killed for using too much CPU time",
            "SIGSEGV": "crashed with a segmentation fault", "SIGXFSZ": "killed for writing a file over the size limit"}


def child_end(reported) -> tuple | None:
    """A child's end as the zygote reported it (["exit", code] or ["signal", name]), checked, as a tuple; else None."""
    parts = [type(part) for part in reported] if isinstance(reported, list) else []
    return tuple(reported) if parts in ([str, int], [str, str]) else None


def reported_end(exits: dict, pid: int) -> tuple:
    """How child `pid` ended by its zygote's account (`exits`: sandbox.zygote.Sandbox.clean's), as `child_end` gives
    it. Raises SandboxLost where there is none: the zygote reaps and reports every child of its own, unless it died
    itself. Before, such a death read "it exited" and cost the submission a check as its own crash."""
    ended = child_end(exits.get(str(pid)))
    if ended is None:
        raise SandboxLost(f"the sandbox's zygote was gone when its child {pid} ended, so nothing reported how")
    return ended


def how_it_ended(ended: tuple | None) -> str:
    """A child's end as the zygote reported it (("exit", code), ("signal", name) or None), in plain words."""
    if ended is None:
        return "it exited"
    kind, detail = ended
    if kind == "signal":
        return _SIGNALS.get(detail, f"killed by {detail}")
    return f"it exited with status {detail}"
