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
import re
import reprlib
from dataclasses import dataclass
from pathlib import Path

import yaml

from autograder.grading.class_zip import MAX_DEPTH
from autograder.grading.handin import read_small
from autograder.grading.handin_choice import choose
from autograder.grading.late import TimeError, iso, parse_timestamp
from autograder.grading.submission import SUFFIXES
from autograder.text import safe

EXPORT_METADATA = "submission_metadata.yml"
# What names a submitter, in this order, in the download and in `gradescope-run` alike, so that both give one
# submission one id: the email, else the student id (SID) the course gave, else Gradescope's own user id.
SUBMITTER_IDS = ("email", "sid", "id")
SUBMISSION_FOLDER = re.compile(r"submission_\d+")  # the download's name for each submission's folder
MAX_METADATA_BYTES = 32 << 20  # a class of thousands, each with a few submitters and its scores


class ExportError(Exception):
    """The download's submission_metadata.yml cannot be read; the message says what to do."""


@dataclass(frozen=True)
class Exported:
    """What the metadata says of one submission folder: its student id and time, or why there is none."""

    student: str  # "" where the metadata names no submitter
    submitted_at: str  # ISO 8601 in UTC
    problem: str = ""  # why the submission cannot be graded as the metadata stands: no submitter, or no time


@dataclass(frozen=True)
class Picked:
    """The file graded in a Gradescope submission folder, or why there is none."""

    path: Path | None
    note: str = ""
    problem: str = ""


def is_export(folder: Path) -> bool:
    """Whether `folder` is an extracted Export Submissions download (it holds submission_metadata.yml)."""
    return os.path.lexists(Path(folder) / EXPORT_METADATA)


def gradescope_export_of(path: Path) -> Path | None:
    """The download `path` (absolute) is part of: a submission folder or what is in one; None elsewhere. The
    outermost such folder, named so below it (`submission_123456`): a submission_metadata.yml a student uploaded
    in their submission names no one, nor does one left higher up in the TA's folders."""
    for folder in reversed(path.parents):
        if is_export(folder) and SUBMISSION_FOLDER.fullmatch(path.relative_to(folder).parts[0]):
            return folder
    return None


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
    except RecursionError:
        raise ExportError(f"{safe(path, 300)} nests its values too deeply to be Gradescope's; {again}") from None
    if not isinstance(metadata, dict):
        raise ExportError(f"{safe(path, 300)} does not map submission folders to their submitters; {again}")
    return {name: _exported(name, _plain_keys(entry)) for name, entry in metadata.items() if isinstance(name, str)}


def submitters_id(users: list, key_names: tuple[str, ...]) -> str:
    """The student id of one submission: its submitters' first id of `key_names` (email first), sorted and joined.

    users: the submitters as Gradescope lists them (dicts). ValueError names the submitter without an id.
    """
    if not isinstance(users, list) or not users:
        raise ValueError("it names no submitter")
    ids = []
    for number, user in enumerate(users, 1):
        given = [user.get(key) for key in key_names] if isinstance(user, dict) else []
        found = next((value for value in given if isinstance(value, str | int) and not isinstance(value, bool)
                      and str(value).strip()), None)
        if found is None:  # reprlib: a value YAML's aliases make huge is not written out whole
            raise ValueError(f"it names no {' or '.join(key_names)} for submitter {number} "
                             f"({safe(reprlib.repr(user), 200)})")
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
    chosen = choose(candidates, module, folder)
    return Picked(chosen.path, chosen.note)


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
        # Not below MAX_DEPTH folders: deeper, os.walk's own recursion would fail, and with it the class's grading.
        deep = len(Path(directory).relative_to(folder).parts) >= MAX_DEPTH
        subdirs[:] = [] if deep else sorted(d for d in subdirs if not d.startswith(".")
                                            and d not in ("__pycache__", "__MACOSX"))
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
    """A metadata mapping with Ruby's symbol marks taken off its own keys (`:submitters` -> `submitters`); its
    values as they are (YAML's aliases can make a small file's values huge: nothing is copied)."""
    if not isinstance(entry, dict):
        return {}
    return {key.lstrip(":"): value for key, value in entry.items() if isinstance(key, str)}


def _exported(name: str, entry: dict) -> Exported:
    submitters = entry.get("submitters")
    if isinstance(submitters, list):
        submitters = [_plain_keys(user) if isinstance(user, dict) else user for user in submitters]
    try:
        student = submitters_id(submitters, SUBMITTER_IDS)
    except ValueError as error:
        return Exported("", "", f"{EXPORT_METADATA} does not say whose {safe(name, 80)}/ is: {error}. Name its "
                                "submitters in Gradescope (Manage Submissions), download the submissions again and "
                                "grade again")
    created = _created_at(entry.get("created_at"))
    if not created:  # as gradescope-run refuses it: the late rule would judge the extraction's time instead
        return Exported(student, "", f"{EXPORT_METADATA} gives {safe(name, 80)}/ no time it was handed in (its "
                                     "`:created_at:` is missing or not a time); download the submissions again from "
                                     "Gradescope and grade again")
    return Exported(student, created)


def _created_at(value) -> str:
    """`:created_at:` in UTC ("" if it is not a time): YAML reads Ruby's form as a datetime, or leaves it text."""
    try:
        if isinstance(value, datetime.datetime):
            return iso(value if value.tzinfo else value.replace(tzinfo=datetime.UTC))
        return iso(parse_timestamp(value)) if isinstance(value, str) else ""
    except (TimeError, ValueError, OverflowError):
        return ""
