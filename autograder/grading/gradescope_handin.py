"""What Gradescope hands the autograder: who handed the submission in, and when (its file is picked by
grading.gradescope_export, as in the class download).

https://gradescope-autograders.readthedocs.io/en/latest/specs/ . Gradescope
unpacks the submission into ROOT/submission and describes it in
ROOT/submission_metadata.json: `users` (the submitters, with their emails)
and `created_at` (when it was received). The submitters' emails are the
student id, which seeds the randomized inputs, so a metadata file that
names no submitter is an error for that submission (`MetadataError`), never
a shared id that would give every student the same inputs. Only a run with
no metadata file at all (a local test of the bundle) grades as
LOCAL_STUDENT.
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

from autograder.grading.found import LayoutError
from autograder.grading.gradescope_export import SUBMITTER_IDS, submitters_id
from autograder.grading.late import FILE_TIME, GRADESCOPE_METADATA, TimeError, file_time, iso, parse_timestamp
from autograder.text import safe

METADATA_FILE = "submission_metadata.json"
LOCAL_STUDENT = "gradescope"  # the id of a run without metadata: a local test of the bundle
_EXPECTED = '{"created_at": "2026-11-20T23:59:00-05:00", "users": [{"email": "student@example.edu"}]}'


class MetadataError(LayoutError):
    """Gradescope's submission_metadata.json is there but does not say who handed the submission in, or when."""


def gradescope_student(metadata_file: Path) -> str:
    """The student id that seeds the randomized inputs: the submitters' emails (else SIDs, else Gradescope ids).

    Sorted and joined for a group, so every resubmission of the group gets the
    same inputs; LOCAL_STUDENT when there is no metadata file. Raises
    MetadataError when the file names no submitter.
    """
    metadata = _metadata(metadata_file)
    if metadata is None:
        return LOCAL_STUDENT
    users = metadata.get("users")
    if not isinstance(users, list) or not users:
        raise _malformed(metadata_file, "has no list of submitters (`users`)")
    try:
        return submitters_id(users, SUBMITTER_IDS)
    except ValueError as error:
        raise _malformed(metadata_file, str(error).removeprefix("it ")) from None


def gradescope_time(metadata_file: Path, picked: Path | None) -> tuple[str, str]:
    """(time, source): when Gradescope received the submission (`created_at`), else the file's time.

    The file's time (flagged unreliable) stands in only when there is no
    metadata file; a metadata file without a readable `created_at` raises
    MetadataError, since the late rule would judge the wrong time.
    """
    metadata = _metadata(metadata_file)
    if metadata is None:
        return (file_time(picked), FILE_TIME) if picked is not None else ("", "")
    created = metadata.get("created_at")
    if not isinstance(created, str):
        raise _malformed(metadata_file, "has no time of submission (`created_at`)")
    try:
        return iso(parse_timestamp(created)), GRADESCOPE_METADATA
    except (TimeError, ValueError, OverflowError) as error:
        raise _malformed(metadata_file, f"has a `created_at` that is not a time ({safe(error, 300)})") from None


def gradescope_extension(metadata_file: Path) -> datetime.datetime | None:
    """The due time Gradescope's own extension gives the submitters, or None: a submitter's `assignment.due_date`
    later than the assignment's (for a group, the latest). A TA grants it in Gradescope's web page, where
    course.yaml's `extensions` cannot see it. Times that do not read are no extension."""
    metadata = _metadata(metadata_file) or {}
    assignment, users = metadata.get("assignment"), metadata.get("users")
    due = _due_date(assignment)
    own = [_due_date(user.get("assignment")) for user in users if isinstance(user, dict)] \
        if isinstance(users, list) else []
    later = [moment for moment in own if moment is not None and (due is None or moment > due)]
    return max(later) if later and due is not None else None


def gradescope_due(metadata_file: Path) -> datetime.datetime | None:
    """The assignment's due time as Gradescope's metadata gives it; None where it gives none that reads."""
    return _due_date((_metadata(metadata_file) or {}).get("assignment"))


def _due_date(assignment) -> datetime.datetime | None:
    try:
        return parse_timestamp(assignment["due_date"]) if isinstance(assignment, dict) else None
    except (KeyError, TypeError, TimeError, ValueError, OverflowError, AttributeError):
        return None


def _metadata(path: Path) -> dict | None:
    """The metadata file's object, or None when there is no file; raises MetadataError for anything else."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise _malformed(path, f"cannot be read ({safe(error, 300)})") from None
    try:
        metadata = json.loads(text)
    except ValueError as error:
        raise _malformed(path, f"is not JSON ({error})") from None
    if not isinstance(metadata, dict):
        raise _malformed(path, f"holds a {type(metadata).__name__}, not a JSON object")
    return metadata


def _malformed(path: Path, what: str) -> MetadataError:
    return MetadataError(
        f"{path} {what}, so this submission was not graded: each student's inputs are drawn from their id, and no "
        "student is graded under a made-up one. Gradescope writes this file; on Gradescope, run the autograder "
        "again (Regrade Submission), and if the file stays like this, Gradescope changed its format: report it "
        f"with this message. Outside Gradescope, write it as Gradescope does ({_EXPECTED}), or remove it to grade "
        f"as the test student {LOCAL_STUDENT!r}")
