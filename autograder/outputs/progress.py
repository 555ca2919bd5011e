"""Progress of a batch: a bar with ETA and running counts on a terminal, plain lines otherwise."""
from __future__ import annotations

import sys
import time

from autograder.grading.results import SubmissionResult
from autograder.text import counted, one_line

# What each count but "full marks" counts, said under the summary line when it is not zero.
COUNT_MEANINGS = {
    "errors": "submissions with a check whose call raised an exception, crashed the worker or sent an "
              "unusable reply",
    "timeouts": "submissions with a call stopped at its time limit",
    "not loaded": "files that did not load (syntax error, error, exit or hang at import, unreadable): no check ran",
    "could not grade": "files whose worker did not start: fix the cause and grade again",
    "internal errors": "the grader failed (not the student's code): `grade` grades them again next time",
}


def starting(text: str, stream=None) -> None:
    """A line on what `grade` is doing before its batch starts (loading the suite, probing the sandbox)."""
    stream = stream or sys.stderr
    stream.write(text + "\n")
    stream.flush()


class Progress:
    """Call `update(result)` per graded submission and `finish()` at the end.

    On a TTY, one line is redrawn in place; elsewhere (CI, logs, pipes) each
    submission gets its own line so nothing depends on carriage returns.
    """

    WIDTH = 24

    def __init__(self, total: int, stream=None, skipped: int = 0):
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.done = 0
        # Submissions with: every point; a check whose call raised or crashed; a check that timed out; a file that
        # did not load; a worker that did not start; a fault of the grader. Explained once by `legend`.
        self.counts = {"full marks": 0, "errors": 0, "timeouts": 0, "not loaded": 0, "could not grade": 0,
                       "internal errors": 0}
        if skipped:
            self._write(f"{counted(skipped, 'submission')} already graded with this suite and unchanged: skipped "
                        "(--force regrades them)\n")

    def status(self, text: str) -> None:
        """What the batch is doing before its first result: where the bar will be on a terminal, a line elsewhere."""
        self._write(f"\r{text}\033[K" if self.tty else text + "\n")

    def update(self, result: SubmissionResult) -> None:
        self.done += 1
        statuses = [t.status for t in result.tests]
        self.counts["full marks"] += result.score == result.max_score
        self.counts["errors"] += "error" in statuses and not result.problem
        self.counts["timeouts"] += "timeout" in statuses
        not_loaded = result.did_not_load
        self.counts["not loaded"] += not_loaded
        self.counts["could not grade"] += bool(result.problem) and not not_loaded and not result.internal_error
        self.counts["internal errors"] += bool(result.internal_error)
        if self.tty:
            self._write("\r" + self._bar() + "\033[K")
        else:
            self._write(f"[{self.done}/{self.total}] {one_line(result.student)}: {result.score:g}/{result.max_score:g}"
                        + (f" ({one_line(result.problem)})" if result.problem else "") + "\n")

    def note(self, text: str) -> None:
        """A message for the TA while the batch runs: on its own line, above the bar on a terminal."""
        if self.tty:
            self._write("\r\033[K" + text + "\n" + (self._bar() if self.done else ""))
        else:
            self._write(text + "\n")

    def finish(self) -> None:
        if self.tty and self.done:
            self._write("\n")
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        self._write(f"graded {counted(self.done, 'submission')} in {elapsed:.1f} s ({rate:.1f}/s); {self._counts()}\n")
        shown = [name for name, count in self.counts.items() if count and name in COUNT_MEANINGS]
        self._write("".join(f"  {name}: {COUNT_MEANINGS[name]}\n" for name in shown))

    def _bar(self) -> str:
        fraction = self.done / self.total if self.total else 1.0
        filled = int(self.WIDTH * fraction)
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        return (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{self.total} "
                f"ETA {int(eta) // 60}:{int(eta) % 60:02d} | {self._counts()}")

    def _counts(self) -> str:
        return ", ".join(f"{name} {count}" for name, count in self.counts.items())

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
