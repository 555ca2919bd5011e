"""What a sandbox is asked before any grading: whether a worker starts, and whether it could read a secret.

Both are asked of a real zygote, so the answers are from the workers' own uid and view of the file system.
"""
from __future__ import annotations

from pathlib import Path

from autograder.sandbox.protections import MissingProtections, Protections, SandboxError
from autograder.sandbox.zygote import Sandbox


def refuse_readable(protections: Protections, paths: list[Path], box: Sandbox | None = None) -> None:
    """Raise SandboxError if a worker on this machine could read any of `paths`.

    Asked of a real sandbox before grading starts, so the answer is from the
    workers' own uid and view of the file system: `box`, one of this
    command's own that no submission has used yet (started here if it is
    not), else a light one started for the question. Where the fallback runs
    workers under the grader's own uid, everything the grader reads is
    readable to them: grading is refused rather than done quietly.
    """
    if not paths:
        return
    if box is not None:
        found = box.readable(paths)
    else:
        with Sandbox(protections, preload=()) as light:
            found = light.readable(paths)
    if not found:
        return
    shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    fix = protections.kind.readable_fix(protections.separate_user)
    raise SandboxError(f"grading was refused: student code in the {protections.kind.label} sandbox could read "
                       f"{shown}, which it must never see. To grade, {fix}; then run again. Nothing was graded.")


def worker_check(protections: Protections) -> tuple[dict[str, str], str]:
    """Start a light zygote, as grading would: ({control: why} for those it could not set, why none starts).

    For `autograder doctor`: the second is "" where a worker starts, else the refusal, with what to do.
    """
    try:
        with Sandbox(protections, preload=()):
            return {}, ""
    except MissingProtections as refused:
        return refused.missing, str(refused)
    except SandboxError as refused:
        return {}, str(refused)
