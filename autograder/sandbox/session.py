"""The grader's conversation with one submission's worker.

A `Session` starts a fresh child of the sandbox's zygote, sends it the submission over the child's
own socket, and then sends it calls: many at once as a stream (`stream`, sandbox.stream), or one
(`call`). Each call has a wall-clock deadline, extended by any time it waited for a processor
(sandbox.waiting). The session drains the child's output while it waits, caps what it keeps, and
decodes replies with `values.decode`, which trusts nothing. When a call hangs or the child dies, the
whole process tree is killed and the next call gets a fresh child (which loads the submission again),
so one bad function costs only the checks that call it. Every submission also has a total time
budget. A call still importing a module at its limit (a one-time cost) is timed again warm, in a fresh child
(sandbox.grace).

What the grader believes about a call it establishes itself: the arguments
after the call are read from shared memory the grader owns, the gradients
must be one per argument and of its shape, the processes left running are
counted from outside the sandbox, and time is measured here. The worker's
own account of any of these is never the evidence.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterable

from autograder.authoring.protocol import Call, Reply
from autograder.sandbox import processes, stopped_at, wire
from autograder.sandbox.channel import Channel, Flooded, NoReply
from autograder.sandbox.grace import OneTimeGrace
from autograder.sandbox.limits import Limits
from autograder.sandbox.load_clock import LoadClock
from autograder.sandbox.load_report import LoadReport, load_failed, read_ready
from autograder.sandbox.protections import SandboxError
from autograder.sandbox.region import SharedRegion
from autograder.sandbox.replies import (
    ALWAYS_ROOM,
    REPLIES_KEPT,
    CallFailed,
    CallTimedOut,
    CapturedOutput,
    ReplyRejected,
    Request,
    Stopped,
    WorkerDied,
    past_limit,
    reported_end,
)
from autograder.sandbox.slow_cells import cell_definitions, module_definitions, slow_demo_cells, trimmed_after
from autograder.sandbox.stream import Answer, CallStream
from autograder.sandbox.waiting import Extensions, ProcFiles, WaitCredit
from autograder.sandbox.zygote import Sandbox
from autograder.text import counted, safe

MAX_LOAD_ATTEMPTS = 6
RELOADS_GIVEN_BACK = 3  # load limits' worth of reloads after a restart given back to the budget (start_child_for_calls)
LOADS_SECONDS = 3  # load limits' worth of stopped loads, after which a notebook's loads fall back (_start_child)
NOT_RELOADED = ("the file could not be loaded again after a call ended the worker process: its top-level code did "
                "not finish in the time the submission had left (top-level code should only import and define)")
EVENT_LIMIT = 1 << 20
REGION_BYTES = 4 << 20  # a stream's calls' arrays side by side, so it seldom waits for room (used as written)
REGION_SHARE = 16  # ... but no more of a child's memory (limits.memory_mib) than this fraction of it, up front


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
        self._reloads_given_back = RELOADS_GIVEN_BACK * limits.load_seconds  # seconds left to give back (below)
        # From its first child on: the sandbox's own start (a zygote importing PyTorch on a busy machine)
        # is not the submission's. Later restarts of the zygote are: a submission can cause them.
        self.deadline = math.inf
        self.grace = OneTimeGrace(limits.one_time_seconds)
        # Where the current child's calls find their arrays; mapped in the child, so counted in its memory.
        self.region = SharedRegion(min(REGION_BYTES, max(1 << 16, (limits.memory_mib << 20) // REGION_SHARE)))
        self.channel: Channel | None = None
        self.reply_limits: dict[int, int] = {}  # call id -> the bytes its reply may hold
        self.replies_kept = 0  # bytes of the frames read so far: the grader keeps replies until it judges
        self.proc_files = ProcFiles()  # the child's processor use, read after every call (sandbox.waiting)
        self._zygote_files = ProcFiles()  # the zygote's children, read after every call (extra_processes)
        self._skip: dict[int, tuple[str, str]] = {}  # unit index -> (its label, why it was stopped)
        self._stops: set[int] = set()  # the units a load was stopped at, skipped or trimmed
        self._pid = self._next_id = 0
        self._clock = LoadClock(math.inf)  # this load's deadline, and its cells as they began (load_clock)
        # unit index -> (label, seconds it ran or None, its definitions' code, what it printed where its output, not
        # its time, was stopped: "printed more than 16 MB of output"; else "")
        self._trimmed: dict[int, tuple] = {}
        self._exits: dict = {}

    # -------------------------------------------------------------- public

    def open(self) -> LoadReport:
        """Load the submission; units that hang or kill the worker are skipped."""
        return self._start_child()

    def stream(self, calls: Iterable[Call | Request]) -> list[Answer]:
        """Send `calls` (pulled as they can go; a Request is a call encoded already) and read the replies as they
        come: each call's Answer, up to and including the first with no usable reply, which ends the child."""
        return CallStream(self, calls).run()

    def call(self, call: Call | Request) -> Reply:
        """Run one call (a Request: one encoded already) in the worker. Raises CallFailed when there is no reply.

        A call still importing a module at its limit is stopped and run again in a fresh child, after a
        warm-up run on other inputs; that second run, timed against the limit, is the reply (sandbox.grace).
        """
        answer = CallStream(self, [call]).run()[0]
        if answer.failed:
            raise answer.reply
        return answer.reply

    def _frame_limit(self, header: dict, size: int) -> int:
        """The bytes a frame from the child may hold (sandbox.wire), judged as it begins, its `size` known: its
        call's reply limit (EVENT_LIMIT for the rest), within what the session's frames may hold in all
        (REPLIES_KEPT), which an admitted frame counts against. One call's limit is generous (an honest answer
        can be a few times its inputs); a submission whose every reply came near it had the grading process
        keep gigabytes until it judged them."""
        call = header.get("id")  # the child's word: a list here is no key (a TypeError in this process)
        limit = min(self.reply_limits.get(call, EVENT_LIMIT) if type(call) is int else EVENT_LIMIT,
                    max(ALWAYS_ROOM, REPLIES_KEPT - self.replies_kept))
        self.replies_kept += size if size <= limit else 0
        return limit

    def begin_feedback(self) -> None:
        """Every graded call has been answered: the calls from now on re-run checks for feedback only
        (grading.explain), with a budget of their own, so an example does not depend on how much of the
        budget the graded calls used."""
        self.deadline = time.monotonic() + self.budget

    def close(self) -> None:
        """Stop the child and everything it left running; keep what it printed."""
        self.stop_child()
        self.region.close()
        self.proc_files.close()
        self._zygote_files.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    # -------------------------------------------------------------- for sandbox.stream

    def has_child(self) -> bool:
        return self.channel is not None

    def start_child_for_calls(self) -> CallFailed | None:
        """A fresh child, loaded, for the calls after a restart; the failure if it could not be loaded.

        The budget holds one load: a reload's time is given back, up to RELOADS_GIVEN_BACK load limits in all. A
        file whose allowed top-level set-up takes 8 s had its next check fail for want of time to load it again,
        whichever function that check was for, after one of its functions timed out."""
        extension = min(self.limits.load_seconds, self._reloads_given_back)
        self.deadline += extension
        started = time.monotonic()
        report = self._start_child()
        used = min(extension, time.monotonic() - started)
        self.deadline -= extension - used
        self._reloads_given_back -= used
        if report.failure:
            return WorkerDied(f"the worker could not reload the submission: {report.failure}")
        if self.channel is None:  # a module's top level stopped this time (the budget ran out): no child to call
            why = "; ".join(f"{unit} {reason}" for unit, reason in report.stopped) or "it stopped"
            return WorkerDied(f"{NOT_RELOADED} ({why})")
        return None

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def child_proc(self) -> str | None:
        """The current child's /proc directory, read from outside the sandbox."""
        return self.sandbox.child_proc(self._pid)

    def extra_processes(self) -> int:
        """How many processes the submission runs besides its child, counted from outside the sandbox: asked
        after every call. Where the sandbox's PID namespace shows the child alone (processes.alone, three
        reads of files kept open), that is the answer; else every process there is counted."""
        if self._alone():
            return 0
        return self.sandbox.submission_processes() - 1

    def has_company(self) -> bool:
        """Whether the submission has a process besides its child now, one that ended and was not waited for
        included, counted from outside the sandbox: asked at a call's deadline (sandbox.waiting)."""
        return bool(self._pid) and processes.company(self.sandbox.zygote_pid(), self._pid, self.sandbox.in_namespace)

    def _alone(self) -> bool:
        if not self._pid or not self.sandbox.in_namespace:
            return False
        zygote, child = self.sandbox.child_proc(1), self.sandbox.child_proc(self._pid)  # PID 1: the zygote
        if zygote is None or child is None:
            return False
        try:
            return processes.alone(self._zygote_files.read(zygote, "task/1/children"), self._pid,
                                   self.proc_files.read(child, "stat"),
                                   self.proc_files.read(child, f"task/{self._pid}/children"))
        except OSError:
            return False

    def failure(self, function: str, stop: NoReply, seconds: float, over_budget: bool) -> CallFailed:
        """The failure of a call that gave no reply: how it stopped, and the student-facing explanation."""
        if stop.how is Stopped.TIMEOUT and over_budget:
            return CallTimedOut(f"{function} was stopped: the submission used up its {self.budget:.3g} s budget",
                                Stopped.BUDGET)
        if stop.how is Stopped.TIMEOUT:
            return past_limit(function, seconds)
        if stop.how is Stopped.REJECTED:
            return ReplyRejected(f"{function} {stop.says}")
        return WorkerDied(f"{function} {stop.says}", ended=stop.ended)

    def ask_where(self) -> bool:
        """Ask the child where its call's code is (sandbox.stopped_at); whether the question could be sent."""
        host = self.sandbox.host_pid(self._pid) if self.channel is not None and self._pid else None
        return host is not None and stopped_at.ask(host)

    def stop_child(self) -> None:
        """Kill the child's whole process tree; count what it left (not the child itself), keep its output."""
        if self.channel is None:
            return
        self.channel.close()
        self.channel = None
        self.reply_limits.clear()
        cleaned = self.sandbox.clean(child=self._pid)
        self._exits = cleaned.exits
        if cleaned.restarted:
            self.notes.append(cleaned.restarted)
        self.killed_processes += cleaned.killed

    # -------------------------------------------------------------- loading

    def _start_child(self) -> LoadReport:
        # A notebook's loads that keep being stopped fall back in two steps: every cell after the first stopped one
        # runs only its definitions (stage 1), then only the cells before the first stopped one run (stage 2).
        loading, stage = 0.0, 0  # seconds the loads stopped so far took; the fallback reached
        for attempt in range(MAX_LOAD_ATTEMPTS):
            long = loading >= LOADS_SECONDS * self.limits.load_seconds
            if self.spec["kind"] != "py" and self._stops:
                if stage == 0 and (long or attempt >= MAX_LOAD_ATTEMPTS - 2):
                    stage = 1
                    self._trim_after_first_stopped()
                elif stage == 1:
                    stage = 2
                    self._skip_after_first_stopped()
            attempt_started = time.monotonic()
            try:
                sock, out, stamps, self._pid = self.sandbox.spawn(
                    self.limits.rlimits(self.budget, self.sandbox.protections.separate_user))
            except (OSError, SandboxError) as error:
                return load_failed(f"the worker could not start ({error})")
            if self.deadline == math.inf:
                self.deadline = time.monotonic() + self.budget
            self.region.close()  # each child gets a region of its own; the last one's arrays were read by now
            self.channel = Channel(sock, out, self.output, self.limits.max_output_mib << 20, self._death, stamps)
            self.channel.parser.limit_for = self._frame_limit
            seconds = min(self.limits.load_seconds, self.deadline - time.monotonic())
            try:
                header = self._load(seconds)
            except NoReply as stop:
                unit, killed = self._clock.unit, self.killed_processes
                self.stop_child()
                left, timed_out = self.killed_processes - killed, stop.how is Stopped.TIMEOUT
                printed = stop.printed if isinstance(stop, Flooded) else ""  # stopped for its output, not its time
                if unit is None:
                    waited = (f"it was not ready within {seconds:g} s" if seconds > 0 else
                              f"the submission's {self.budget:g} s budget was used up before it was ready")
                    cause = waited if timed_out else stop.cause
                    return load_failed(f"the worker stopped before running any code ({cause})", seconds > 0)
                # The limit is the whole load's: a cell that takes 6 s may be the one running when it is reached.
                reason = (f"was still running at the load limit of {seconds:g} s (which counts the code before it "
                          "too) and was stopped") if timed_out else stop.says
                reason += f", and the {counted(left, 'process', 'processes')} it had started with it" if left else ""
                # Trimmed (slow_cells) unless it was already (its definitions alone ran past the limit), trims to
                # nothing, or started processes: those are skipped whole, as is any cell that ended the worker.
                again = unit[0] in self._trimmed
                if timed_out:
                    self._trim_slow_demos()
                elif printed and self.spec["kind"] != "py" and unit[0] not in self._trimmed:
                    # A cell stopped for its output runs only its definitions next, as a slow one does: a log goes.
                    code = cell_definitions(self.spec["sources"], unit[0], self.spec.get("graded", ()))
                    self._trimmed[unit[0]] = (unit[1], None, code or "", printed)
                self._stops.add(unit[0])
                if again or left or not self._trimmed.get(unit[0], ("", 0, ""))[2].strip():
                    self._trimmed.pop(unit[0], None)
                    self._skip[unit[0]] = (unit[1], reason)
                # The budget holds one load and every call: each load a skipped unit spoiled is given back, or
                # a notebook's second hanging demo cell would leave no time to load the rest or call anything.
                # The loads' own time is bounded instead: past LOADS_SECONDS limits, the fallbacks begin.
                self.deadline += time.monotonic() - attempt_started
                loading += time.monotonic() - attempt_started
                if self.spec["kind"] == "py":
                    # A module stops at its first statement past the limit or the output cap, as `import` would.
                    # Once, it is loaded again with its definitions alone (slow_cells; the cap holds there too): its
                    # demo goes. Not where the budget, not the limit, stopped it (a reload after a call ended it).
                    past = printed or (timed_out and seconds >= self.limits.load_seconds)
                    trim = past and not left and attempt == 0 and module_definitions(self.spec["sources"][0],
                                                                                     self.spec.get("graded", ()))
                    if not trim:
                        return LoadReport(frozenset(), stopped=self._stopped(), hung=timed_out)
                    self._trimmed[0], self._skip = (unit[1], None, trim, printed), {}  # its note names the line stopped
                    continue
                if stage == 2:
                    break
                continue
            # Processes the top-level code started would otherwise be charged to the first function called.
            stray = self.sandbox.stop_others(self._pid)
            return self._load_report(header, stray)
        # The file's doing, not the worker's: it did not load (grading.loading says so), rather than "could not grade".
        return LoadReport(frozenset(), stopped=self._stopped(), gave_up=True)

    def _trim_slow_demos(self) -> None:
        """After a notebook's load ran past its limit, its slow cells run only their definitions (slow_cells)."""
        starts, limit, graded = self._clock.starts, self.limits.load_seconds, self.spec.get("graded", ())
        stopped = self._clock.cells_time(time.monotonic())  # the grader's own work between cells left out
        for index, label, took, code in slow_demo_cells(starts, stopped, self.spec["sources"], limit, graded):
            if index not in self._skip and index not in self._trimmed:
                self._trimmed[index] = (label, took, code, "")

    def _trim_after_first_stopped(self) -> None:
        """Before a notebook's last load but one, every cell after the first one stopped runs only its definitions:
        the loads kept being stopped, each at a later demo (sandbox.slow_cells)."""
        labels, sources, graded = self.spec["labels"], self.spec["sources"], self.spec.get("graded", ())
        for index, label, code in trimmed_after(min(self._stops), labels, sources, graded):
            if index not in self._skip:
                self._trimmed.setdefault(index, (safe(label, 40), None, code, ""))

    def _skip_after_first_stopped(self) -> None:
        """Before a notebook's last load, every cell after the first one stopped is skipped as well. Each load so
        far was stopped at a later cell (demo cells that each finish, but together outlast the load limit, which
        counts the cells before them too), and every time the cells before the first one stopped had loaded:
        those are loaded, and their functions graded, rather than none."""
        first = min(self._stops)
        for index, label in enumerate(self.spec["labels"]):
            if index > first and index not in self._skip:
                self._skip[index] = (safe(label, 40), "was not run: the loads before had each been stopped at a "
                                     "later cell, so the last load ran only the cells before the first one stopped")

    def _load(self, seconds: float) -> dict:
        """Send the submission and wait up to `seconds` for the child to be ready; its report's header. Raises
        NoReply at the deadline, and when the child dies or sends something malformed."""
        started = time.monotonic()
        clock = self._clock = LoadClock(started + max(seconds, 0.0), self.limits.load_seconds,
                                        len(self.spec["sources"]) if self.spec["kind"] != "py" else 0)
        # The time the load waited for a processor is given back, as a call's is (sandbox.waiting): a top level
        # that finishes within the limit on a quiet machine must not be stopped on a busy one.
        extensions = Extensions(WaitCredit(self.child_proc(), seconds, files=self.proc_files,
                                           company=self.has_company), self.deadline - started)
        self.channel.output_mark = self.output.total  # the flood limit is per load, too
        self.channel.send(self._load_frame())
        while True:
            # Looked at before the deadline is judged: a report (or a death) already here when a busy grader
            # wakes up late is not a timeout.
            for header, _ in self.channel.wait(clock.deadline - time.monotonic()):
                clock.heard(header, time.monotonic())  # a unit begins, or the grader's own work after a cell
                if header.get("event") == "ready":
                    self.channel.drain_output()
                    return header
            if clock.deadline - time.monotonic() <= 0:
                later = extensions.extended(clock.deadline, started)
                if later is None:
                    raise NoReply(Stopped.TIMEOUT)
                clock.deadline = later

    def _load_frame(self) -> list:
        """The submission itself, sent to the child over its own socket (never through the zygote)."""
        spec = self.spec
        header = {"op": "load", "skip": sorted(self._skip), "graded": [], **{key: spec[key] for key in (
            "kind", "module", "filename", "labels", "graded", "numbers", "checks") if key in spec}}
        sources = [self._trimmed[index][2] if index in self._trimmed else source
                   for index, source in enumerate(spec["sources"])]
        return wire.pack(header, [source.encode("utf-8", "replace") for source in sources])

    def _load_report(self, header: dict, stray: int) -> LoadReport:
        self.killed_processes += stray
        trims = self._trimmed.values()
        return read_ready(header, stopped=self._stopped(), stray_processes=stray,
                          trimmed=tuple((label, took) for label, took, _, printed in trims if not printed),
                          flooded=tuple((label, printed) for label, _, _, printed in trims if printed))

    def _stopped(self) -> tuple:
        return tuple(self._skip[index] for index in sorted(self._skip))

    def _death(self) -> tuple:
        """How the child ended, from the zygote's account of it; none is the sandbox's death (replies.reported_end)."""
        self.stop_child()
        return reported_end(self._exits, self._pid)
