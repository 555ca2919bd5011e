"""Grading one submission: load it in a sandboxed worker, run every check, score.

The Grader lives in the trusted process with the suite (reference and hidden
checks) and a Sandbox; only calls and their plain-data replies cross over.
The calls a submission's session sees are fixed before any answer is judged
(autograder.grading.plan); feedback that needs more calls (shrinking) runs once every graded call is
answered (autograder.grading.explain). One broken function costs only the checks that call it: a missing
function fails its own checks, a hang or crash restarts the worker for the next one.
"""
from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Sequence

from autograder.authoring.checks import Sizes, Trial
from autograder.authoring.seeds import check_rng, class_seed
from autograder.grading import calibration, confirm, explain, loading
from autograder.grading import grader_faults as faults
from autograder.grading.attempt import Attempt, Replayed, attempt
from autograder.grading.changed_arguments import charged_for_changes
from autograder.grading.compiled import stop_causes
from autograder.grading.course import Course
from autograder.grading.diagnosis import Evidence, diagnose, diagnose_timeout
from autograder.grading.examples import example_json
from autograder.grading.explain import FreshChild, GradedChild, Judged, with_error_sources, with_explanation
from autograder.grading.places import SourceText
from autograder.grading.plan import (
    KeptPlans,
    Plan,
    ReferenceAnswers,
    Sent,
    by_check,
    plan_check,
    recorded,
    run_live,
    timed_out,
)
from autograder.grading.reference_cache import CachedReference
from autograder.grading.restored_cells import as_nbgrader_grades
from autograder.grading.results import NOT_LOADED, CheckResult, SubmissionResult
from autograder.grading.shrink import ShrinkBudget, Shrunk, input_size, shrink
from autograder.grading.statuses import FAILED, PASSED, TIMEOUT, UNGRADED
from autograder.grading.stopped_functions import StoppedFunctions, input_bytes
from autograder.grading.submission import Submission
from autograder.grading.suite import Suite, SuiteCheck
from autograder.grading.varying import VARYING, answers_vary, checks_to_repeat
from autograder.sandbox.load_report import LoadReport
from autograder.sandbox.session import Session
from autograder.sandbox.zygote import Sandbox


class Grader:
    """Grades submissions of one assignment with one sandbox (one job's worth).

    sandbox: None for a Grader that only runs checks against a session it is given (`run_checks`), as
    nbgrader's in-kernel test cells do."""

    def __init__(self, course: Course, suite: Suite, sandbox: Sandbox | None,
                 reference: dict[str, calibration.ReferenceTime] | None = None, shares_with: Grader | None = None):
        """reference: the reference's time on each check (calibration.time_reference), which sets the call
        limits and the submission's budget; None grades with course.yaml's plain call_seconds.
        shares_with: a Grader of the same suite whose class-wide cases and cached reference answers this one
        uses too (the environment probe's, beside the job's), so they are built once."""
        self.course, self.suite, self.sandbox = course, suite, sandbox
        self.time_limits = calibration.call_limits(suite, reference)  # check name -> its CallLimit
        self.budget = calibration.budget(suite, reference, self.time_limits)
        self._shared: dict = shares_with._shared if shares_with else {}  # class-wide cases, see Trial.shared
        self._class_seed = class_seed(course.seed_salt, suite.assignment.name)
        # Planning and judging run each check on the same inputs: the second run reuses the first's results.
        self._reference = shares_with._reference if shares_with else (
            CachedReference(suite.reference) if suite.reference is not None else None)
        self._plans = KeptPlans()  # see _plan
        self._follows: dict[str, bool] = {}  # see _follows_sizes

    def grade(self, submission: Submission) -> SubmissionResult:
        """Grade one file; never raises for anything the file does.

        The one boundary per submission: a fault in the grader itself (a bug, something no check foresaw) becomes
        this submission's result, "could not grade: internal error", with the traceback kept for the instructor,
        and the sandbox is restarted so the next file starts clean. A sandbox that dies under it, ended from
        outside, is not the file's doing: the file is graded again in a fresh one (faults.again_if_sandbox_lost).
        """
        started, submission = time.monotonic(), as_nbgrader_grades(submission, self.suite)  # as nbgrader grades it
        try:
            return faults.again_if_sandbox_lost(lambda: self._grade(submission, started), self.sandbox,
                                                lambda why: self._fault(submission, why, started))
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - SystemExit from a check must not end the batch either
            traceback.print_exc(file=sys.stderr)
            return self._fault(submission, traceback.format_exc(), started)

    def _fault(self, submission: Submission, details: str, started: float) -> SubmissionResult:
        """The internal error of a submission graded since `started`; the sandbox restarts for the next one."""
        if self.sandbox is not None:
            self.sandbox.close()
        protections = self.sandbox.protections if self.sandbox is not None else None
        return faults.internal_error_result(submission.student, self.suite, str(submission.path), submission.sha256,
                                            details, time.monotonic() - started, **faults.sandbox_fields(protections))

    def _grade(self, submission: Submission, started: float) -> SubmissionResult:
        assignment = self.suite.assignment
        seed = assignment.seed_for(self.course.seed_salt, submission.student)
        notes = [submission.note] if submission.note else []
        output, killed, judged = "", 0, []
        # A file that cannot be read does not load either: one flag, the reason first (grading.loading).
        problem = f"{NOT_LOADED}: {submission.problem}" if submission.problem else ""
        did_not_load = bool(problem)
        if problem:
            tests = self._all(loading.NOT_RUN, FAILED)
        else:
            spec = submission.worker_spec(assignment.module, self.suite.functions)
            graded = self._graded_functions()
            text = SourceText.of(spec, stop_causes(submission, graded))
            with self._session(spec) as session:
                load = faults.started(session.open())
                problem = load.failure or loading.not_loaded(submission, load, graded)
                notes += loading.load_notes(load, not problem, submission, graded)
                judged = [] if problem else self.judge_checks(
                    session, load, seed, undefined=loading.undefined_messages(submission, load, graded), source=text)
                # What the graded calls printed and met; the feedback's re-runs below add only processes killed.
                output, notes = session.output.text(), notes + session.notes
                again = confirm.to_run_again(judged)
                if not problem and not again:
                    # Every point is fixed: calls that depend on verdicts may go to this child now.
                    tests = self.explain(charged_for_changes(judged), seed, GradedChild(session))
            killed = session.killed_processes
            if again:  # after the graded session has closed: one submission's processes at a time
                judged, killed_again, note = self._run_again(spec, seed, load, judged, again, text)
                killed += killed_again
                notes.append(note)
            if load.failure:  # the worker's failure, not the file's
                tests = self._all(f"your file could not be loaded: {load.failure}", UNGRADED)
            elif problem:
                did_not_load = True
                tests = self._all(loading.NOT_RUN, FAILED)
            elif again:
                # Every point is fixed and the graded child is gone: calls that depend on verdicts get a new one.
                with FreshChild(lambda: self._session(spec)) as fresh:
                    tests = self.explain(charged_for_changes(judged), seed, fresh)
                killed += fresh.killed_processes
        return faults.blame_environment(SubmissionResult(
            student=submission.student, assignment=assignment.name, file=str(submission.path),
            sha256=submission.sha256, suite_version=self.suite.version, seed=seed,
            **faults.sandbox_fields(self.sandbox.protections),
            tests=tuple(loading.with_causes(tests, submission, None if did_not_load else load, self.suite)),
            problem=problem, did_not_load=did_not_load,
            notes=tuple(notes), printed=output, killed_processes=killed,
            seconds=time.monotonic() - started, graded_at=faults.now()), self.suite, judged, self.sandbox)

    def _session(self, spec: dict) -> Session:
        return Session(self.sandbox, spec, self.suite.assignment.limits, self.budget)

    def _run_again(self, spec: dict, seed: int, first: LoadReport, judged: list[Judged], again: list[SuiteCheck],
                   source: SourceText) -> tuple[list[Judged], int, str]:
        """`judged` with the checks in `again` graded once more in a fresh session (grading.confirm), how
        many processes that session stopped, and the note for the student. source: as `judge_checks`'."""
        with self._session(spec) as session:
            load = session.open()
            rerun = [] if load.failure else self.judge_checks(session, load, seed, again, source=source)
        rerun, note = confirm.decided(again, first, load, rerun)
        return confirm.merged(judged, rerun), session.killed_processes, note

    def replay(self, submission: Submission, check_name: str) -> Replayed:
        """Run one check for one student again as graded: in a fresh session, after the same calls of
        every check before it, so code whose answers depend on what ran before sees what it saw then."""
        entry, submission = self.suite.check(check_name), as_nbgrader_grades(submission, self.suite)
        seed = self.suite.assignment.seed_for(self.course.seed_salt, submission.student)
        if submission.problem:
            return Replayed(self._result(entry, FAILED, loading.NOT_RUN))
        prefix = self.suite.checks[:self.suite.checks.index(entry) + 1]
        spec = submission.worker_spec(self.suite.assignment.module, self.suite.functions)
        with self._session(spec) as session:
            load = session.open()
            if load.failure:
                return Replayed(self._result(entry, UNGRADED, f"your file could not be loaded: {load.failure}"))
            if loading.not_loaded(submission, load, self._graded_functions()):
                return Replayed(self._result(entry, FAILED, loading.NOT_RUN))
            sent = self._send_all(session, load, seed, prefix)
        text = SourceText.of(spec, stop_causes(submission, self._graded_functions()))
        judged = charged_for_changes([self._judge(each, load, seed, sent.get(each.name), source=text)
                                      for each in prefix])[-1]
        earlier = sum(len(done[1].replies) for name, done in sent.items() if name != entry.name and
                      not isinstance(done, str))
        return Replayed(judged.result, judged.tried, earlier)

    def run_checks(self, session, load: LoadReport, seed: int, entries=None, explain: bool = True) -> list[CheckResult]:
        """Run `entries` (default: the whole suite) in order against a loaded submission; their results.

        session: anything with Session's `call`. explain: name the
        misconception of failures (in-kernel grading skips it: the points
        are the same). Nothing is shrunk: that needs a fresh child (`grade`).
        """
        judged = charged_for_changes(self.judge_checks(session, load, seed, entries))
        return self.explain(judged, seed) if explain else [j.result for j in judged]

    def judge_checks(self, session, load: LoadReport, seed: int, entries=None,
                     undefined: dict[str, str] | None = None, source: SourceText | None = None) -> list[Judged]:
        """Send every check's planned calls to `session`, then judge each check from its replies.

        undefined: the message for each function the file does not define (loading.undefined_messages);
        without it, the stub's plain one. source: the file's text (grading.places), which vouches for the places
        messages name and tells what stops a function."""
        entries = list(self.suite.checks if entries is None else entries)
        sent = self._send_all(session, load, seed, entries)
        return [self._judge(entry, load, seed, sent.get(entry.name), undefined, source) for entry in entries]

    def _send_all(self, session, load: LoadReport, seed: int, entries) -> dict:
        """check name -> (its Plan, what its calls brought back), or the message of a check not run.

        Nothing here looks at an answer. The planned calls go as one stream,
        planned as they are sent; a call that gives no reply ends the stream
        and the checks after its own go in a new one. A function stopped at its
        limit is not called again where that would happen again (grading.stopped_functions).
        """
        planner = ReferenceAnswers(self._reference.namespace()) if self._reference is not None else None
        hung = StoppedFunctions()
        sent: dict = {}
        todo = [entry for entry in entries if not _missing(entry, load)]
        if planner is None:  # no reference to plan with (a student's own public checks): sent as they run
            for entry in todo:
                if not self._not_run(entry, hung, sent):
                    self._record(entry, *run_live(entry, self._trial(entry, None, seed, entry.check.sizes), session),
                                 sent, hung)
            return sent
        while todo:  # each check planned once (KeptPlans), however many streams its calls take
            order: list = []
            checks = by_check(order, session.stream(self._planned_calls(todo, order, planner, seed, hung, sent)))
            for entry, planned, replies in checks:
                self._record(entry, planned, replies, sent, hung)
            stopped = bool(checks) and checks[-1][2].stopped is not None
            todo = todo[todo.index(checks[-1][0]) + 1:] if stopped else []
        return sent

    def _planned_calls(self, todo: list, order: list, planner, seed: int, hung: StoppedFunctions, sent: dict):
        """The calls of the checks in `todo`, planned as they are asked for; each check goes into `order` as its
        calls start, and a check not run into `sent`."""
        for entry in todo:
            planned = self._plan(entry, planner, seed)
            if self._not_run(entry, hung, sent, input_bytes(planned.calls)):
                continue
            order.append((entry, planned))
            yield from planned.to_send()

    def _not_run(self, entry: SuiteCheck, hung: StoppedFunctions, sent: dict, size: int | None = None) -> bool:
        """Whether a function of the check was stopped where calling it again (on inputs of `size` bytes, None where
        not planned) would stop it again; if so, the check's message goes into `sent`."""
        why = hung.not_run(entry.check.functions, size)
        if why:
            sent[entry.name] = why
        return bool(why)

    def _record(self, entry: SuiteCheck, planned: Plan, replies: Sent, sent: dict, hung: StoppedFunctions) -> None:
        sent[entry.name] = (planned, replies)
        if timed_out(replies) is not None:
            hung.record(planned.calls[len(replies.replies) - 1].function, input_bytes(planned.calls), entry.name)

    def _plan(self, entry: SuiteCheck, planner: ReferenceAnswers, seed: int) -> Plan:
        """The check's calls with the reference answering them, planned once per input set (plan.KeptPlans)."""
        return self._plans.plan(entry, seed, lambda: self._trial(entry, None, seed, entry.check.sizes), planner)

    def _judge(self, entry: SuiteCheck, load: LoadReport, seed: int, sent: tuple[Plan, Sent] | str | None,
               undefined: dict[str, str] | None = None, source: SourceText | None = None) -> Judged:
        """One check's verdict from the replies its planned calls brought back.

        Replies that are, bit for bit, the reference's answers pass as the check passed on those
        (plan.Plan.answered_alike): running it again would repeat the planning run exactly."""
        missing = _missing(entry, load)
        if missing:
            message = (undefined or {}).get(missing) or loading.not_defined(missing)
            return Judged(entry, self._result(entry, FAILED, message))
        cause = source.causes.get(entry.function, "") if source is not None else ""
        if isinstance(sent, str):  # not run after a stop: the check it names says where, and the cause with it
            return Judged(entry, self._result(entry, TIMEOUT, f"{sent}; {cause}" if cause else sent), cause=cause)
        planned, replies = sent
        if planned.fault is not None:
            raise planned.fault
        if planned.answered_alike(replies):
            tried = Attempt(PASSED, calls=list(zip(planned.calls, replies.replies)), sizes=entry.check.sizes)
        else:
            tried = attempt(entry, self._trial(entry, recorded(entry.name, planned.calls, replies), seed,
                                               entry.check.sizes))
        stopped = tried.stopped
        message = explain.timeout_message(stopped, self.time_limits[entry.name], entry.check.slow_hint, cause) \
            if stopped is not None and stopped.how.timed_out else tried.message
        message = source.vouch(message) if source is not None else message
        return Judged(entry, self._result(entry, tried.status, message, tried.hint, replies.seconds,
                                          stopped=stopped.how.value if stopped is not None else ""), tried, cause)

    def explain(self, judged: list[Judged], seed: int,
                child: GradedChild | FreshChild | None = None) -> list[CheckResult]:
        """The results, each failure with its misconception and, given `child`, its smallest failing input.

        child: where the shrinking's re-runs go (grading.explain). Points are already fixed: nothing here
        changes a status or a score. The re-runs share one budget (shrink.ShrinkBudget). Only the first
        shrinkable failure of each function is shrunk: the later ones of a function usually share its cause,
        and the budget goes further on the other functions.
        Each is first tried at the sizes the ones before it shrank to (latest first): a function that calls
        a wrong one mostly fails at the same sizes.
        """
        budget = ShrinkBudget.for_submission(self.budget)
        evidence = Evidence([one.tried for one in judged], self.suite.reference, self.suite.assignment.tolerance)
        shrunk_functions: set[str] = set()
        repeat = checks_to_repeat(judged)  # one check a function whose call is sent again (grading.varying)
        smallest: list[Sizes] = []  # the smallest failing sizes found so far, latest first
        results = []
        for one in judged:
            if one.result.status == TIMEOUT:
                results.append(self._name_slowness(one, results))
                continue
            if not one.explainable():
                results.append(one.result)
                continue
            # Diagnosed on the graded run only: at the tiny shrunk sizes different ideas (and plain
            # garbage such as all zeros) can give the same numbers.
            idea = diagnose(self.suite.misconceptions, one.tried.calls, self.suite.reference,
                            self.suite.assignment.tolerance, evidence)
            if idea is None and child is not None and one.entry.name in repeat:
                idea = VARYING if answers_vary(one.tried.calls, child.call) else None
            shrunk = None
            if child is not None and one.entry.function not in shrunk_functions:
                shrunk = self._shrink(one.entry, child, seed, one.tried, budget, smallest)
                if shrunk is not None:
                    shrunk_functions.add(one.entry.function)
                    smallest.insert(0, shrunk.sizes)
            example = example_json(one.entry.visibility, shrunk.attempt if shrunk else one.tried,
                                   self.suite.reference, shrunk_from=one.tried.sizes if shrunk else None)
            results.append(with_explanation(one.result, idea, example))
        return with_error_sources(results, judged)

    def _name_slowness(self, one: Judged, earlier: list[CheckResult]) -> CheckResult:
        """A timeout with the idea it reveals (diagnosis.diagnose_timeout), if any; none for a call that was waiting
        or printing (explain.not_computing), nor for one the file's text explains (Judged.cause): slowness ideas are
        about computing."""
        waiting = bool(one.cause) or explain.not_computing(one.tried.stopped if one.tried else None)
        idea = None if waiting else diagnose_timeout(self.suite.misconceptions, one.entry.name, one.entry.function,
                                                     [(result.function, result.status) for result in earlier])
        return with_explanation(one.result, idea, one.result.example) if idea else one.result

    def _trial(self, entry: SuiteCheck, call_function, seed: int, sizes: Sizes | None) -> Trial:
        """A fresh Trial of `entry` for this student: the same seed gives the same inputs at the same sizes."""
        return Trial(name=entry.name, rng=check_rng(seed, entry.name), ref=self._reference,
                     call_function=call_function, tolerance=self.suite.assignment.tolerance, sizes=sizes,
                     seconds=self.time_limits[entry.name].seconds, shared_cache=self._shared,
                     class_seed=self._class_seed, arguments_unchanged=self.suite.assignment.arguments_unchanged,
                     parameters=self.suite.parameters,
                     remember=self._reference.remembered if self._reference is not None else None)

    def _shrink(self, entry: SuiteCheck, child: GradedChild | FreshChild, seed: int, first: Attempt,
                budget: ShrinkBudget, guesses: Sequence[Sizes] = ()) -> Shrunk | None:
        """The smallest sizes at which a failed randomized check still fails, re-run in `child`. Not for errors or
        failures a raise decided (a raise is already small; a template's NotImplementedError fails at every size),
        nor an argument changed in place (its re-runs pass on their values, and the change is charged whole), nor
        for checks with their own time limit in course.yaml: those time a fixed large case. Smaller inputs take no
        longer than the failing run did, so its limit is the re-runs' limit too."""
        raised = bool(first.calls) and first.calls[-1][1].raised is not None
        if first.status != FAILED or raised or first.changed or entry.check.sizes is None or entry.seconds is not None:
            return None
        if not self._follows_sizes(entry, seed):
            return None
        # Opened outside the budget: on a loaded machine a new child's start alone could spend it, and the
        # same file would get a coarser example than on a quiet one.
        child.open()
        return shrink(entry.check.sizes, input_size(first.calls),
                      lambda sizes: attempt(entry, self._trial(entry, child.call, seed, sizes)), budget,
                      guesses=guesses)

    def _follows_sizes(self, entry: SuiteCheck, seed: int) -> bool:
        """Whether the check's inputs shrink with its sizes, planned with the reference once per check. A check on a
        class-wide case (the T = 512 ones) keeps its inputs at any sizes: re-running it smaller would repeat it."""
        if self._reference is None:
            return True
        if entry.name not in self._follows:
            planner = ReferenceAnswers(self._reference.namespace())
            sizes = entry.check.sizes
            smallest = sizes.smallest()
            full, least = (input_size([(call, None) for call in plan_check(entry, self._trial(
                entry, None, seed, at), planner).calls]) for at in (sizes, smallest))
            self._follows[entry.name] = least < full
        return self._follows[entry.name]

    def _result(self, entry: SuiteCheck, status: str, message: str, hint: str = "", seconds: float = 0.0,
                stopped: str = "") -> CheckResult:
        return CheckResult(name=entry.name, function=entry.function, visibility=entry.visibility, status=status,
                           score=entry.points if status == PASSED else 0.0, max_score=entry.points,
                           message=message, hint=hint, seconds=round(seconds, 4), stopped=stopped)

    def _graded_functions(self) -> set[str]:
        return {name for entry in self.suite.checks for name in entry.check.functions}

    def _all(self, message: str, status: str) -> list[CheckResult]:
        return [self._result(entry, status, message) for entry in self.suite.checks]


def _missing(entry: SuiteCheck, load: LoadReport) -> str:
    """The first function the check calls that the file does not define, or ""."""
    return next((name for name in entry.check.functions if name not in load.functions), "")
