"""What one submission may use: time, memory, output, processes, files (course.yaml `limits`)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Resource limits for one submission (course.yaml `limits`).

    A call's wall-clock limit is calibrated from the reference where there is
    one (autograder.grading.calibration): max(call_floor_seconds, call_factor
    × the reference's time on that check's calls). call_seconds is the limit
    where there is no reference to time (public checks on a student's
    machine), and submission_seconds the budget there; with a reference, the
    budget follows from the calibrated limits. one_time_seconds: how long the
    warm-up of a call that was still importing at its limit (a one-time cost,
    such as a library's lazy import on a first call) may take before the call
    is timed again warm (sandbox.grace).
    """

    call_seconds: float = 5.0
    call_floor_seconds: float = 0.1
    call_factor: float = 30.0
    one_time_seconds: float = 5.0
    load_seconds: float = 10.0
    submission_seconds: float = 60.0
    memory_mib: int = 2048
    output_kib: int = 8
    max_output_mib: int = 16
    max_processes: int = 64
    max_open_files: int = 64
    max_file_mib: int = 16

    def rlimits(self, budget: float, separate_user: bool) -> dict:
        """The rlimits of worker._set_limits for a child of a submission with `budget` seconds: CPU time backs up the
        wall-clock budget. Process counts are per uid, so their limit is set only where workers have their own uid
        (separate_user)."""
        return {"memory_mib": self.memory_mib, "cpu_seconds": int(budget) + 5, "max_file_mib": self.max_file_mib,
                "max_open_files": self.max_open_files, "max_processes": self.max_processes if separate_user else 0}
