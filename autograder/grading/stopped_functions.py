"""Which checks are not run once a student's function was stopped at its time limit.

A function stopped on some work is not called again on work as large (the reference's time for a check is
its work): otherwise one hanging function would spend the submission's budget on its remaining checks and
take honest functions' points with it. But a function stopped once on small work may hang only on what that
input held (a loop looking for a visible key in an all-masked row), so its other checks run until it is
stopped a second time, and no more after that: a hang on every input costs two limits, not one per check.
Slow code stopped on large work (a loop over a T × T grid) is not called again on work as large at once: a
larger input only makes it slower.
"""
from __future__ import annotations

from dataclasses import dataclass, field

LARGE_WORK = 1e-3  # reference seconds: the T = 512 checks take 1.5–5 ms, every other check under 0.5 ms


@dataclass
class StoppedFunctions:
    """function -> the largest work it was stopped on, and the checks it was stopped in, in order."""

    work: dict[str, float] = field(default_factory=dict)
    checks: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def record(self, function: str, work: float | None, check: str) -> None:
        """`function` was stopped at its limit in `check`, whose reference time is `work` (None: unknown)."""
        self.work[function] = max(self.work.get(function, 0.0), work or 0.0)
        self.checks[function] = (*self.checks.get(function, ()), check)

    def not_run(self, functions: tuple[str, ...], size: float | None) -> str:
        """Why a check that calls `functions` on work `size` (None: unknown, as large as any) is not run; ""
        when it runs. Timings wobble, so only work well under half of the stopped work counts as smaller."""
        for function in functions:
            checks = self.checks.get(function, ())
            if not checks or (size is not None and size < self.work[function] / 2):
                continue
            if len(checks) > 1:
                return (f"not run: {function} was stopped at its time limit in {checks[0]} and again in {checks[1]}, "
                        f"so it was not called again; {checks[0]} says where it was")
            if self.work[function] >= LARGE_WORK:
                return (f"not run: {function} was stopped at its time limit in {checks[0]}, on work at least as large, "
                        f"so it was not called again; {checks[0]} says where it was")
        return ""
