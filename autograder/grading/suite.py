"""An assignment's grading suite: its checks, their points, and the reference.

Checks come from two files, which decide their visibility:
`<source>/public_checks.py` (released to students) and
`<solution>/hidden_checks.py` (never released); the reference is
`<solution>/reference.py`. Each checks file defines `CHECKS`, a list of
`autograder.authoring.Check`. Points and per-check time limits come from
course.yaml, and the two must name exactly the same checks.

What both checks files share lives in `<source>/checks_common.py`, optional:
it is public (released beside the public checks), so it holds nothing the
hidden checks must keep. Both import it relatively, `from .checks_common
import ...`: each assignment's check files are loaded as one package,
`autograder_suites.<assignment>`, so two assignments' helpers never meet.
"""
from __future__ import annotations

import difflib
import hashlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from autograder.authoring.checks import Check
from autograder.authoring.misconceptions import Catalogue
from autograder.grading import collector
from autograder.grading.course import Assignment, Course, CourseError
from autograder.grading.manifest import MANIFEST_FILE, read_manifest, read_parameters
from autograder.text import counted

PUBLIC_FILE = "public_checks.py"
HIDDEN_FILE = "hidden_checks.py"
REFERENCE_FILE = "reference.py"
COMMON_FILE = "checks_common.py"  # optional, beside the public checks: what public and hidden checks share
MISCONCEPTIONS_FILE = "misconceptions.py"  # optional, beside the reference: see autograder.authoring.misconceptions
SUITE_PACKAGE = "autograder_suites"  # each assignment's files are loaded as modules of SUITE_PACKAGE.<assignment>
CHECK_MODULES = ("public_checks", "hidden_checks", "checks_common")  # those of them whose code is a check's
# The code that grades: a change to any of it can change a verdict or what a stored result says, so it is
# part of every suite's version, and a rerun after an upgrade regrades instead of skipping.
_PACKAGE = Path(__file__).resolve().parents[1]
GRADING_CODE = ("text.py", "authoring", "sandbox", "grading")


@dataclass(frozen=True)
class SuiteCheck:
    check: Check
    visibility: str  # "public" or "hidden"
    points: float
    seconds: float | None

    @property
    def name(self) -> str:
        return self.check.name

    @property
    def function(self) -> str:
        return self.check.function


@dataclass(frozen=True)
class Suite:
    assignment: Assignment
    checks: tuple[SuiteCheck, ...]
    reference: ModuleType | None
    version: str  # changes whenever a check, the reference, or the assignment's settings change
    misconceptions: Catalogue | None = None  # the assignment's known wrong ideas, if it has a catalogue
    # Each function's positional parameters in the stub, for messages where there is no reference to read them from
    parameters: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def functions(self) -> tuple[str, ...]:
        """The graded functions, in the order their first check appears."""
        return tuple(dict.fromkeys(c.function for c in self.checks))

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.checks)

    def secret_paths(self, course: Course) -> list[Path]:
        """Every file and folder of the course that no worker may read, for a suite with hidden parts.

        course.yaml (its seed salt), the solution folder, nbgrader's source
        notebook (its solution regions), and the results and students' work
        nbgrader and `grade` keep in the course root. Empty for a suite of
        public checks only, which has nothing to hide.
        """
        if self.reference is None and all(c.visibility == "public" for c in self.checks):
            return []
        return secret_places(course, self.assignment)

    def check(self, name: str) -> SuiteCheck:
        for entry in self.checks:
            if entry.name == name:
                return entry
        raise CourseError(f"{self.assignment.name} has no check {name!r}; "
                          "`autograder checks ASSIGNMENT` lists them")


def load_suite(course: Course, name: str) -> Suite:
    """Load the public and hidden checks and the reference of assignment `name`.

    They, and the libraries they import (PyTorch), live as long as the command: the garbage collector skips
    them from then on (grading.collector)."""
    with collector.loading_for_good():
        return _load_suite(course, name)


def _load_suite(course: Course, name: str) -> Suite:
    assignment = course.assignment(name)
    public_path = assignment.source_dir / PUBLIC_FILE
    if not public_path.is_file():
        raise CourseError(f"{public_path} is missing: every assignment needs public checks "
                          "(a file defining CHECKS, which may be an empty list)")
    _load_common(assignment.source_dir, name)
    found = [(check, "public") for check in _checks(_load_module(public_path, name, "public_checks"))]
    hidden_path = assignment.solution_dir / HIDDEN_FILE
    if hidden_path.is_file():
        found += [(check, "hidden") for check in _checks(_load_module(hidden_path, name, "hidden_checks"))]
    reference_path = assignment.solution_dir / REFERENCE_FILE
    if hidden_path.is_file() and not reference_path.is_file():
        # Hidden checks compare with the reference: without it every submission would end as an internal error.
        raise CourseError(f"{reference_path} is missing: the hidden checks ({hidden_path}) compare every answer "
                          "with the reference solution. Put the reference back there (a module defining every graded "
                          "function); nothing was graded")
    reference = _load_module(reference_path, name, "reference") if reference_path.is_file() else None
    names = {check.name for check, _ in found}
    checks = tuple(_with_points(check, visibility, assignment, course, names) for check, visibility in found)
    _require_all_listed(checks, assignment, course, hidden_path)
    if reference is not None:
        _require_reference_functions(checks, reference, reference_path)
    catalogue_path = assignment.solution_dir / MISCONCEPTIONS_FILE
    catalogue = _catalogue(_load_module(catalogue_path, name, "misconceptions")) if catalogue_path.is_file() else None
    return Suite(assignment, checks, reference, _version(_suite_files(assignment), assignment), catalogue)


def suite_version(course: Course, name: str) -> str:
    """The version `load_suite(course, name)` has, from the files alone: nothing is imported or run."""
    assignment = course.assignment(name)
    return _version(_suite_files(assignment), assignment)


def secret_places(course: Course, assignment: Assignment) -> list[Path]:
    """What `Suite.secret_paths` lists for a suite with hidden parts, without loading the suite."""
    root = course.root
    places = [course.path, assignment.solution_dir, assignment.source_dir / f"{assignment.module}.ipynb",
              root / "grades.db", root / "gradebook.db", root / "submitted", root / "autograded", root / "feedback"]
    return [path for place in places if place.exists() for path in _with_contents(place)]


def _suite_files(assignment: Assignment) -> list[Path]:
    return [*public_check_files(assignment.source_dir), assignment.solution_dir / HIDDEN_FILE,
            assignment.solution_dir / REFERENCE_FILE, assignment.solution_dir / MISCONCEPTIONS_FILE, *_grading_code()]


def load_public_suite(folder: Path) -> Suite:
    """The public checks of a released assignment folder, with points from its public manifest.

    For students (`autograder check`, the notebook's public test cells): needs
    neither course.yaml nor solutions/, only the folder `autograder release`
    produced (public_checks.py and public_manifest.json beside the stub).
    """
    folder = Path(folder)
    assignment = read_manifest(folder)
    public_path = folder / PUBLIC_FILE
    if not public_path.is_file():
        raise CourseError(f"{public_path} is missing: the released folder must hold the public checks; "
                          "download the assignment again, or pass its folder with --dir")
    _load_common(folder, assignment.name)
    checks = _checks(_load_module(public_path, assignment.name, "public_checks"))
    released = set(assignment.checks)
    unlisted = [c.name for c in checks if c.name not in released] + sorted(released - {c.name for c in checks})
    if unlisted:
        raise CourseError(f"{folder / MANIFEST_FILE} and {PUBLIC_FILE} disagree about check {unlisted[0]!r}: "
                          "the folder mixes two releases. Download the assignment again "
                          "(instructors: run `autograder release`)")
    entries = tuple(SuiteCheck(c, "public", assignment.checks[c.name].points, assignment.checks[c.name].seconds)
                    for c in checks)
    files = [*public_check_files(folder), folder / MANIFEST_FILE, *_grading_code()]
    return Suite(assignment, entries, None, _version(files, assignment), parameters=read_parameters(folder))


def public_check_files(folder: Path) -> list[Path]:
    """The public checks and, when the assignment has one, the helper they share with the hidden checks."""
    common = folder / COMMON_FILE
    return [folder / PUBLIC_FILE, common] if common.is_file() else [folder / PUBLIC_FILE]


def _load_common(folder: Path, assignment: str) -> None:
    """Load `folder`'s checks_common.py, for the check files' `from .checks_common import ...`; forget any older."""
    path = folder / COMMON_FILE
    if path.is_file():
        _load_module(path, assignment, "checks_common")
    else:
        sys.modules.pop(f"{SUITE_PACKAGE}.{assignment}.checks_common", None)


def _with_contents(place: Path, limit: int = 5000) -> list[Path]:
    """`place` and, for a folder, what it holds (each file is tried: a folder one cannot list may still be entered)."""
    found = [place]
    if place.is_dir():
        found += sorted(place.rglob("*"))[:limit]
    return found


def _load_module(path: Path, assignment: str, role: str) -> ModuleType:
    module_name = f"{SUITE_PACKAGE}.{assignment}.{role}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # so tracebacks and dataclasses in the module work
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[module_name]
        raise CourseError(f"{path} failed to load: {type(error).__name__}: {error}. "
                          "Fix the file; nothing was graded") from error
    return module


def _checks(module: ModuleType) -> list[Check]:
    checks = getattr(module, "CHECKS", None)
    if not isinstance(checks, list) or not all(isinstance(c, Check) for c in checks):
        raise CourseError(f"{module.__file__} must define CHECKS, a list of autograder.authoring.Check")
    return checks


def _catalogue(module: ModuleType) -> Catalogue:
    catalogue = getattr(module, "CATALOGUE", None)
    if not isinstance(catalogue, Catalogue):
        raise CourseError(f"{module.__file__} must define CATALOGUE, an autograder.authoring.Catalogue "
                          "(or be removed if the assignment has no misconception catalogue)")
    return catalogue


def _with_points(check: Check, visibility: str, assignment: Assignment, course: Course,
                 defined: set[str]) -> SuiteCheck:
    """`check` with its points from course.yaml; defined: every check's name, which no typo can be."""
    config = assignment.checks.get(check.name)
    if config is None:
        strays = [name for name in assignment.checks if name not in defined]
        close = difflib.get_close_matches(check.name, strays, n=1, cutoff=0.8)
        typo = f" (it lists `{close[0]}`, which is no check: a typo of this name?)" if close else ""
        raise CourseError(f"{course.path}: check {check.name!r} ({visibility}) has no points{typo}; add "
                          f"`{check.name}: <points>` under assignments.{assignment.name}.checks")
    return SuiteCheck(check, visibility, config.points, config.seconds)


def _require_all_listed(checks: tuple[SuiteCheck, ...], assignment: Assignment, course: Course,
                        hidden_path: Path) -> None:
    names = [c.name for c in checks]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CourseError(f"{assignment.name}: check {duplicates[0]!r} is defined twice; names must be unique")
    unknown = sorted(set(assignment.checks) - set(names))
    if unknown and not hidden_path.is_file():
        # Most likely the hidden checks' file was moved away, not every one of these lines mistyped.
        raise CourseError(f"{hidden_path} does not exist, and {course.path} lists {counted(len(unknown), 'check')} of "
                          f"{assignment.name} that {PUBLIC_FILE} does not define ({', '.join(unknown[:3])}"
                          f"{', ...' if len(unknown) > 3 else ''}): put {HIDDEN_FILE} back, or, if the assignment "
                          "has no hidden checks, remove those lines")
    if unknown:
        raise CourseError(f"{course.path}: assignments.{assignment.name}.checks.{unknown[0]}: no check by that "
                          f"name exists in {PUBLIC_FILE} or {HIDDEN_FILE}; remove the line or fix its name")


def _require_reference_functions(checks: tuple[SuiteCheck, ...], reference: ModuleType, path: Path) -> None:
    """Every function a check calls must be the reference's too: the checks plan their calls with its answers,
    and without it the reference would fail them as a student who left the function out."""
    missing = {}
    for entry in checks:
        for function in entry.check.functions:
            if not callable(getattr(reference, function, None)):
                missing.setdefault(function, []).append(entry.name)
    if missing:
        function, names = next(iter(missing.items()))
        more = f" (nor {', '.join(f'{name}()' for name in list(missing)[1:])})" if len(missing) > 1 else ""
        raise CourseError(f"{path} does not define {function}(){more}, which the checks {', '.join(names[:5])}"
                          f"{' and more' if len(names) > 5 else ''} grade: add it to the reference (or, if the "
                          "function was renamed, rename it in the checks and the stub too), then run again")


def _grading_code() -> list[Path]:
    found = []
    for name in GRADING_CODE:
        place = _PACKAGE / name
        found += sorted(place.rglob("*.py")) if place.is_dir() else [place]
    return found


def _version(files: list[Path], assignment: Assignment) -> str:
    digest = hashlib.sha256(repr((assignment.module, assignment.preload, assignment.warmup, assignment.limits,
                                  sorted(assignment.tolerance.items()), sorted(assignment.checks.items()),
                                  assignment.input_sets, assignment.arguments_unchanged)).encode())
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()[:16]
