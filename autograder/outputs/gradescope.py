"""Gradescope: results.json in Gradescope's documented format, from results; nothing here grades.

https://gradescope-autograders.readthedocs.io/en/latest/specs/ . The
bundle's run_autograder grades on Gradescope's own machines (cli.gradescope)
and writes `gradescope_results`; `write_gradescope_dir` writes the same files
from the results store for a course that grades elsewhere and uploads.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.found import nothing_handed_in
from autograder.grading.ids import id_problem
from autograder.grading.late import Late, LateRule, assess_result
from autograder.grading.results import SubmissionResult
from autograder.grading.schema import to_plain
from autograder.outputs import ExportError, audience, write_whole
from autograder.text import counted, safe

# Gradescope's visibility for our checks. Public checks are released with the stub, so
# they are "visible". Hidden checks are "visible" too, deliberately: what a student sees
# of a hidden check is its name, our message and hint, which by design never carry the
# check's inputs (issue 5), so showing them early leaks nothing the grade needs kept.
# "after_published" would hide the hidden checks AND, per Gradescope's docs, the student's
# total until grades are published, so a student whose public checks all pass would see
# "all passed" while hidden checks failed (the Otter complaint, ucbds-infra/otter-grader#138).
VISIBILITY = {"public": "visible", "hidden": "visible"}
MANIFEST = ".students.json"  # in OUT: the students the last `export gradescope` wrote a results.json for


# Student-facing text is rendered as plain text: our messages contain "<", "*" and "_",
# which "simple_format"/"html"/"md" would interpret.
TEXT = "text"

# The fields of a result that results.json carries in Gradescope's own keys or under a name of its own;
# every other field goes to extra_data as it is. `printed` and `internal_error` pass the
# audience's rules first; `score` is "raw_score" there, the top-level score being after any late penalty.
SHOWN_OTHERWISE = ("tests", "seconds", "printed", "internal_error", "score")
# A check's: name and points are Gradescope's keys; the message, explanation and hint make its "output" (`withheld`,
# a hidden check's message in full, goes to its extra_data for instructors);
# the example (up to 16 KiB a check) is shown by the report, not stored in every results.json.
CHECK_SHOWN_OTHERWISE = ("name", "score", "max_score", "message", "explanation", "hint", "example", "withheld")


def gradescope_results(result: SubmissionResult, late: Late | None = None) -> dict:
    """The results.json Gradescope shows for one submission (plus instructor-only extra_data).

    late: the late rule's verdict (grading.late); `score` is the total after its penalty, so it
    can be less than the tests' sum, which Gradescope allows: a top-level score overrides the sum.
    """
    numbers = _test_numbers(result)
    late = late or assess_result(None, result)
    return {
        "score": late.total,
        "execution_time": round(result.seconds, 3),
        "output": _summary(result, late),
        "output_format": TEXT,
        "test_output_format": TEXT,
        "test_name_format": TEXT,
        "visibility": "visible",
        # run_autograder's own stdout holds grader warnings and paths: for instructors only.
        "stdout_visibility": "hidden",
        # Provenance, and what the student's code printed: printed output may echo a hidden
        # check's inputs, so it goes here (stored, shown to instructors), not into "output".
        # Every other field of the result goes here too, under its own name (grading.schema).
        "extra_data": {
            **to_plain(result, without=SHOWN_OTHERWISE),
            "student_output": audience.submission_output(result, audience.INSTRUCTOR),
            "internal_error": audience.traceback(result, audience.INSTRUCTOR),
            "submitted_at": late.submitted_at, "submitted_at_source": late.submitted_at_source,
            "raw_score": result.score, "late_penalty": late.penalty,
            "late_by_hours": late.late_by_hours, "late_reason": late.reason,
        },
        "tests": [_gradescope_test(test, numbers[test.name]) for test in result.tests],
    }


def _gradescope_test(test, number: str) -> dict:
    # Gradescope knows only passed/failed; our error/timeout are failures whose message
    # already says what happened ("f did not return within 5 s and was stopped").
    output = "\n".join(text for text in (test.message, test.explanation, f"Hint: {test.hint}" if test.hint else "")
                       if text)
    return {
        "score": test.score,
        "max_score": test.max_score,
        "status": "passed" if test.status == "passed" else "failed",
        "name": test.name,
        "name_format": TEXT,
        "number": number,
        "output": output,
        "output_format": TEXT,
        "tags": [test.function, test.visibility, test.status],
        "visibility": VISIBILITY[test.visibility],
        # Every other field of the check; a hidden check's message in full passes the audience's rules first.
        "extra_data": {**to_plain(test, without=CHECK_SHOWN_OTHERWISE),
                       "withheld": audience.withheld(test, audience.INSTRUCTOR)},
    }


def _test_numbers(result: SubmissionResult) -> dict[str, str]:
    """"<function number>.<check number>", so Gradescope groups a function's checks together."""
    functions = list(result.by_function())
    seen: dict[str, int] = {}
    numbers = {}
    for test in result.tests:
        seen[test.function] = seen.get(test.function, 0) + 1
        numbers[test.name] = f"{functions.index(test.function) + 1}.{seen[test.function]}"
    return numbers


def _summary(result: SubmissionResult, late: Late) -> str:
    counts = result.counts()
    note = audience.submission_output_note(result, audience.STUDENT)  # the output itself is in extra_data
    # A hand-in with no file to grade (only a PDF, the file in a subfolder) names none: its made-up name would read
    # as the file graded, a notebook where the student handed in a .py.
    graded = "No file was graded" if nothing_handed_in(result) else Path(result.file).name
    lines = [f"{graded}: {result.score:g} / {result.max_score:g} points "
             f"({counts['passed']} of {len(result.tests)} checks passed)."]
    if late.penalty:
        lines.append(f"Late penalty: −{counted(late.penalty, 'point')}, so your total is {late.total:g} / "
                     f"{result.max_score:g}. Why: {late.reason}.")
    elif late.reason:
        lines.append(f"Late: {late.reason}.")
    if result.problem:  # a file that did not load says so itself ("not loaded: <file>, line 3 ...")
        lines.append(result.problem if result.did_not_load else f"Could not grade: {result.problem}")
    if counts["timeout"]:
        lines.append(f"{counted(counts['timeout'], 'check')} {'was' if counts['timeout'] == 1 else 'were'} "
                     "stopped at its time limit.")
    if counts["error"]:
        lines.append(f"{counted(counts['error'], 'check')} ended with an error in your code.")
    lines += [f"Note: {note}" for note in result.notes]
    lines.append("Points per function:")
    lines += [f"  {name:<18}{got:g} / {possible:g}" for name, (got, possible) in result.by_function().items()]
    lines.append("Hidden checks show their name, message and hint, never their input or expected arrays.")
    if note:
        lines.append(note)
    return "\n".join(lines)


@dataclass
class Written:
    """What an export wrote, and each student it could not write with the reason (the rest are written)."""

    files: list[Path] = dataclasses.field(default_factory=list)
    refused: list[str] = dataclasses.field(default_factory=list)  # "<student>: <why and what to do>"
    removed: list[str] = dataclasses.field(default_factory=list)  # students an earlier export wrote, with no result now


def write_gradescope_dir(results: list[SubmissionResult], out: Path, rule: LateRule | None = None) -> Written:
    """OUT/<student>/results.json for every result, with `rule`'s late penalty; each student on their own.

    A student whose id cannot be a folder name (a result stored before ids were
    settled at discovery, grading.ids) or whose file cannot be written is
    listed in `refused`; everyone else is written.
    """
    written = Written()
    for result in results:
        try:
            written.files.append(_write_one(result, Path(out), rule))
        except (ExportError, ValueError) as error:
            written.refused.append(f"{safe(result.student, 200)}: {error}")
        except OSError as error:  # the folder's to fix, not the student's: said once, not for every student
            raise ExportError(f"cannot write {safe(error.filename or out, 300)} ({error.strerror}); export to a "
                              "folder this user can write, on a disk with free space (--out), then again") from None
    written.removed = _remove_stale(Path(out), {result.student for result in results})
    return written


def _remove_stale(out: Path, students: set[str]) -> list[str]:
    """Remove OUT/<student>/results.json of the students the last export listed (MANIFEST) and who have no result
    now (every hand-in retracted, say), then list this export's; those removed. Nothing unlisted is touched."""
    manifest = out / MANIFEST
    try:
        earlier = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = []
    removed = []
    for student in sorted(earlier) if isinstance(earlier, list) and all(isinstance(s, str) for s in earlier) else []:
        if student in students or id_problem(student) or student in (".", ".."):
            continue  # written again, or not a folder name an export writes: never a path out of OUT
        try:
            (out / student / "results.json").unlink()
            removed.append(student)
            (out / student).rmdir()  # only when the export's file was all it held
        except (OSError, ValueError):
            pass
    if out.is_dir():
        write_whole(manifest, json.dumps(sorted(students)))
    return removed


def _write_one(result: SubmissionResult, out: Path, rule: LateRule | None) -> Path:
    if id_problem(result.student):
        raise ExportError(f"this id cannot be a folder name ({id_problem(result.student)}); regrade the hand-in "
                          "under a plain id, then export again")
    path = out / result.student / "results.json"
    write_json(path, gradescope_results(result, assess_result(rule, result)))
    return path


def write_json(path: Path, data: dict) -> None:
    """Write atomically, so Gradescope or a TA never reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(data, indent=2) + "\n")


def not_graded_results(why: str) -> dict:
    """The student's results.json when the autograder refused to run at all: nothing graded, and why."""
    return {
        "score": 0, "output_format": TEXT, "visibility": "visible", "stdout_visibility": "hidden",
        "output": f"The autograder did not run: {why}. Your instructor has to fix the autograder; your "
                  "submission will be graded then."}
