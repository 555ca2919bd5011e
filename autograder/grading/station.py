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

So the commands, the cluster and the outputs never import the sandbox: they
take its error and its protections from here.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from autograder.grading.course import Course
from autograder.grading.grader import Grader
from autograder.grading.probe import ProbeReport, probe_environment, require_environment
from autograder.grading.suite import Suite
from autograder.sandbox.protections import KINDS, REQUESTS, Protections, SandboxError, probe
from autograder.sandbox.zygote import Sandbox, refuse_readable, worker_check

# The sandbox's names the layers above grading need (its kinds, its error, a worker's check for `doctor`) are
# taken from here, so they never import the sandbox.
__all__ = ["KINDS", "REQUESTS", "Protections", "SandboxError", "Setup", "Station", "environment_report", "protect",
           "start_station", "worker_check"]


@dataclass(frozen=True)
class Setup:
    """What a grading process builds its sandbox and Grader from; inherited through the fork, never sent.

    protections: what `protect` found (secrets already refused).
    reference: the reference's timings (calibration), None for plain limits.
    slot: the job's index, which picks the worker uid when the grader is root.
    command: what is grading, for the message of an environment that cannot (grading.probe).
    """

    course: Course
    suite: Suite
    protections: Protections
    reference: dict | None = None
    slot: int = 0
    command: str = "grading"


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
    protections = probe(kind)
    if log is not None and protections.warning:
        print(protections.warning, file=log)
    refuse_readable(protections, list(secrets))
    return protections


def start_station(setup: Setup) -> Station:
    """Setup's sandbox started and its environment probed: a Station whose Grader grades this assignment.

    Raises EnvironmentRefused (grading.probe) when the environment cannot
    grade the reference, or SandboxError when the sandbox fails otherwise;
    nothing is left running then.
    """
    sandbox = _sandbox(setup.protections, setup.suite, setup.slot)
    try:
        require_environment(setup.course, setup.suite, sandbox, setup.command)
        return Station(Grader(setup.course, setup.suite, sandbox, setup.reference))
    except BaseException:
        sandbox.close()
        raise


def environment_report(course: Course, suite: Suite, protections: Protections) -> ProbeReport:
    """What the environment probe finds for `suite` in a sandbox of its own, stopped after (for `doctor`)."""
    sandbox = _sandbox(protections, suite)
    try:
        return probe_environment(course, suite, sandbox)
    finally:
        sandbox.close()


def _sandbox(protections: Protections, suite: Suite, slot: int = 0) -> Sandbox:
    assignment = suite.assignment
    return Sandbox(protections, assignment.preload, slot=slot, warmup=assignment.warmup)
