"""Which checks are not run once a student's function was stopped at its time limit.

A function stopped on some work is not called again on work as large: otherwise one hanging function would
spend the submission's budget on its remaining checks and take honest functions' points with it. A check's work
is the bytes of its largest call's inputs, the same in every run: the reference's time, which had stood for it,
put checks of about 1 ms on either side of the line between small and large work from one run to the next. But a
function stopped once on small work may hang only on what that input held (a loop looking for a visible key in an
all-masked row), so its other checks run until it is stopped a second time, and no more after that: a hang on
every input costs two limits, not one per check, whatever the size of the rest. Slow code stopped only on large
work (a loop over a T × T grid) is not called again on work as large at once, since a larger input only makes it
slower, while work well under half as large still runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

LARGE_WORK = 1 << 16  # bytes of a call's inputs: the T = 512 checks' are 0.5 MB and more, every other check's
# a few kilobytes


@dataclass
class StoppedFunctions:
    """function -> the checks it was stopped in, in order, and the least work it was stopped on."""

    checks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    least: dict[str, float] = field(default_factory=dict)

    def record(self, function: str, work: float | None, check: str) -> None:
        """`function` was stopped at its limit in `check`, whose work is `work` (input_bytes; None: unknown)."""
        self.least[function] = min(self.least.get(function, float("inf")), work or 0.0)
        self.checks[function] = (*self.checks.get(function, ()), check)

    def not_run(self, functions: tuple[str, ...], size: float | None) -> str:
        """Why a check that calls `functions` on work `size` (None: unknown, as large as any) is not run; ""
        when it runs. Where every stop was on large work (slow code), work well under half of it still runs."""
        for function in functions:
            checks = self.checks.get(function, ())
            if not checks:
                continue
            slow = self.least[function] >= LARGE_WORK
            if slow and size is not None and size < self.least[function] / 2:
                continue
            if len(checks) > 1:
                return (f"not run: {function} was stopped at its time limit in {checks[0]} and again in {checks[1]}, "
                        f"so it was not called again; {checks[0]} says where it was")
            if slow:
                return (f"not run: {function} was stopped at its time limit in {checks[0]}, on work at least as large, "
                        f"so it was not called again; {checks[0]} says where it was")
        return ""


def input_bytes(calls) -> int:
    """A check's work: the bytes of its largest call's array arguments (protocol.Call)."""
    return max((call.payload_bytes() for call in calls), default=0)
