"""Gradescope's submission folders: the one `gradescope-run` grades, and the class download "Export Submissions".

The download (an assignment's Review Grades page, Export Submissions) is a zip of one folder that
holds `submission_metadata.yml` and one `submission_<number>/` folder per active submission, with
the files as the student uploaded them. The metadata gives each folder its submitters (`:name:`,
`:sid:`, `:email:`) and `:created_at:`, when Gradescope received it, with its UTC offset:

    submission_123456:
      :submitters:
      - :name: Ann Lee
        :sid: '4101'
        :email: ann@uni.edu
      :created_at: 2026-11-20 23:41:07.123456000 -05:00

A submission's student id is the one `gradescope-run` gives it on Gradescope (`submitters_id`): the
submitters' emails, sorted and joined with "," for a group. So a class graded from its download gets
the inputs each submission got on Gradescope.
"""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from autograder.grading.handin import read_small
from autograder.grading.handin_choice import choose
from autograder.grading.late import TimeError, iso, parse_timestamp
from autograder.grading.submission import SUFFIXES
from autograder.text import safe

EXPORT_METADATA = "submission_metadata.yml"
MAX_METADATA_BYTES = 32 << 20  # a class of thousands, each with a few submitters and its scores


class ExportError(Exception):
    """The download's submission_metadata.yml cannot be read; the message says what to do."""


@dataclass(frozen=True)
class Exported:
    """What the metadata says of one submission folder: its student id and time, or why there is none."""

    student: str
    submitted_at: str  # ISO 8601 in UTC, "" if the metadata gives no time that reads
    problem: str = ""


@dataclass(frozen=True)
class Picked:
    """The file graded in a Gradescope submission folder, or why there is none."""

    path: Path | None
    note: str = ""
    problem: str = ""


def is_export(folder: Path) -> bool:
    """Whether `folder` is an extracted Export Submissions download (it holds submission_metadata.yml)."""
    return os.path.lexists(Path(folder) / EXPORT_METADATA)


def read_export(folder: Path) -> dict[str, Exported]:
    """Submission folder name -> what the download's metadata says of it. ExportError if it cannot be read."""
    path = Path(folder) / EXPORT_METADATA
    data = read_small(path, MAX_METADATA_BYTES + 1)  # by the hand-in rule: a link is refused, not followed
    again = f"download the submissions again from Gradescope (Review Grades, Export Submissions) and grade {folder}"
    if data is None or len(data) > MAX_METADATA_BYTES:
        raise ExportError(f"{safe(path, 300)} is not a regular file of at most {MAX_METADATA_BYTES >> 20} MiB; {again}")
    try:
        metadata = yaml.load(data, Loader=_MetadataLoader)  # noqa: S506 - a safe loader that keeps unknown tags inert
    except yaml.YAMLError as error:
        raise ExportError(f"{safe(path, 300)} is not YAML ({_yaml_problem(error)}); {again}") from None
    if not isinstance(metadata, dict):
        raise ExportError(f"{safe(path, 300)} does not map submission folders to their submitters; {again}")
    return {str(name): _exported(str(name), _plain_keys(entry)) for name, entry in metadata.items()}


def submitters_id(users: list, key_names: tuple[str, ...]) -> str:
    """The student id of one submission: its submitters' first id of `key_names` (email first), sorted and joined.

    users: the submitters as Gradescope lists them (dicts). ValueError names the submitter without an id.
    """
    if not isinstance(users, list) or not users:
        raise ValueError("it names no submitter")
    ids = []
    for number, user in enumerate(users, 1):
        found = next((user[key] for key in key_names if isinstance(user, dict) and user.get(key)), None)
        if not isinstance(found, str | int) or isinstance(found, bool) or not str(found).strip():
            raise ValueError(f"it names no {' or '.join(key_names)} for submitter {number} ({safe(user, 200)})")
        ids.append(str(found).strip())
    return ",".join(sorted(ids))


def pick_submission_file(folder: Path, module: str) -> Picked:
    """The student's file in a Gradescope submission folder, chosen as `grade` chooses (handin_choice.choose).

    Nothing is followed: a repository submitted from GitHub could link the
    file to the reference under /autograder/source. A link is graded only when
    no regular file is there, and then refused with a message (grading.handin).
    """
    folder = Path(folder)
    candidates = _candidate_files(folder)
    if not candidates:
        return Picked(None, problem=f"no {module}.py or {module}.ipynb was found in your submission; "
                                    f"upload that file (with that name) and submit again")
    return Picked(*choose(candidates, module, folder))


def _candidate_files(folder: Path) -> list[Path]:
    """Every entry named like a hand-in under `folder`, whatever it is; links to folders are not entered.

    A link, a FIFO or a folder named like a hand-in is a candidate too: `choose`
    prefers regular files, and reading one that is not (grading.handin) gives
    the student a message instead of a silent "no file found".
    """
    if not folder.is_dir():
        return []
    found = []
    for directory, subdirs, files in os.walk(folder, followlinks=False):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in ("__pycache__", "__MACOSX"))
        for name in sorted(files + [d for d in subdirs if Path(d).suffix in SUFFIXES]):
            if Path(name).suffix in SUFFIXES and not name.startswith("."):
                found.append(Path(directory) / name)
    return found


class _MetadataLoader(yaml.SafeLoader):
    """YAML's safe loader, reading a tag it does not know (Ruby's `!ruby/object`) as the plain value it tags."""


def _untagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_MetadataLoader.add_multi_constructor("!", _untagged)


def _yaml_problem(error: yaml.YAMLError) -> str:
    """What YAML found wrong, on one line: its problem and the line it is on."""
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark is not None else ""
    return safe(getattr(error, "problem", None) or type(error).__name__, 200) + where


def _plain_keys(entry) -> dict:
    """A metadata mapping with Ruby's symbol marks taken off its keys (`:submitters` -> `submitters`)."""
    if not isinstance(entry, dict):
        return {}
    return {str(key).lstrip(":"): (_plain_list(value) if isinstance(value, list) else value)
            for key, value in entry.items()}


def _plain_list(values: list) -> list:
    return [_plain_keys(value) if isinstance(value, dict) else value for value in values]


def _exported(name: str, entry: dict) -> Exported:
    try:
        student = submitters_id(entry.get("submitters"), ("email", "sid"))
    except ValueError as error:
        return Exported("", "", f"{EXPORT_METADATA} does not say whose {safe(name, 80)}/ is: {error}. Name its "
                                "submitters in Gradescope (Manage Submissions), download the submissions again and "
                                "grade again")
    return Exported(student, _created_at(entry.get("created_at")))


def _created_at(value) -> str:
    """`:created_at:` in UTC ("" if it is not a time): YAML reads Ruby's form as a datetime, or leaves it text."""
    try:
        if isinstance(value, datetime.datetime):
            return iso(value if value.tzinfo else value.replace(tzinfo=datetime.UTC))
        return iso(parse_timestamp(value)) if isinstance(value, str) else ""
    except (TimeError, ValueError, OverflowError):
        return ""
