"""course.yaml: the course, its assignments, points, limits, tolerances and seed salt.

The file is validated on load: an unknown key, a missing value or a check
without points is an error that names the key, so a typo never silently
changes a grade. Point values live here and nowhere else.
"""
from __future__ import annotations

import math
import zoneinfo
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import yaml

from autograder.authoring.checks import Tolerance
from autograder.authoring.seeds import INPUT_SETS, student_seed
from autograder.grading.attempts import MISSING, POLICIES, SubmissionPolicy
from autograder.grading.ids import canonical
from autograder.grading.late import EXAMPLE_TIME, LateRule, TimeError, parse_due
from autograder.grading.yaml_said import yaml_error
from autograder.sandbox.limits import Limits

COURSE_FILE = "course.yaml"
# Zone names that are abbreviations, not places: EST is UTC-5 all year, so `time_zone: EST` put every summer
# hand-in an hour off New York's clock; a place's zone follows its summer time.
ABBREVIATED_ZONES = {"EST", "MST", "HST", "CET", "EET", "MET", "WET", "EST5EDT", "CST6CDT", "MST7MDT", "PST8PDT"}


class CourseError(Exception):
    """course.yaml is missing or invalid; the message names the file and key."""


@dataclass(frozen=True)
class CheckConfig:
    points: float
    seconds: float | None = None  # per-call limit for this check; None = the assignment's call_seconds


@dataclass(frozen=True)
class Assignment:
    """One assignment's settings, with course defaults already applied."""

    name: str
    title: str
    module: str  # the student's file is <module>.py or <module>.ipynb
    source_dir: Path  # released to students: stub, notebook, public checks
    solution_dir: Path  # never released: reference, hidden checks
    preload: tuple[str, ...]
    limits: Limits
    tolerance: dict[str, Tolerance]
    checks: dict[str, CheckConfig]
    # Manually graded written answers in the assignment's notebook (nbgrader's formgrader grades
    # them): name -> points. Not part of `autograder grade`'s total, which is `max_score`.
    written: dict[str, float] = field(default_factory=dict)
    # Deadlines and late work (`due`, `late`, `extensions`); no due time means nothing is late.
    late: LateRule = field(default_factory=LateRule)
    # Python statements each worker runs once after the preload, before any submission: what the preloaded
    # libraries would otherwise load on a first call (an import inside a function), which no student pays then.
    warmup: tuple[str, ...] = ()
    # `grade` also preloads the modules the class's hand-ins import (grading.class_imports); false: only `preload`.
    preload_class_imports: bool = True
    # Which of several hand-ins counts, how many may, and what an LMS export writes for none (grading.attempts).
    submissions: SubmissionPolicy = field(default_factory=SubmissionPolicy)
    # How many sets of randomized inputs the class shares (authoring.seeds.student_seed).
    input_sets: int = INPUT_SETS
    # Every call's array arguments are read back after it; one changed in place costs its function one check
    # (authoring.checks.Trial, grading.changed_arguments).
    arguments_unchanged: bool = False

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.checks.values())

    def seed_for(self, salt: str, student: str) -> int:
        """The seed of `student`'s randomized inputs: their input set's (authoring.seeds.student_seed)."""
        return student_seed(salt, self.name, student, self.input_sets)


@dataclass(frozen=True)
class Course:
    path: Path  # the course.yaml file
    name: str
    term: str
    seed_salt: str
    assignments: dict[str, Assignment]

    @property
    def root(self) -> Path:
        return self.path.parent

    def assignment(self, name: str) -> Assignment:
        if name not in self.assignments:
            known = ", ".join(sorted(self.assignments)) or "none"
            raise CourseError(f"{self.path}: there is no assignment {name!r} (known: {known}). "
                              "Add it under `assignments:` or check the spelling.")
        return self.assignments[name]


def find_course(start: Path | None = None) -> Path:
    """The nearest course.yaml in `start` or one of its parents."""
    start = (start or Path.cwd()).resolve()
    for directory in [start, *start.parents]:
        if (directory / COURSE_FILE).is_file():
            return directory / COURSE_FILE
    raise CourseError(f"no {COURSE_FILE} in {start} or any parent directory. Run the command "
                      "inside the course repository, or pass --course PATH/TO/course.yaml.")


class _TimesAsText(yaml.SafeLoader):
    """YAML's safe loader, leaving times as their text: `parse_due` reads them, so an impossible date
    (2026-11-31) is named with its key, where YAML's own reading failed the whole file with a traceback. A key
    written twice in one mapping is refused: YAML keeps the last, so a `due:` added above the old one, or a
    check's points given twice, changed grades without a word."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                continue  # a key YAML itself refuses (a list) or that no course.yaml has
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is written twice, at lines {seen[key] + 1} and "
                    f"{key_node.start_mark.line + 1}; keep one", key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


_TimesAsText.add_constructor("tag:yaml.org,2002:timestamp", _TimesAsText.construct_yaml_str)


def load_course(path: Path) -> Course:
    """Read and validate course.yaml."""
    path = Path(path).resolve()
    try:
        data = yaml.load(path.read_text(), Loader=_TimesAsText)  # noqa: S506 - a SafeLoader
    except OSError as error:
        raise CourseError(f"cannot read {path}: {error.strerror}. Pass --course with the right path.") from None
    except yaml.YAMLError as error:
        raise CourseError(yaml_error(path, error)) from None
    reader = _Reader(path)
    top = reader.mapping(data, "", required={"course", "assignments"}, optional={"defaults"})
    course = reader.mapping(top["course"], "course", required={"name", "seed_salt"}, optional={"term"})
    defaults = reader.mapping(top.get("defaults", {}), "defaults", optional={"limits", "tolerance", "submissions"})
    base_limits = reader.limits(defaults.get("limits", {}), "defaults.limits", Limits())
    base_tolerance = reader.tolerance(defaults.get("tolerance", {}), "defaults.tolerance", {})
    base_policy = reader.submissions(defaults.get("submissions", {}), "defaults.submissions", SubmissionPolicy())
    entries = reader.mapping(top["assignments"], "assignments")
    if not entries:
        raise CourseError(f"{path}: `assignments` is empty; add at least one assignment.")
    assignments = {name: reader.assignment(name, entry, base_limits, base_tolerance, base_policy)
                   for name, entry in entries.items()}
    return Course(path=path, name=reader.text(course["name"], "course.name"),
                  term=reader.text(course.get("term", ""), "course.term"),
                  seed_salt=reader.text(course["seed_salt"], "course.seed_salt"), assignments=assignments)


class _Reader:
    """Validating accessors that name the offending key in every error."""

    ASSIGNMENT_KEYS = {"title", "module", "source", "solution", "preload", "preload_class_imports", "warmup", "limits",
                       "tolerance", "checks", "written", "due", "late", "extensions", "submissions", "input_sets",
                       "time_zone", "arguments_unchanged"}
    LATE_KEYS = {"penalty_per_day", "grace_minutes", "max_days_late"}

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, problem: str):
        raise CourseError(f"{self.path}: {key}: {problem}")

    def mapping(self, value, key: str, required=frozenset(), optional=None) -> dict:
        if not isinstance(value, dict):
            self.fail(key or "the file", "expected a mapping of keys to values")
        for name in value:
            if not isinstance(name, str):
                self.fail(key, f"key {name!r} is not text")
            if optional is not None and name not in required | optional:
                known = ", ".join(sorted(required | optional))
                self.fail(_join(key, name), f"unknown key (expected one of: {known})")
        for name in sorted(required):
            if name not in value:
                self.fail(_join(key, name), "missing; it is required")
        return value

    def text(self, value, key: str) -> str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            self.fail(key, "expected text")
        return str(value)

    def number(self, value, key: str, minimum: float = 0.0) -> float:
        # Not `value < minimum` alone: NaN compares false with everything, and .nan or .inf points, limits or
        # tolerances would pass into every score and export.
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not minimum <= value < math.inf:
            self.fail(key, f"expected a number >= {minimum:g}, got {value!r}")
        return value

    def limits(self, value, key: str, base: Limits) -> Limits:
        names = {f.name for f in fields(Limits)}
        value = self.mapping(value, key, optional=names)
        # Times may be fractions of a second; counts and sizes are whole and at least 1.
        return replace(base, **{name: self.number(v, _join(key, name), minimum=0.01 if "seconds" in name else 1)
                                for name, v in value.items()})

    def tolerance(self, value, key: str, base: dict) -> dict:
        value = self.mapping(value, key, optional={"float32", "float64"})
        result = dict(base)
        for dtype, entry in value.items():
            entry = self.mapping(entry, _join(key, dtype), required={"rtol", "atol"})
            result[dtype] = Tolerance(self.number(entry["rtol"], _join(key, dtype, "rtol")),
                                      self.number(entry["atol"], _join(key, dtype, "atol")))
        if "float32" in result and "float64" in result:
            result["float64"] = replace(result["float64"], coarser=result["float32"])
        return result

    def submissions(self, value, key: str, base: SubmissionPolicy) -> SubmissionPolicy:
        """`submissions: {policy: best | last | last_on_time, max: N, missing: blank | zero}` over `base`."""
        value = self.mapping(value, key, optional={"policy", "max", "missing"})
        for name, allowed in (("policy", POLICIES), ("missing", MISSING)):
            if name in value and value[name] not in allowed:
                self.fail(_join(key, name), f"expected one of {', '.join(allowed)}; got {value[name]!r}")
        limit = value.get("max", base.limit)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            self.fail(_join(key, "max"), f"expected a whole number of hand-ins, at least 1 (or leave it out for any "
                                         f"number); got {limit!r}")
        return SubmissionPolicy(value.get("policy", base.policy), limit, value.get("missing", base.missing))

    def assignment(self, name: str, entry, base_limits: Limits, base_tolerance: dict,
                   base_policy: SubmissionPolicy | None = None) -> Assignment:
        key = _join("assignments", name)
        entry = self.mapping(entry, key, required={"title", "module", "checks"}, optional=self.ASSIGNMENT_KEYS)
        tolerance = self.tolerance(entry.get("tolerance", {}), _join(key, "tolerance"), base_tolerance)
        for dtype in ("float32", "float64"):
            if dtype not in tolerance:
                self.fail(_join(key, "tolerance", dtype), "missing; set it here or under defaults.tolerance")
        preload = entry.get("preload", ["numpy"])
        if not isinstance(preload, list) or not all(isinstance(m, str) for m in preload):
            self.fail(_join(key, "preload"), "expected a list of module names")
        for switch in ("preload_class_imports", "arguments_unchanged"):
            if not isinstance(entry.get(switch, True), bool):
                self.fail(_join(key, switch), f"expected true or false, got {entry[switch]!r}")
        root = self.path.parent
        return Assignment(
            name=name,
            title=self.text(entry["title"], _join(key, "title")),
            module=self.text(entry["module"], _join(key, "module")),
            source_dir=root / self.text(entry.get("source", f"assignments/{name}"), _join(key, "source")),
            solution_dir=root / self.text(entry.get("solution", f"solutions/{name}"), _join(key, "solution")),
            preload=tuple(preload),
            preload_class_imports=entry.get("preload_class_imports", True),
            arguments_unchanged=entry.get("arguments_unchanged", False),
            limits=self.limits(entry.get("limits", {}), _join(key, "limits"), base_limits),
            tolerance=tolerance,
            checks=self.checks(entry["checks"], _join(key, "checks")),
            written=self.written(entry.get("written", {}), _join(key, "written")),
            late=self.late_rule(entry, key),
            submissions=self.submissions(entry.get("submissions", {}), _join(key, "submissions"),
                                         base_policy or SubmissionPolicy()),
            warmup=self.warmup(entry.get("warmup", []), _join(key, "warmup")),
            input_sets=self.input_sets(entry.get("input_sets", INPUT_SETS), _join(key, "input_sets")))

    def input_sets(self, value, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.fail(key, f"expected a whole number of input sets, at least 1 (more sets than students give nearly "
                           f"every student inputs of their own); got {value!r}")
        return value

    def warmup(self, value, key: str) -> tuple[str, ...]:
        """Statements of Python, each compiled here so that a typo is an error naming its line, not a worker fault."""
        if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
            self.fail(key, "expected a list of Python statements, e.g. [\"import torch.fx\"]")
        for number, line in enumerate(value):
            try:
                compile(line, f"{key}[{number}]", "exec")
            except SyntaxError as error:
                self.fail(f"{key}[{number}]", f"is not a Python statement ({error.msg}): {line!r}")
        return tuple(value)

    def late_rule(self, entry: dict, key: str) -> LateRule:
        """`due`, `late` and `extensions` of one assignment; `late` and `extensions` need a `due`."""
        if "due" not in entry:
            for name in ("late", "extensions"):
                if name in entry:
                    self.fail(_join(key, name), f"needs the assignment's due time: add `due: {EXAMPLE_TIME}` "
                                                f"to {key}")
            return LateRule()
        late = self.mapping(entry.get("late", {}), _join(key, "late"), optional=self.LATE_KEYS)
        fraction = self.number(late.get("penalty_per_day", 0.0), _join(key, "late", "penalty_per_day"))
        if fraction > 1:
            self.fail(_join(key, "late", "penalty_per_day"), f"is the fraction of the total removed per day "
                                                             f"(0.1 for 10%), at most 1; got {fraction!r}")
        limit = late.get("max_days_late")
        extensions = self.extension_ids(entry.get("extensions", {}), _join(key, "extensions"))
        return LateRule(
            due=self.time(entry["due"], _join(key, "due")), penalty_per_day=fraction,
            grace_minutes=self.number(late.get("grace_minutes", 0.0), _join(key, "late", "grace_minutes")),
            max_days_late=None if limit is None else self.number(limit, _join(key, "late", "max_days_late")),
            extensions={str(student): self.time(due, _join(key, "extensions", str(student)))
                        for student, due in extensions.items()},
            time_zone=self.zone(entry.get("time_zone", ""), _join(key, "time_zone")))

    def zone(self, value, key: str) -> str:
        """An IANA time zone's name ("" for none); never one of the database's legacy abbreviations."""
        value = self.text(value, key) if value else ""
        try:
            zone = value and zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            self.fail(key, f"is not a time zone's name: {value!r}; write the institution's as the IANA database "
                           "names it, e.g. America/New_York or Europe/Berlin")
        if value.upper() in ABBREVIATED_ZONES:
            fixed = " (it stays on standard time all summer)" if value.upper() in ("EST", "MST", "HST") else ""
            self.fail(key, f"{value!r} is an abbreviation the time zone database keeps for old systems, not an "
                           f"institution's clock{fixed}; write the zone of the institution's city, e.g. "
                           "America/New_York or Europe/Berlin")
        return value and str(zone)

    def extension_ids(self, value, key: str) -> dict:
        """`extensions`, keyed by ids that are text and name each student once (ids compare as grading.ids does)."""
        if isinstance(value, dict):
            for name in value:
                if isinstance(name, (int, float)) and not isinstance(name, bool):
                    self.fail(_join(key, str(name)), f"is a number to YAML; write the id in quotes ('{name}': ...), "
                                                     "as YAML reads 0123 as 83 and drops the zeros of 00123")
        extensions = self.mapping(value, key)
        seen: dict[str, str] = {}
        for name in extensions:
            if canonical(name) in seen:
                self.fail(key, f"names one student twice, as {seen[canonical(name)]!r} and {name!r} (ids that "
                               "differ only in case are one student); keep one")
            seen[canonical(name)] = name
        return extensions

    def time(self, value, key: str):
        try:
            return parse_due(value)
        except TimeError as error:
            self.fail(key, str(error))

    def written(self, value, key: str) -> dict[str, float]:
        value = self.mapping(value, key)
        return {name: self.number(points, _join(key, name)) for name, points in value.items()}

    def checks(self, value, key: str) -> dict[str, CheckConfig]:
        value = self.mapping(value, key)
        if not value:
            self.fail(key, "no checks are listed")
        checks = {}
        for name, entry in value.items():
            check_key = _join(key, name)
            if "." not in name:
                self.fail(check_key, "check names are <function>.<aspect>, e.g. double.matches_reference")
            if entry is None:
                self.fail(check_key, "no points given")
            if isinstance(entry, dict):
                entry = self.mapping(entry, check_key, required={"points"}, optional={"points", "seconds"})
                seconds = entry.get("seconds")
                checks[name] = CheckConfig(
                    self.number(entry["points"], _join(check_key, "points")),
                    None if seconds is None else self.number(seconds, _join(check_key, "seconds"), minimum=0.1))
            else:
                checks[name] = CheckConfig(self.number(entry, check_key))
        return checks


def read_assignment(path: Path, name: str, entry) -> Assignment:
    """One assignment entry, as course.yaml writes it, read from the file at `path` (a released manifest).

    Its `source` and `solution` are folders relative to the file's own; the
    course's defaults do not apply, so the entry must carry its tolerances.
    """
    return _Reader(Path(path).resolve()).assignment(name, entry, Limits(), {})


def assignment_entry(assignment: Assignment, checks: list[str], folder: str = ".") -> dict:
    """`assignment` as a course.yaml entry holding only `checks`, with both its folders at `folder`.

    What `read_assignment` reads back: one codec for course.yaml and for the released manifest.
    """
    return {"title": assignment.title, "module": assignment.module, "source": folder, "solution": folder,
            "preload": list(assignment.preload), "limits": asdict(assignment.limits),
            "tolerance": {dtype: {"rtol": tol.rtol, "atol": tol.atol}  # `coarser` follows from these on reading
                          for dtype, tol in sorted(assignment.tolerance.items())},
            "arguments_unchanged": assignment.arguments_unchanged,
            "checks": {name: _check_entry(assignment.checks[name]) for name in checks}}


def _check_entry(config: CheckConfig):
    return config.points if config.seconds is None else {"points": config.points, "seconds": config.seconds}


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)
