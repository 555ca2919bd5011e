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

import ast
import json
from pathlib import Path

from autograder.grading.course import Assignment, Course, CourseError, assignment_entry, read_assignment

MANIFEST_FILE = "public_manifest.json"
PUBLIC_SALT = "public-checks"  # not the course's salt, which must stay secret
FORMAT = 2


def manifest_data(assignment: Assignment, public_checks: list[str], parameters: dict | None = None) -> dict:
    """The manifest of `assignment` for the public checks named `public_checks` (in suite order).

    The assignment is written as its course.yaml entry (`course.assignment_entry`), read back with the
    same validating reader, so the two cannot drift apart. parameters: each graded function's positional
    parameters in the stub (`stub_parameters`), which name a call's arguments in the public checks' messages,
    where no reference does.
    """
    data = {"format": FORMAT,
            "generated": "by `autograder release` from course.yaml; do not edit (points live in course.yaml)",
            "assignment": assignment.name, "entry": assignment_entry(assignment, public_checks)}
    if parameters:
        data["parameters"] = parameters
    return data


def stub_parameters(stub_code: str, functions) -> dict[str, list[str]]:
    """The positional parameters of each of `functions` that the stub's code defines at its top level, in order."""
    defined = {node.name: node for node in ast.parse(stub_code).body if isinstance(node, ast.FunctionDef)}
    return {name: [arg.arg for arg in (*defined[name].args.posonlyargs, *defined[name].args.args)]
            for name in functions if name in defined}


def read_parameters(folder: Path) -> dict[str, tuple[str, ...]]:
    """The stub's parameters as a released manifest in `folder` lists them; empty where it lists none (an older
    release), or lists them in a form not written by `manifest_data`."""
    try:
        listed = json.loads((Path(folder) / MANIFEST_FILE).read_text()).get("parameters", {})
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(listed, dict):
        return {}
    return {function: tuple(names) for function, names in listed.items()
            if isinstance(names, list) and all(isinstance(name, str) and name.isidentifier() for name in names)}


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
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("assignment"), str):
        raise CourseError(f"{path} is not a manifest this version of autograder understands (format "
                          f"{data.get('format') if isinstance(data, dict) else '?'}, expected {FORMAT}); update "
                          "autograder (pip install -U) or download the current release of the assignment")
    return read_assignment(path, data["assignment"], data.get("entry"))


def public_course(assignment: Assignment, folder: Path) -> Course:
    """A course holding only `assignment`, seeded with PUBLIC_SALT, for grading public checks."""
    return Course(path=Path(folder).resolve() / MANIFEST_FILE, name=assignment.title, term="",
                  seed_salt=PUBLIC_SALT, assignments={assignment.name: assignment})
