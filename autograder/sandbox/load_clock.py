"""The clock of a notebook's load: the cells' own time, with the grader's work between them kept out.

After each cell the worker compares the data and library switches the graded functions read with what their check
cells saw (sandbox.kept_state); that work is the grader's, not the notebook's. Counted as the cell's time, it had
a correct notebook whose functions append to a list of 39,000 numbers take 64 s to grade, its scratch cells stopped
at the load limit and named as slow. The worker says when its own work begins (a "keeping" event); the next unit's
start ends it. That time is given back to the load limit and left out of each cell's time, up to ALLOWANCE of the
limit in a load: the worker's work is capped well below it (kept_state.MAX_WORK), and a notebook that sends the
event itself gains no more than that.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder.text import safe

ALLOWANCE = 0.5  # of the load limit, the most of the grader's own work in one load given back


@dataclass
class LoadClock:
    """A load's deadline (time.monotonic()), moved on by the grader's own work between the cells, and the cells'
    starts on a clock that only their own code moves."""

    deadline: float
    limit: float = 0.0  # the load limit, in seconds
    cells: int = 0  # how many cells the notebook has (0: a .py file, whose statements are not timed one by one)
    given: float = 0.0  # seconds of the grader's own work given back so far
    paused: float | None = None  # when the grader's work now running began
    unit: tuple | None = None  # (index, label) of the unit the worker said it began last
    starts: list = field(default_factory=list)  # (index, label, cells_time) of each cell as it began

    def heard(self, header: dict, now: float) -> None:
        """Follow the worker's events: "keeping" (the grader's own work begins), and "unit" (a unit of the
        submission begins), or any other, which ends the grader's work."""
        if header.get("event") == "keeping":
            if self.paused is None:
                self.paused = now
                self.deadline += self._allowance()  # the deadline waits, as long as the allowance lets it
            return
        if self.paused is not None:
            took = min(max(now - self.paused, 0.0), self._allowance())
            self.deadline -= self._allowance() - took
            self.given, self.paused = self.given + took, None
        index = header.get("index")
        if header.get("event") == "unit" and type(index) is int:
            self.unit = (index, safe(header.get("label"), 40))
            if 0 <= index < self.cells:  # a notebook's cells, each timed (sandbox.slow_cells)
                self.starts.append((*self.unit, self.cells_time(now)))

    def cells_time(self, now: float) -> float:
        """`now` on a clock that only the cells' own code moves: each cell's time is the next one's start less
        its own (sandbox.slow_cells)."""
        return now - self.given - (max(now - self.paused, 0.0) if self.paused is not None else 0.0)

    def _allowance(self) -> float:
        """Seconds of the grader's own work that may still be given back in this load."""
        return max(ALLOWANCE * self.limit - self.given, 0.0)
