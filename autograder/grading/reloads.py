"""The session grading uses: a file that could not be loaded again for the calls after a crash says so.

After a call ends the worker's process (os._exit, a crash), the calls after
it need the file loaded in a new child. Where that load stops instead (the
file's top level hangs, or the submission's time budget runs out while it
loads again), `Session.start_child_for_calls` reports no failure for a .py
file and leaves no child, and the stream would send into nothing, which the
grader took for its own fault (an internal error). Here that is the failure
of the calls it was for, in the student's words.
"""
from __future__ import annotations

from autograder.sandbox.replies import CallFailed, WorkerDied
from autograder.sandbox.session import Session

NOT_RELOADED = ("the file could not be loaded again after a call ended the worker process: its top-level code did "
                "not finish in the time the submission had left (top-level code should only import and define)")


class GradingSession(Session):
    """A Session whose restart for calls never leaves the stream without a child and without a failure."""

    def start_child_for_calls(self) -> CallFailed | None:
        failure = super().start_child_for_calls()
        if failure is None and not self.has_child():
            return WorkerDied(NOT_RELOADED)
        return failure
