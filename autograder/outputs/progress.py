"""Progress of a batch: a bar with ETA and running counts on a terminal, plain lines otherwise."""
from __future__ import annotations

import sys
import time

from autograder.grading.results import SubmissionResult
from autograder.text import safe


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
        self.counts = {"full marks": 0, "errors": 0, "timeouts": 0, "could not grade": 0, "internal errors": 0}
        if skipped:
            self._write(f"{skipped} submissions already graded with this suite and unchanged: skipped "
                        "(--force regrades them)\n")

    def update(self, result: SubmissionResult) -> None:
        self.done += 1
        statuses = [t.status for t in result.tests]
        self.counts["full marks"] += result.score == result.max_score
        self.counts["errors"] += "error" in statuses
        self.counts["timeouts"] += "timeout" in statuses
        self.counts["could not grade"] += bool(result.problem)
        self.counts["internal errors"] += bool(result.internal_error)
        if self.tty:
            self._write("\r" + self._bar() + "\033[K")
        else:
            self._write(f"[{self.done}/{self.total}] {safe(result.student)}: {result.score:g}/{result.max_score:g}"
                        + (f" ({safe(result.problem)})" if result.problem else "") + "\n")

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
        self._write(f"graded {self.done} submissions in {elapsed:.1f} s ({rate:.1f}/s); {self._counts()}\n")

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
