"""Results as plain data: one CheckResult per check, one SubmissionResult per file.

Each field is declared once, with what it holds (grading.schema): the JSON
here, the store's columns, grades.csv and results.json are made from the
fields, so a new field is one edit. `SubmissionResult.to_json` is the line
`autograder grade --json` prints: every field.

Student-derived text has a budget, enforced here, where every result is built
(by the grader, from the store, from a cluster's worker): each text field of
a check, and a check as a whole, at most CHECK_BUDGET bytes; a submission, its
checks included, at most SUBMISSION_BUDGET. What is cut ends with a visible
note. So the store, the pages, the CSV, results.json and the gradebook, which
are made from results, are bounded by construction, whatever a reply holds.

Text the student's code chose while it ran (an exception's message, a
returned value, shape, entry or object's type name; marked by
authoring.protocol.chosen where a check's message quotes it, and an
exception's place that grading.places could not vouch for) is split off
here too: a hidden check's
`message` shows WITHHELD in its place, its hint begins with CHOSEN_NOTE, and
the whole message goes
to `withheld`, which outputs.audience gives the instructor only. The code
can write its arguments, a hidden check's inputs, into such text.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from autograder.authoring.protocol import MARKS, unmarked, without_chosen
from autograder.grading.schema import described, from_plain, to_plain
from autograder.grading.statuses import STATUSES
from autograder.text import counted

CHECK_BUDGET = 16 << 10  # bytes of text per check (UTF-8)
SUBMISSION_BUDGET = 256 << 10  # bytes of text per submission, its checks included
MESSAGE_BUDGET = 4 << 10  # one check's message; a hint or a misconception's sentence: 1 KiB
NOTES_KEPT = 50  # notes per submission; each at most NOTE_BUDGET
NOTE_BUDGET = 2 << 10
TRACEBACK_BUDGET = 32 << 10  # the grader's own traceback, for instructors
CUT = "\n[... {} more bytes not kept: over the feedback budget]"

# What a hidden check's message shows for text the code chose, and what its hint then says (the module's docstring).
WITHHELD = "[kept for your instructor]"
CHOSEN_NOTE = ("A hidden check's feedback leaves out what your code chose while it ran (an exception's message, a "
               "value, shape or class your function returned), since that can hold the check's inputs; your "
               "instructor sees it in full. To see it yourself, call the function on inputs like the ones the "
               "message describes (the dtypes and shapes after \"given\", where it says them); running the public "
               "checks (`autograder check`) is one way to call it, on their own inputs.")

# How the `problem` of a hand-in that did not load begins (grading.loading); its flag is this word too.
NOT_LOADED = "not loaded"


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict on one submission."""

    name: str = described('"<function>.<aspect>", unique in the suite')
    function: str = described("the student's function the check calls")
    visibility: str = described('"public" (released with the stub) or "hidden"')
    status: str = described("one of STATUSES")
    score: float = described("points earned")
    max_score: float = described("points possible")
    message: str = described("the message for the student: what the check found", "", was="output")
    hint: str = described("a hint for the student", "")
    misconception: str | None = described("a stable id from the assignment's misconception catalogue", None)
    seconds: float = described("how long the check took", 0.0)
    explanation: str = described("the misconception's sentence: the idea to revisit, in the course's words", "")
    example: str = described("JSON (grading.examples): inputs and values for public checks, sizes only for hidden",
                             "")
    stopped: str = described("how the sandbox stopped one of the check's calls: a sandbox.replies.Stopped value, "
                             'or ""', "")
    withheld: str = described("a hidden check's message as its check worded it, with the text the student's code "
                              "chose that `message` leaves out (an exception's message, say): for instructors only",
                              "")

    def __post_init__(self):
        _split_chosen(self)
        for name, limit in (("message", MESSAGE_BUDGET), ("hint", 1024), ("explanation", 1024), ("name", 200),
                            ("function", 200), ("withheld", MESSAGE_BUDGET)):
            _set(self, name, clip(getattr(self, name), limit))
        room = CHECK_BUDGET - size(self.message, self.hint, self.explanation, self.name, self.withheld)
        if len(self.example.encode("utf-8", "replace")) > room:
            _set(self, "example", omitted_example(len(self.example)))


@dataclass(frozen=True)
class SubmissionResult:
    """One submission's result: its checks' verdicts and where they came from."""

    student: str = described("the student's id (settled at discovery, grading.ids)")
    assignment: str = described("the assignment's name in course.yaml")
    file: str = described("the file graded")
    sha256: str = described("the SHA-256 of the file's bytes: a rerun skips a file graded with this suite")
    suite_version: str = described("the version of the checks and the grading code (grading.suite)")
    seed: int = described("the seed of the student's random inputs")
    sandbox: str = described("the sandbox's name, to show (never to decide on)")
    tests: tuple[CheckResult, ...] = described("one verdict per check, in suite order")
    # What outputs ask instead of comparing sandbox names (set by grading.grader.sandbox_fields).
    isolated: bool = described("whether the sandbox isolated the code strongly; False: a reduced sandbox, flagged",
                               False)
    # Set once, when the result is built (None: the checks' sums); stored and read back as it is.
    score: float | None = described("the raw score: the checks' points, before any late penalty (grading.late)",
                                    None)
    max_score: float | None = described("the points possible: the checks' maximums", None)
    problem: str = described("why the file could not be graded at all", "")
    did_not_load: bool = described("whether the student's file did not load (`problem` begins NOT_LOADED and "
                                   "gives the reason); False when the grader or a worker failed", False)
    notes: tuple[str, ...] = described("load problems, skipped cells, notebook warnings", ())
    printed: str = described("what the student's code printed (capped): for instructors only", "", was="output")
    killed_processes: int = described("processes the student's code left running, killed", 0)
    seconds: float = described("how long grading took", 0.0)
    graded_at: str = described("when it was graded (ISO 8601, UTC)", "")
    internal_error: str = described("the grader's own traceback when grading failed inside the grader: for "
                                    "instructors, never students", "")
    submitted_at: str = described('when it was handed in (ISO 8601, UTC; "" if unknown; a Blackboard attempt time '
                                  'as Blackboard wrote it, without a zone, which the exports write in UTC)', "")
    submitted_at_source: str = described('where that time came from (grading.late: "nbgrader timestamp", '
                                          '"gradescope metadata", LMS_LOCAL_TIME or "file time (unreliable)")', "")

    def __post_init__(self):
        for name in ("problem", "internal_error"):  # a load's exception (protocol.chosen): all of it shown
            _set(self, name, unmarked(getattr(self, name)))
        _set(self, "notes", tuple(unmarked(note) for note in self.notes))
        for name, limit in (("printed", 64 << 10), ("problem", MESSAGE_BUDGET), ("file", 1024), ("student", 512),
                            ("internal_error", TRACEBACK_BUDGET)):
            _set(self, name, clip(getattr(self, name), limit))
        notes = [clip(note, NOTE_BUDGET) for note in self.notes[:NOTES_KEPT]]
        if len(self.notes) > NOTES_KEPT:
            notes.append(f"[... {len(self.notes) - NOTES_KEPT} more notes not kept: over the feedback budget]")
        _set(self, "notes", tuple(notes))
        _set(self, "tests", _within(self.tests, SUBMISSION_BUDGET - size(self.printed, self.problem, self.file,
                                                                       self.internal_error, *self.notes)))
        if self.score is None:
            _set(self, "score", round(sum(t.score for t in self.tests), 6))
        if self.max_score is None:
            _set(self, "max_score", round(sum(t.max_score for t in self.tests), 6))

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
        """The line `grade --json` prints: every field, as `result_to_plain` gives it."""
        return result_to_plain(self)


def _split_chosen(check: CheckResult) -> None:
    """A hidden check's message without the text the code chose, kept whole in `withheld`; a public one's unmarked."""
    for name in ("hint", "explanation"):  # our own text: a mark there is a stray one
        _set(check, name, unmarked(getattr(check, name)))
    if check.visibility == "public" or not any(mark in check.message for mark in MARKS):
        _set(check, "message", unmarked(check.message))
        return
    _set(check, "withheld", unmarked(check.message))
    _set(check, "message", without_chosen(check.message, WITHHELD))
    _set(check, "hint", f"{CHOSEN_NOTE} {check.hint}".rstrip())


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
    used = sum(size(t.message, t.hint, t.explanation, t.example, t.name, t.withheld) for t in tests)
    if used <= room or not tests:
        return tests
    tests = list(tests)
    for i in sorted(range(len(tests)), key=lambda i: -len(tests[i].example)):
        if used <= room:
            break
        if tests[i].example:
            smaller = dataclasses.replace(tests[i], example=omitted_example(len(tests[i].example)))
            used -= size(tests[i].example) - size(smaller.example)
            tests[i] = smaller
    share = max(256, room // len(tests) - 512)
    if used > room:
        tests = [dataclasses.replace(t, message=clip(t.message, share), withheld=clip(t.withheld, share),
                                     hint=clip(t.hint, 256),
                                     explanation=clip(t.explanation, 256)) for t in tests]
    return tuple(tests)


def _set(result, name: str, value) -> None:
    """Set a field of a frozen result while it is being built (its budget is part of building it)."""
    if getattr(result, name) is not value:
        object.__setattr__(result, name, value)


def flags(result: SubmissionResult) -> list[str]:
    """Short labels for a TA: what in this submission needs a look."""
    found = []
    if result.internal_error:
        found.append("internal error")
    elif result.did_not_load:
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
        found.append(f"left {counted(result.killed_processes, 'process', 'processes')}")
    if not result.isolated:
        found.append("reduced sandbox")
    return found


# What each flag of `flags` (and the terminal's "error") means, for every place that shows them.
FLAG_MEANINGS = {
    NOT_LOADED: "the file did not load (a syntax error, an error, exit, crash or hang in its top-level code, or "
                "a file that cannot be read); no check ran, and the reason comes first in its feedback",
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


def flag_kind(flag: str) -> str:
    """The entry of FLAG_MEANINGS or late.LATE_MEANINGS that explains `flag` ("left 3 processes": "left N
    processes", "late (−25)": "late (−N)")."""
    if flag.startswith("left ") and flag.endswith((" process", " processes")):
        return "left N processes"
    if flag.startswith("late (−"):
        return "late (−N)"
    return flag


def result_to_plain(result: SubmissionResult) -> dict:
    """Every field of `result` as JSON-ready plain data, losslessly (grading.schema)."""
    return to_plain(result)


def result_from_plain(data) -> SubmissionResult:
    """The result `result_to_plain` gave, from data that crossed a process or machine boundary.

    Every field is checked for its type, so whatever arrives is a well-formed
    result or a ValueError naming the first field that is not (grading.schema).
    """
    return from_plain(SubmissionResult, data)
