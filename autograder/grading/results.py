"""Results as plain data: one CheckResult per check, one SubmissionResult per file.

`SubmissionResult.to_json` is the line `autograder grade --json` prints, in
the shape of Gradescope's results.json plus the fields a TA needs to trust
it (seed, suite version, sandbox mode).

Student-derived text has a budget, enforced here, where every result is built
(by the grader, from the store, from a cluster's worker): each text field of
a check, and a check as a whole, at most CHECK_BUDGET bytes; a submission, its
checks included, at most SUBMISSION_BUDGET. What is cut ends with a visible
note. So the store, the pages, the CSV, results.json and the gradebook, which
are made from results, are bounded by construction, whatever a reply holds.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields

CHECK_BUDGET = 16 << 10  # bytes of text per check (UTF-8)
SUBMISSION_BUDGET = 256 << 10  # bytes of text per submission, its checks included
MESSAGE_BUDGET = 4 << 10  # one check's message; a hint or a misconception's sentence: 1 KiB
NOTES_KEPT = 50  # notes per submission; each at most NOTE_BUDGET
NOTE_BUDGET = 2 << 10
TRACEBACK_BUDGET = 32 << 10  # the grader's own traceback, for instructors
CUT = "\n[... {} more bytes not kept: over the feedback budget]"

STATUSES = ("passed", "failed", "error", "timeout")
# How the `problem` of a hand-in that did not load begins (grading.loading); its flag is this word too.
NOT_LOADED = "not loaded"


@dataclass(frozen=True)
class CheckResult:
    name: str  # "<function>.<aspect>"
    function: str
    visibility: str  # "public" or "hidden"
    status: str  # one of STATUSES
    score: float
    max_score: float
    output: str = ""  # the message for the student
    hint: str = ""
    misconception: str | None = None  # a stable id from the assignment's misconception catalogue
    seconds: float = 0.0
    explanation: str = ""  # the misconception's sentence: the idea to revisit, in the course's words
    example: str = ""  # JSON (autograder.grading.examples): inputs and values for public checks, sizes only for hidden
    stopped: str = ""  # "timeout", "crashed" or "rejected" when the sandbox stopped one of the check's calls

    def __post_init__(self):
        for name, limit in (("output", MESSAGE_BUDGET), ("hint", 1024), ("explanation", 1024), ("name", 200),
                            ("function", 200)):
            _set(self, name, clip(getattr(self, name), limit))
        room = CHECK_BUDGET - size(self.output, self.hint, self.explanation, self.name)
        if len(self.example.encode("utf-8", "replace")) > room:
            _set(self, "example", omitted_example(len(self.example)))


@dataclass(frozen=True)
class SubmissionResult:
    student: str
    assignment: str
    file: str
    sha256: str
    suite_version: str
    seed: int
    sandbox: str  # "bwrap" or "fallback"
    tests: tuple[CheckResult, ...]
    problem: str = ""  # why the file could not be graded at all
    notes: tuple[str, ...] = ()  # load problems, skipped cells, notebook warnings
    output: str = ""  # what the student's code printed (capped)
    killed_processes: int = 0
    seconds: float = 0.0
    graded_at: str = ""
    # The grader's own traceback when grading failed inside the grader: for instructors, never students.
    internal_error: str = ""
    # When it was handed in (ISO 8601, UTC; "" if unknown) and where that time came from
    # (grading.late: "nbgrader timestamp", "gradescope metadata" or "file time (unreliable)").
    submitted_at: str = ""
    submitted_at_source: str = ""

    def __post_init__(self):
        for name, limit in (("output", 64 << 10), ("problem", MESSAGE_BUDGET), ("file", 1024), ("student", 512),
                            ("internal_error", TRACEBACK_BUDGET)):
            _set(self, name, clip(getattr(self, name), limit))
        notes = [clip(note, NOTE_BUDGET) for note in self.notes[:NOTES_KEPT]]
        if len(self.notes) > NOTES_KEPT:
            notes.append(f"[... {len(self.notes) - NOTES_KEPT} more notes not kept: over the feedback budget]")
        _set(self, "notes", tuple(notes))
        _set(self, "tests", _within(self.tests, SUBMISSION_BUDGET - size(self.output, self.problem, self.file,
                                                                       self.internal_error, *self.notes)))

    @property
    def score(self) -> float:
        """The raw score: the checks' points, before any late penalty (grading.late)."""
        return round(sum(t.score for t in self.tests), 6)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_score for t in self.tests), 6)

    def counts(self) -> dict[str, int]:
        return {status: sum(t.status == status for t in self.tests) for status in STATUSES}

    def by_function(self) -> dict[str, tuple[float, float]]:
        """function -> (points earned, points possible), in check order."""
        totals: dict[str, list[float]] = {}
        for test in self.tests:
            entry = totals.setdefault(test.function, [0.0, 0.0])
            entry[0] += test.score
            entry[1] += test.max_score
        return {name: (round(got, 6), round(possible, 6)) for name, (got, possible) in totals.items()}

    def to_json(self) -> dict:
        """Gradescope's results.json fields, plus provenance."""
        return {
            "student": self.student, "assignment": self.assignment, "score": self.score,
            "max_score": self.max_score, "seed": self.seed, "suite_version": self.suite_version,
            "sandbox": self.sandbox, "file": self.file, "sha256": self.sha256, "problem": self.problem,
            "notes": list(self.notes), "output": self.output, "execution_time": round(self.seconds, 3),
            "internal_error": self.internal_error, "submitted_at": self.submitted_at,
            "submitted_at_source": self.submitted_at_source,
            "tests": [{"name": t.name, "function": t.function, "score": t.score, "max_score": t.max_score,
                       "status": t.status, "visibility": t.visibility, "output": t.output,
                       "hint": t.hint, "misconception": t.misconception, "explanation": t.explanation}
                      for t in self.tests],
        }


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` UTF-8 bytes, ending with a note saying how much was cut; idempotent."""
    if not isinstance(text, str) or len(text) * 4 <= limit or len(text.encode("utf-8", "replace")) <= limit:
        return text
    data = text.encode("utf-8", "replace")
    kept = limit - len(CUT.format(len(data)).encode())
    return data[:kept].decode("utf-8", "ignore") + CUT.format(len(data) - kept)


def size(*texts: str) -> int:
    """The UTF-8 size of `texts` together, in bytes."""
    return sum(len(t.encode("utf-8", "replace")) for t in texts if isinstance(t, str))


def omitted_example(length: int) -> str:
    """What stands for an example over its budget: valid JSON that says so (outputs show `omitted`)."""
    return json.dumps({"omitted": f"The failing example was too large to keep ({length} bytes, over the "
                                  f"{CHECK_BUDGET >> 10} KiB a check may show); the message above says what failed."})


def _within(tests: tuple, room: int) -> tuple:
    """`tests` within `room` bytes: examples dropped (largest first), then messages cut, until they fit."""
    used = sum(size(t.output, t.hint, t.explanation, t.example, t.name) for t in tests)
    if used <= room or not tests:
        return tests
    tests = list(tests)
    for i in sorted(range(len(tests)), key=lambda i: -len(tests[i].example)):
        if used <= room:
            break
        if tests[i].example:
            smaller = _replace(tests[i], example=omitted_example(len(tests[i].example)))
            used -= size(tests[i].example) - size(smaller.example)
            tests[i] = smaller
    share = max(256, room // len(tests) - 512)
    if used > room:
        tests = [_replace(t, output=clip(t.output, share), hint=clip(t.hint, 256), explanation=clip(t.explanation, 256))
                 for t in tests]
    return tuple(tests)


def _replace(test: CheckResult, **changes) -> CheckResult:
    return CheckResult(**{**{f.name: getattr(test, f.name) for f in fields(CheckResult)}, **changes})


def _set(result, name: str, value) -> None:
    """Set a field of a frozen result while it is being built (its budget is part of building it)."""
    if getattr(result, name) is not value:
        object.__setattr__(result, name, value)


def flags(result: SubmissionResult) -> list[str]:
    """Short labels for a TA: what in this submission needs a look."""
    found = []
    if result.internal_error:
        found.append("internal error")
    elif result.problem.startswith(NOT_LOADED + ":"):
        found.append(NOT_LOADED)
    elif result.problem:
        found.append("not graded")
    if any(t.status == "timeout" for t in result.tests):
        found.append("timeout")
    if any(t.stopped == "crashed" for t in result.tests):
        found.append("crash")
    if any(t.stopped == "rejected" for t in result.tests):
        found.append("rejected reply")
    if result.killed_processes:
        found.append(f"left {result.killed_processes} processes")
    if result.sandbox != "bwrap":
        found.append("reduced sandbox")
    return found


# What each flag of `flags` (and the terminal's "error") means, for every place that shows them.
FLAG_MEANINGS = {
    NOT_LOADED: "the file did not load (a syntax error, an error, exit or crash in its top-level code, or a "
                "file that cannot be read); no check ran, and the reason comes first in its feedback",
    "not graded": "the grader could not run the file (its worker did not start); fix the cause and grade again",
    "internal error": "the grader itself failed on this file, not the student's code; the report shows the "
                      "traceback, and the next `grade` grades it again",
    "error": "a check's call raised an exception, stopped the worker or sent an unusable reply (that check "
             "scores 0, the others still count)",
    "timeout": "a call took longer than its time limit and was stopped",
    "crash": "a call stopped the worker process: it exited, crashed or was killed (e.g. for memory)",
    "rejected reply": "a call's reply could not be trusted (too large or malformed) and was refused",
    "left N processes": "the student's code started N processes that were still running after a call or "
                        "the load; they were killed (only processes seen besides the worker itself count)",
    "reduced sandbox": "graded without bubblewrap, with weaker isolation; the score is not affected",
}


def result_to_plain(result: SubmissionResult) -> dict:
    """Every field of `result` as JSON-ready plain data, losslessly (unlike `to_json`, which is for people)."""
    data = {f.name: getattr(result, f.name) for f in fields(SubmissionResult)}
    data["notes"] = list(result.notes)
    data["tests"] = [{f.name: getattr(test, f.name) for f in fields(CheckResult)} for test in result.tests]
    return data


def result_from_plain(data) -> SubmissionResult:
    """The result `result_to_plain` gave, from data that crossed a process or machine boundary.

    Every field is checked for its type, so whatever arrives is a well-formed
    result or a ValueError naming the first field that is not.
    """
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        raise ValueError("a result must be a mapping with a list of tests")
    tests = tuple(CheckResult(**_typed(CheckResult, test, f"tests[{i}]")) for i, test in enumerate(data["tests"]))
    values = _typed(SubmissionResult, {**data, "tests": []}, "result")
    notes = data.get("notes")
    if not isinstance(notes, list) or not all(isinstance(note, str) for note in notes):
        raise ValueError("result.notes: expected a list of text")
    return SubmissionResult(**{**values, "notes": tuple(notes), "tests": tests})


# The field types the plain form holds, by the annotations in this module (bool is no number here).
_PLAIN_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "str | None": (str, type(None)),
                "tuple[str, ...]": (list,), "tuple[CheckResult, ...]": (list,)}


def _typed(kind, data, where: str) -> dict:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping")
    values = {}
    for field in fields(kind):
        if field.name not in data:
            raise ValueError(f"{where}.{field.name}: missing")
        value = data[field.name]
        if isinstance(value, bool) or not isinstance(value, _PLAIN_TYPES[field.type]):
            raise ValueError(f"{where}.{field.name}: expected {field.type}, got {type(value).__name__}")
        values[field.name] = value
    return values
