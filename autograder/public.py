"""The public manifest: what a released assignment folder needs to run its public checks.

Students get neither course.yaml nor solutions/, yet `autograder check` and
the notebook's public test cells must score the public checks exactly as
`autograder grade` does: same points, per-check time limits, tolerances,
limits and preloaded modules. `autograder release` writes those settings,
for the public checks only, to `public_manifest.json` beside the stub; it is
generated from course.yaml (the only place points live) and never edited by
hand. The course's seed salt stays out of it: public checks draw their random
inputs from PUBLIC_SALT instead, so a student learns nothing about the inputs
of the graded run.
"""
from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from pathlib import Path

from autograder.course import Assignment, CheckConfig, Course, CourseError, Limits, Tolerance

MANIFEST_FILE = "public_manifest.json"
PUBLIC_SALT = "public-checks"  # not the course's salt, which must stay secret
FORMAT = 1


def manifest_data(assignment: Assignment, public_checks: list[str]) -> dict:
    """The manifest of `assignment` for the public checks named `public_checks` (in suite order)."""
    return {
        "format": FORMAT,
        "generated": "by `autograder release` from course.yaml; do not edit (points live in course.yaml)",
        "assignment": assignment.name,
        "title": assignment.title,
        "module": assignment.module,
        "preload": list(assignment.preload),
        "limits": asdict(assignment.limits),
        "tolerance": {dtype: asdict(tol) for dtype, tol in sorted(assignment.tolerance.items())},
        "checks": {name: asdict(assignment.checks[name]) for name in public_checks},
    }


def manifest_text(data: dict) -> str:
    """The manifest as written to disk (stable, so regenerating an unchanged one changes no byte)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def read_manifest(folder: Path) -> Assignment:
    """The public part of an assignment, as released in `folder`.

    Raises CourseError naming the file and what to do when it is missing or damaged.
    """
    path = Path(folder) / MANIFEST_FILE
    try:
        data = json.loads(path.read_text())
    except OSError:
        raise CourseError(f"{path} is missing: run this inside the assignment folder you were given (it holds "
                          f"{MANIFEST_FILE}, public_checks.py and the notebook), or pass that folder with --dir. "
                          "Instructors: `autograder release` writes it") from None
    except json.JSONDecodeError as error:
        raise CourseError(f"{path} is damaged ({error.msg} at line {error.lineno}); download the assignment "
                          "again, or ask your instructor for the current release") from None
    try:
        return _assignment(data, Path(folder).resolve())
    except (KeyError, TypeError, ValueError) as error:
        raise CourseError(f"{path} is not a manifest this version of autograder understands ({error!r}); "
                          "update autograder (pip install -U) or ask for the current release") from None


def public_course(assignment: Assignment, folder: Path) -> Course:
    """A course holding only `assignment`, seeded with PUBLIC_SALT, for grading public checks."""
    return Course(path=Path(folder).resolve() / MANIFEST_FILE, name=assignment.title, term="",
                  seed_salt=PUBLIC_SALT, assignments={assignment.name: assignment})


def _assignment(data: dict, folder: Path) -> Assignment:
    if data["format"] != FORMAT:
        raise ValueError(f"format {data['format']}")
    known_limits = {f.name for f in fields(Limits)}  # a newer release may carry limits we do not know
    limits = replace(Limits(), **{k: v for k, v in data["limits"].items() if k in known_limits})
    return Assignment(
        name=str(data["assignment"]), title=str(data["title"]), module=str(data["module"]),
        # Nothing is loaded from solution_dir for public checks; the released folder stands in.
        source_dir=folder, solution_dir=folder,
        preload=tuple(str(m) for m in data["preload"]), limits=limits,
        tolerance={dtype: Tolerance(float(t["rtol"]), float(t["atol"])) for dtype, t in data["tolerance"].items()},
        checks={name: CheckConfig(c["points"], c.get("seconds")) for name, c in data["checks"].items()})
