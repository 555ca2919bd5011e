"""The one place a grading station starts: the protections, the secrets refused, the sandbox, the Grader.

Every command that grades (`grade`'s jobs, `check`, `gradescope-run`,
`replay`), every sandbox of a Dask worker and `doctor`'s probe start here,
in two steps, since the first runs once and the second in each grading
process (grading.boundary):

1. `protect`, in the trusted command (or Dask worker) before any student code
   runs: the protections this machine gives workers for the `--sandbox` kind
   asked for, their warning told, and a refusal (SandboxError) where a worker
   could read one of the secrets (the solutions, course.yaml, the results,
   other hand-ins).
2. `start_station`, from those protections and the rest of a `Setup`: the
   sandbox started with the assignment's preload and warm-up, the
   environment probe passed (grading.probe: an environment that cannot grade
   the reference grades no one) and the Grader that grades with it.

Importing PyTorch takes as long in the zygote as in the command, so `grade`
launches its sandboxes (`launch_sandbox`) before it loads the suite, and each
grading process takes one over at step 2 instead of starting its own.

So the commands, the cluster and the outputs never import the sandbox: they
take its error and its protections from here.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from autograder.grading.calibration import one_thread_here
from autograder.grading.course import Assignment, Course
from autograder.grading.grader import Grader
from autograder.grading.probe import PROBE_STUDENT, ProbeReport, probe_environment, require_environment
from autograder.grading.suite import Suite
from autograder.sandbox.inprocess import InProcessSession
from autograder.sandbox.load_report import LoadReport
from autograder.sandbox.preflight import refuse_readable, worker_check
from autograder.sandbox.protections import KINDS, REQUESTS, Protections, SandboxError, probe
from autograder.sandbox.zygote import Sandbox

# The sandbox's names the layers above grading need (its kinds, its error, a worker's check for `doctor`) are
# taken from here, so they never import the sandbox.
__all__ = ["KINDS", "REQUESTS", "Protections", "Sandbox", "SandboxError", "Setup", "Station", "environment_report",
           "launch_sandbox", "protect", "protections_for", "refuse_secrets", "start_station", "warm_grader",
           "worker_check"]


@dataclass(frozen=True)
class Setup:
    """What a grading process builds its sandbox and Grader from; inherited through the fork, never sent.

    protections: what `protect` found (secrets already refused).
    reference: the reference's timings (calibration), None for plain limits.
    slot: the job's index, where the lease of its worker uid starts when the grader is root (sandbox.uids).
    command: what is grading, for the message of an environment that cannot (grading.probe).
    classwide: a Grader warmed in the command before the fork (`warm_grader`), whose class-wide cases and
        cached reference answers the process's Graders share; None: each process builds its own.
    class_imports: what the class imports besides the preload (grading.class_imports), for its sandbox.
    processor: the one processor the sandbox's zygote and its children keep to (grading.batch.processors_for);
        None: wherever the kernel puts them.
    """

    course: Course
    suite: Suite
    protections: Protections
    reference: dict | None = None
    slot: int = 0
    command: str = "grading"
    classwide: Grader | None = None
    class_imports: tuple[str, ...] = ()
    processor: int | None = None


@dataclass
class Station:
    """A started station: the Grader and the sandbox it grades with. `with station as grader:` closes it."""

    grader: Grader

    def close(self) -> None:
        """Stop the sandbox: its zygote and everything under it."""
        self.grader.sandbox.close()

    def __enter__(self) -> Grader:
        return self.grader

    def __exit__(self, *_) -> None:
        self.close()


def protect(kind: str, secrets: Sequence[Path] = (), log: TextIO | None = None) -> Protections:
    """The protections for `--sandbox kind` here, refused (SandboxError) where a worker could read a secret.

    Asked of a real light sandbox, from the workers' own uid and view of the
    file system. log: where the fallback's warning is told (a command's
    stderr); None leaves it to the caller (a Dask worker sends it to the driver).
    """
    protections = protections_for(kind, log)
    refuse_readable(protections, list(secrets))
    return protections


def protections_for(kind: str, log: TextIO | None = None) -> Protections:
    """`protect` without the secrets: the protections here, their warning told to `log`.

    For a command that starts sandboxes before it knows every secret; it
    refuses them (`refuse_readable`) before any student code runs.
    """
    protections = probe(kind)
    if log is not None and protections.warning:
        print(protections.warning, file=log)
    return protections


def refuse_secrets(protections: Protections, secrets: Sequence[Path], launched: Sequence[Sandbox] = ()) -> None:
    """`protect`'s refusal (SandboxError where a worker could read a secret), asked of the first sandbox
    `launched` (which this waits for) rather than of a sandbox started for the question.

    One that cannot start is closed here and the question asked of a light
    sandbox: its grading process then starts a sandbox of its own, whose
    environment probe says why it cannot (grading.probe).
    """
    box = launched[0] if launched else None
    if box is not None:
        try:
            box.start()
        except SandboxError:
            box = None
    refuse_readable(protections, list(secrets), box)


def launch_sandbox(protections: Protections, assignment: Assignment, slot: int = 0,
                   class_imports: Sequence[str] = ()) -> Sandbox:
    """The sandbox for job `slot`, its zygote launched but not waited for (it imports the preload meanwhile).

    Launched before any secret is refused, which is safe: the zygote runs the
    grader's own code and the preload, never student code, until it is given
    a submission (`start_station`, after `refuse_readable`). Close it in
    this process whatever happens: after `Sandbox.hand_over`, that reaps it.
    """
    sandbox = _sandbox(protections, assignment, slot, class_imports)
    sandbox.launch()
    return sandbox


def start_station(setup: Setup, sandbox: Sandbox | None = None) -> Station:
    """Setup's sandbox started and its environment probed: a Station whose Grader grades this assignment.

    sandbox: one `launch_sandbox` started for this job in the process this one was forked from, taken
    over here; None starts a new one. Raises EnvironmentRefused (grading.probe) when the environment
    cannot grade the reference, or SandboxError when the sandbox fails otherwise; nothing is left
    running then.
    """
    sandbox = sandbox or _sandbox(setup.protections, setup.suite.assignment, setup.slot, setup.class_imports)
    try:
        grader = Grader(setup.course, setup.suite, sandbox, setup.reference, shares_with=setup.classwide)
        # The probe's Grader shares the class-wide cases with this one, so they are built once per process.
        require_environment(setup.course, setup.suite, sandbox, setup.command, alongside=grader)
        if setup.processor is not None:
            sandbox.keep_to(setup.processor)
        return Station(grader)
    except BaseException:
        sandbox.close()
        raise


def warm_grader(course: Course, suite: Suite, enough: Callable[[], bool] = lambda: False) -> Grader | None:
    """A Grader without a sandbox that has graded the reference here, in this process, as the environment
    probe grades it (its student, plain limits), check by check until `enough()`; None where the suite has
    no reference or that failed.

    For `grade` while its sandboxes start (enough: the first has started): the grading processes it forks
    after this share the class-wide cases, the reference's answers to the probe's calls and the libraries'
    set-up on a first call (Setup.classwide), so the probe that waits for the sandbox costs less. A fault
    here is left to the probe, which meets it again in the sandbox and says so.
    """
    if suite.reference is None:
        return None
    grader = Grader(course, suite, None)
    seed = suite.assignment.seed_for(course.seed_salt, PROBE_STUDENT)
    session = InProcessSession(vars(suite.reference), suite.assignment.limits)
    loaded = LoadReport(frozenset(suite.functions))
    try:
        with one_thread_here():  # as the jobs compute; the sandboxes starting meanwhile need the other cores
            for entry in suite.checks:
                if enough():
                    break
                grader.judge_checks(session, loaded, seed, [entry])
    except Exception:  # noqa: BLE001 - a suite's fault is the probe's to report, in the sandbox
        return None
    return grader


def environment_report(course: Course, suite: Suite, protections: Protections) -> ProbeReport:
    """What the environment probe finds for `suite` in a sandbox of its own, stopped after (for `doctor`)."""
    sandbox = _sandbox(protections, suite.assignment)
    try:
        return probe_environment(course, suite, sandbox)
    finally:
        sandbox.close()


def _sandbox(protections: Protections, assignment: Assignment, slot: int = 0,
             class_imports: Sequence[str] = ()) -> Sandbox:
    return Sandbox(protections, assignment.preload, slot=slot, warmup=assignment.warmup, class_imports=class_imports)
