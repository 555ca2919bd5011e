"""The grader's conversation with one submission's worker.

A `Session` starts a fresh child of the sandbox's zygote, sends it the submission over the child's
own socket, and then sends it calls, one at a time, each with a wall-clock deadline, extended by any time
the call waited for a processor (sandbox.waiting). It drains the
child's output while it waits, caps what it keeps, and decodes replies with `values.decode`, which
trusts nothing. When a call hangs or the child dies, the whole process tree is killed and the next
call gets a fresh child (which loads the submission again), so one bad function costs only the
checks that call it. Every submission also has a total time budget. A call still importing a module
at its limit (a one-time cost) is timed again warm (sandbox.grace).

What the grader believes about a call it establishes itself: the arguments
after the call are read from shared memory the grader owns, the gradients
must be one per argument and of its shape, the processes left running are
counted from outside the sandbox, and time is measured here. The worker's
own account of any of these is never the evidence.
"""
from __future__ import annotations

import os
import selectors
import socket
import time
from dataclasses import dataclass

from autograder.authoring.protocol import Call, Reply
from autograder.sandbox import values, wire
from autograder.sandbox.grace import OneTimeGrace
from autograder.sandbox.limits import Limits
from autograder.sandbox.protections import SandboxError
from autograder.sandbox.region import SharedRegion
from autograder.sandbox.replies import (
    CallFailed,
    CallTimedOut,
    CapturedOutput,
    ReplyRejected,
    Stopped,
    WorkerDied,
    _raised,
    child_end,
    how_it_ended,
    past_limit,
    read_reply,
    reply_limit,
    request_frame,
    too_large,
)
from autograder.sandbox.waiting import Extensions, WaitCredit
from autograder.sandbox.zygote import Sandbox
from autograder.text import safe

MAX_LOAD_ATTEMPTS = 6
EVENT_LIMIT = 1 << 20


@dataclass(frozen=True)
class LoadReport:
    """How loading the submission's top-level code went."""

    functions: frozenset
    problems: tuple = ()  # (unit label, Raised) for units that raised
    stopped: tuple = ()  # (unit label, reason) for units that hung or killed the worker
    failure: str = ""  # non-empty when the submission could not be loaded at all
    stray_processes: int = 0  # processes the top-level code left running, stopped after loading


class _NoReply(Exception):
    """The child gave no usable reply: how; what the call or unit did, after its name, in the student's words
    (says; "" for a timeout, which the caller words); the same, short, for the worker (cause); see CallFailed.ended."""

    def __init__(self, how: Stopped, says: str = "", cause: str = "", ended: tuple | None = None):
        super().__init__(says or how.value)
        self.how, self.says, self.cause, self.ended = how, says, cause or says, ended


def _died(cause: str, ended: tuple | None = None) -> _NoReply:
    """The child's process ended; cause: how ("it exited with status 1")."""
    return _NoReply(Stopped.CRASHED, f"stopped the worker process ({cause})", cause, ended)


class Session:
    """One submission's child worker, restarted as needed, within a time budget.

    spec: what to load (see `submission.Submission.worker_spec`).
    budget: seconds for everything the submission does (default: limits.submission_seconds).
    notes: what the sandbox did around this submission that its results
        should mention (a restart after files that could not be removed).
    """

    def __init__(self, sandbox: Sandbox, spec: dict, limits: Limits, budget: float | None = None):
        self.sandbox = sandbox
        self.spec = spec
        self.limits = limits
        self.output = CapturedOutput(limits.output_kib * 1024)
        self.killed_processes = 0
        self.notes: list[str] = []
        self.budget = budget or limits.submission_seconds  # seconds for everything the submission does
        self._deadline = time.monotonic() + self.budget
        self._skip: dict[int, tuple[str, str]] = {}  # unit index -> (its label, why it was stopped)
        self._sock: socket.socket | None = None
        self._out: int | None = None
        self._pid = 0
        self._parser = wire.FrameParser(EVENT_LIMIT)
        self._next_id = 0
        self._unit: tuple[int, str] | None = None
        self._exits: dict = {}
        self._output_mark = 0
        self._selector: selectors.BaseSelector | None = None  # the child's socket and output, for its lifetime
        self._region = SharedRegion()  # where the current child's calls find their arrays
        self._grace = OneTimeGrace(limits.one_time_seconds)
        self._importing = False  # the current call said it began importing a module

    # -------------------------------------------------------------- public

    def open(self) -> LoadReport:
        """Load the submission; units that hang or kill the worker are skipped."""
        return self._start_child()

    def call(self, call: Call) -> Reply:
        """Run one call in the worker. Raises CallFailed when there is no reply.

        A call still importing a module at its limit may run on up to the one-time grace's cap; it is
        then run again, warm, and that second run, timed against the limit, is the reply (sandbox.grace).
        """
        seconds = call.seconds or self.limits.call_seconds
        reply, first = self._call_once(call, seconds)
        if first is None:
            return reply
        try:
            reply, _ = self._call_once(call, seconds, grace=False)
        except CallTimedOut as slow:
            raise self._grace.slow_again(call.function, first, slow) from None
        return reply

    def _call_once(self, call: Call, seconds: float, grace: bool = True) -> tuple[Reply, float | None]:
        """The reply, and how long the call took if it ran past `seconds` on the one-time grace (else None)."""
        if self._sock is None:
            report = self._start_child()
            if report.failure:
                raise WorkerDied(f"the worker could not reload the submission: {report.failure}")
        self._next_id += 1
        request, buffers = request_frame(call, self._next_id)
        request["shared"] = layout = self._region.place(buffers)
        fds = [self._region.fd] if self._region.unsent else []
        self._region.unsent = False
        self._parser.limit = reply_limit(call)
        started = time.monotonic()
        budget_left = self._deadline - started
        cap = self._grace.cap(seconds) if grace else seconds
        self._importing = False
        extensions = Extensions(WaitCredit(self.sandbox.child_proc(self._pid), seconds), seconds, cap, budget_left)
        try:
            header, data = self._exchange(wire.pack(request, []), min(seconds, budget_left),
                                          lambda h: h.get("event") == "reply" and h.get("id") == self._next_id,
                                          fds=fds, extend=lambda: extensions.more(self._importing, started))
        except _NoReply as stop:
            self._stop_child()
            if extensions.graced and stop.how is Stopped.TIMEOUT:
                raise self._grace.not_done(call.function, min(cap, budget_left), seconds) from None
            self._grace.available &= not extensions.graced  # given the grace, it did not prove the cost one-time
            raise self._failure(call.function, stop, seconds, budget_left < seconds) from None
        took = time.monotonic() - started
        # Counted from outside the sandbox: the child itself is the only process a finished call may leave.
        extra = self.sandbox.submission_processes() - 1
        if extra > 0:
            self._stop_child()
            raise WorkerDied(f"{call.function} left {extra} processes running after it returned; a function "
                             "must not start processes. They were stopped")
        inputs = None
        if call.return_inputs:  # read back from the grader's own memory, whatever the worker says
            inputs = tuple(values.decode(tree, self._region.read(layout)) for tree in request["args"])
        return read_reply(header, data, call, inputs), took if extensions.graced else None

    def _failure(self, function: str, stop: _NoReply, seconds: float, over_budget: bool) -> CallFailed:
        """The failure of a call that gave no reply: how it stopped, and the student-facing explanation."""
        if stop.how is Stopped.TIMEOUT and over_budget:
            return CallTimedOut(f"{function} was stopped: the submission used up its {self.budget:.3g} s budget",
                                Stopped.BUDGET)
        if stop.how is Stopped.TIMEOUT:
            return past_limit(function, seconds)
        if stop.how is Stopped.REJECTED:
            return ReplyRejected(f"{function} {stop.says}")
        return WorkerDied(f"{function} {stop.says}", ended=stop.ended)

    def close(self) -> None:
        """Stop the child and everything it left running; keep what it printed."""
        if self._sock is None:
            return
        self.killed_processes += self._kill_child()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    # -------------------------------------------------------------- loading

    def _start_child(self) -> LoadReport:
        for _ in range(MAX_LOAD_ATTEMPTS):
            try:
                self._sock, self._out, self._pid = self.sandbox.spawn(self._child_limits())
            except (OSError, SandboxError) as error:
                return LoadReport(frozenset(), failure=f"the worker could not start ({error})")
            self._watch_child()
            self._unit = None
            self._parser = wire.FrameParser(EVENT_LIMIT)  # nothing half-read from a killed child carries over
            seconds = min(self.limits.load_seconds, self._deadline - time.monotonic())
            try:
                header, _ = self._exchange(self._load_frame(), seconds, lambda h: h.get("event") == "ready")
            except _NoReply as stop:
                unit = self._unit
                self._stop_child()
                timed_out = stop.how is Stopped.TIMEOUT
                if unit is None:
                    cause = f"it was not ready within {seconds:g} s" if timed_out else stop.cause
                    return LoadReport(frozenset(), failure=f"the worker stopped before running any code ({cause})")
                reason = f"did not finish within {seconds:g} s and was stopped" if timed_out else stop.says
                self._skip[unit[0]] = (unit[1], reason)
                if self.spec["kind"] == "py":
                    # A module stops at its first failing statement, as `import` would: nothing to retry.
                    return LoadReport(frozenset(), stopped=self._stopped())
                continue
            # Processes the top-level code started would otherwise be charged to the first function called.
            stray = self.sandbox.stop_others(self._pid)
            return self._load_report(header, stray)
        return LoadReport(frozenset(), stopped=self._stopped(),
                          failure=f"loading was stopped {MAX_LOAD_ATTEMPTS} times; the file was not graded")

    def _load_frame(self) -> list:
        """The submission itself, sent to the child over its own socket (never through the zygote)."""
        spec = self.spec
        header = {"op": "load", "kind": spec["kind"], "module": spec["module"], "filename": spec["filename"],
                  "labels": spec["labels"], "skip": sorted(self._skip)}
        return wire.pack(header, [source.encode("utf-8", "replace") for source in spec["sources"]])

    def _child_limits(self) -> dict:
        """The rlimits of worker._set_limits; CPU time backs up the wall-clock budget."""
        limits = self.limits
        return {"memory_mib": limits.memory_mib, "cpu_seconds": int(self.budget) + 5,
                "max_file_mib": limits.max_file_mib, "max_open_files": limits.max_open_files,
                # Process counts are per uid, so the limit is only safe where workers have their own.
                "max_processes": limits.max_processes if self.sandbox.protections.separate_user else 0}

    def _load_report(self, header: dict, stray: int) -> LoadReport:
        functions = header.get("functions")
        problems = header.get("problems")
        if not isinstance(functions, list) or not isinstance(problems, list):
            return LoadReport(frozenset(), failure="the worker sent a malformed report")
        self.killed_processes += stray
        return LoadReport(
            functions=frozenset(safe(f, 100) for f in functions[:500]),
            problems=tuple((safe(p.get("unit"), 40), _raised(p.get("raised"))) for p in problems[:50]
                           if isinstance(p, dict)),
            stopped=self._stopped(), stray_processes=stray)

    def _stopped(self) -> tuple:
        return tuple(self._skip[index] for index in sorted(self._skip))

    # -------------------------------------------------------------- I/O

    def _exchange(self, chunks: list, seconds: float, done, fds: list = (), extend=None) -> tuple[dict, list]:
        """Write `chunks` (`fds` ride with the first), then read frames until `done(header)`; drain output meanwhile.

        Raises _NoReply(Stopped.TIMEOUT) at the deadline, and a _NoReply
        saying what happened when the child dies or sends something malformed. extend: asked at each
        deadline, the seconds to wait on (0 to stop there).
        """
        deadline = time.monotonic() + max(seconds, 0.0)
        self._output_mark = self.output.total  # the flood limit is per call (and per load)
        pending = wire.views_of(chunks)
        fds = list(fds)
        while pending:  # a request usually fits the socket's buffer at once: no need to wait to write
            pending, sent = self._write(pending, fds)
            if not sent:
                break
            fds = []  # the descriptors went with the first bytes sent
        selector = self._selector
        selector.modify(self._sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if pending else 0))
        while True:
            # Looked at before the deadline is judged: a reply (or a death) already here when a busy grader
            # wakes up late is not a timeout.
            for key, mask in selector.select(max(deadline - time.monotonic(), 0.0)):
                if key.fileobj == self._out:
                    self._read_output(selector)
                    continue
                if mask & selectors.EVENT_WRITE:
                    pending, sent = self._write(pending, fds)
                    fds = fds if not sent else []
                    if not pending:
                        selector.modify(self._sock, selectors.EVENT_READ)
                if mask & selectors.EVENT_READ:
                    found = self._read_frames(done)
                    if found is not None:
                        self._drain_output()
                        return found
            if deadline - time.monotonic() <= 0:
                more = extend() if extend is not None else 0.0
                if more <= 0:
                    raise _NoReply(Stopped.TIMEOUT)
                deadline += more

    def _write(self, pending: list, fds: list) -> tuple[list, int]:
        """Send what the socket takes of `pending`, in one gathered write; the rest, and how many bytes went."""
        try:
            if fds:
                sent = socket.send_fds(self._sock, pending[:wire.MAX_CHUNKS], fds)
            else:
                sent = self._sock.sendmsg(pending[:wire.MAX_CHUNKS])
        except BlockingIOError:
            return pending, 0
        except OSError:
            raise _died("it closed its connection") from None
        return wire.after(pending, sent), sent

    def _read_frames(self, done):
        try:
            frames = self._parser.receive(self._sock)
        except BlockingIOError:
            return None
        except (EOFError, ConnectionError):
            ended = self._death()
            raise _died(how_it_ended(ended), ended) from None
        except wire.FrameTooLarge as error:
            raise _NoReply(Stopped.REJECTED, too_large(error)) from error
        except wire.WireError as error:
            raise _NoReply(Stopped.REJECTED, f"was stopped: its process sent a malformed reply ({error})",
                           f"it sent a malformed reply ({error})") from error
        for header, buffers in frames:
            if header.get("event") == "unit" and type(header.get("index")) is int:
                self._unit = (header["index"], safe(header.get("label"), 40))
            elif header.get("event") == "importing" and header.get("id") == self._next_id:
                self._importing = True
            elif done(header):
                return header, buffers
        return None
    def _read_output(self, selector) -> None:
        try:
            chunk = os.read(self._out, 1 << 16)
        except BlockingIOError:
            return
        if chunk:
            self.output.add(chunk)
            if self.output.total - self._output_mark > self.limits.max_output_mib << 20:
                raise _NoReply(Stopped.CRASHED, f"printed more than {self.limits.max_output_mib} MB of output "
                               "and was stopped; remove the prints from your code")
        else:
            selector.unregister(self._out)
            os.close(self._out)
            self._out = None

    def _drain_output(self) -> None:
        if self._out is None:
            return
        os.set_blocking(self._out, False)
        try:
            while chunk := os.read(self._out, 1 << 16):
                self.output.add(chunk)
        except BlockingIOError:
            pass

    def _death(self) -> tuple | None:
        """How the child ended, from the zygote's account of it: ("exit", code), ("signal", name) or None."""
        self._stop_child()
        return child_end(self._exits.get(str(self._pid)))

    def _stop_child(self) -> None:
        """Kill the child's whole process tree mid-submission; count what it left (not the child itself)."""
        self.killed_processes += self._kill_child()

    def _watch_child(self) -> None:
        """One selector for the new child's lifetime: its socket (non-blocking) and its output pipe."""
        self._sock.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._sock, selectors.EVENT_READ)
        self._selector.register(self._out, selectors.EVENT_READ)

    def _kill_child(self) -> int:
        """Kill every process of this submission, keep the rest of its output; how many it left besides the child."""
        if self._sock is None and self._out is None:
            return 0
        self._selector.close()
        self._region.close()  # the next child gets a region of its own
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._drain_output()
        if self._out is not None:
            os.close(self._out)
            self._out = None
        cleaned = self.sandbox.clean(child=self._pid)
        self._exits = cleaned.exits
        if cleaned.restarted:
            self.notes.append(cleaned.restarted)
        return cleaned.killed


