"""Finding a class's submissions: files, a flat folder, nbgrader's submitted/ tree, or a zip.

Layouts understood, for an assignment whose module (course.yaml) is `hw`:
- files given directly: the student id is the file's stem, for one named as the module (`ann/hw.py`) its folder's;
- a flat folder of `<student>.py` / `<student>.ipynb`, or `<student>/` folders holding one;
- an LMS's download of every hand-in (Canvas, Moodle, Blackboard), flat, its students read from the
  names the LMS gave the files (grading.lms_downloads);
- an nbgrader course (or its `submitted/` folder): `submitted/<student>/<assignment>/hw.ipynb`;
- Gradescope's Export Submissions download: `submission_<n>/` folders named by its submission_metadata.yml
  (grading.gradescope_export);
- a .zip of any of these, extracted safely to a temporary folder, the class's own folder included
  (`class/ann.py`: the students are ann and the rest, not "class").

Each submission carries when it was handed in (grading.late): nbgrader's
timestamp.txt in its submitted/ folder, Gradescope's metadata, else the file's modification time
(for a zip member, the time the zip records), flagged as unreliable.

Every entry named like a hand-in (`.py`, `.ipynb`) is found whatever it is —
a link, a FIFO, a folder — and judged when it is read (grading.handin), so it
gets a message in that student's feedback instead of being skipped without a
word. A student's folder that is a link is found too, and refused the same way.
Ids are settled once, for every output (grading.found).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
from pathlib import Path

from autograder.grading.class_zip import ZipRefused, extract
from autograder.grading.found import (
    IGNORED,
    Found,
    LayoutError,
    link_refused,
    linked,
    misnamed,
    named_as_module,
    nothing_to_grade,
    settle_ids,
    timed,
    unlisted,
    unreadable_refused,
)
from autograder.grading.gradescope_export import (
    ExportError,
    gradescope_export_of,
    is_export,
    pick_submission_file,
    read_export,
)
from autograder.grading.handin import read_bytes
from autograder.grading.handin_choice import (
    a_draft_of,
    choose,
    latest_attempt,
    latest_uploads,
    named_after,
    two_formats_joined,
)
from autograder.grading.ids import canonical, id_problem
from autograder.grading.late import (
    GRADESCOPE_METADATA,
    LMS_LOCAL_TIME,
    attempt_time,
    submission_time,
)
from autograder.grading.lms_downloads import is_receipt, moodle_other_parts, moodle_participant, read_download
from autograder.grading.submission import SUFFIXES
from autograder.text import safe

NOT_HANDINS = {"Thumbs.db", "desktop.ini"}  # files an operating system leaves in a folder, never a student's
MAX_LINE = 400  # bytes of a Blackboard receipt's first line read: a name and a username
_BROWSER_COPY = re.compile(r" \(\d+\)$")
STUDENT_FILES = 4  # hand-ins a student's own folder holds at most (the work, a copy, scratch); a class has more


def find_submissions(paths: list[Path], assignment: str, module: str, workdir: Path,
                     skipped: list[Path] | None = None) -> list[Found]:
    """Every submission under `paths`, one per student (sorted by student).

    workdir: where zips are extracted; the caller owns and removes it. A
    submission a zip could not give safely, or whose id cannot be one
    (grading.ids), is found with its `problem`; so are both of two that
    give one id, and a file reached through a link. The last three are the
    class folder's to fix: `stored` is False, and `grade` keeps no result.
    skipped: gets the folders of a flat layout that hold no .py or .ipynb, and its files that are not
    one (a PDF, a zip, `hw.py.txt`). They are not graded (a flat folder may hold other things than
    students'), but the caller names them, so that a student who handed in the wrong file is not
    missed without a word.
    """
    found: list[Found] = []
    refused: dict[Path, str] = {}
    for path in paths:
        found += _find(Path(path), assignment, module, workdir, refused, skipped if skipped is not None else [])
    # One file named twice (grade hw a.py a.py) is one hand-in, not two that collide.
    found = list({(os.path.abspath(item.path), item.student): item for item in found}.values())
    found = [dataclasses.replace(item, problem=refused.get(item.path, item.problem)) for item in found]
    found = [unreadable_refused(link_refused(item)) for item in settle_ids(found)]
    return sorted((timed(item) for item in found), key=lambda item: canonical(item.student))


def _find(path: Path, assignment: str, module: str, workdir: Path, refused: dict, skipped: list) -> list[Found]:
    if not os.path.lexists(path):
        raise LayoutError(f"{safe(path)} does not exist; pass student files, a folder of them, an nbgrader "
                          "course folder or a zip")
    # One student's part of a class layout is graded as the class's grading finds them (id, time, file), and
    # nothing inside it is read as a layout of its own: a student's upload may hold a submitted/ tree or metadata.
    absolute = Path(os.path.abspath(path))
    export = gradescope_export_of(absolute)
    if export is not None:
        return _one_of(path, _gradescope(export, module, only=absolute.relative_to(export).parts[0]))
    inside = _in_nbgrader_tree(path, assignment)
    if inside is not None:
        return _one_of(path, _nbgrader(inside[0], assignment, module, only=inside[1]))
    if _student_folder(absolute, module):
        return [dataclasses.replace(_student_in(absolute, module), root=absolute.parent)]
    if path.is_file() and path.suffix == ".zip":
        try:
            folder = extract(path, workdir, refused)
        except ZipRefused as error:
            raise LayoutError(str(error)) from None
        try:
            return _find(_zipped_class(folder, module), assignment, module, workdir, refused, skipped)
        except LayoutError as error:  # named as the TA knows it: the zip, not a temporary folder already gone
            inner = sorted(p.name for p in folder.rglob("*.zip"))[:3]
            hint = f"; it holds {', '.join(map(safe, inner))}: pass that zip instead" if inner else ""
            raise LayoutError(str(error).replace(str(folder), f"{safe(path)} (once extracted)") + hint) from None
    if not path.is_dir() or path.suffix in SUFFIXES:
        if path.suffix not in SUFFIXES:
            raise LayoutError(f"{path} is not a .py, .ipynb or .zip file")
        download = read_download([path.name])  # one file of an LMS's download is its student's
        if download:
            return [Found(download[path.name].student, path, lms=download[path.name].lms)]
        if named_after(path.stem, module):  # `alice/hw.py`: alice's, not a student "hw" every such file joins
            return _one_of(path, [_of_its_folder(path, assignment, module)])
        return [Found(path.stem, path)]  # whatever it is, reading it decides (grading.handin)
    submitted = path if path.name == "submitted" else path / "submitted"
    if submitted.is_dir():
        return _nbgrader(submitted, assignment, module)
    if (path / "course.yaml").is_file() and (path / "solutions").is_dir():  # its folders had been graded as students
        raise LayoutError(f"{safe(path)} is the course's folder (it holds course.yaml) and has no submitted/ folder "
                          "of hand-ins yet: collect them first (`nbgrader collect`, or copy each student's into "
                          f"submitted/STUDENT/{safe(assignment)}/), or pass the folder that holds the class's files")
    if is_export(path):
        return _gradescope(path, module)
    empty: list[Path] = []
    flat = [dataclasses.replace(item, root=path) for item in _flat(path, module, empty)]
    others = moodle_other_parts([p.name for p in path.iterdir() if p.is_dir()]) if empty else set()
    skipped += [p for p in empty if p.name not in others] + _other_files(path) if flat else []
    if not flat:
        inner = [p for p in path.iterdir() if p.is_dir() and p.name not in IGNORED and (p / "submitted").is_dir()]
        if len(inner) == 1:  # a zip of a course folder extracts to one top-level folder
            return _nbgrader(inner[0] / "submitted", assignment, module)
        exports = [p for p in _folders(path) if _shown_entry(p) and is_export(p)]
        if len(exports) == 1:  # the folder a Gradescope download was extracted into
            return _gradescope(exports[0], module)
        raise LayoutError(f"{path} holds no .py or .ipynb submissions, no <student>/ folders with one, and "
                          "no nbgrader submitted/ tree")
    return flat


def _of_its_folder(path: Path, assignment: str, module: str) -> Found:
    """A file named as the assignment's module, passed alone: its student's, as grading their folder finds it, where
    its folder is one student's; else refused, and nothing stored, for no student's id is in its path."""
    folder = Path(os.path.abspath(path)).parent
    if named_after(folder.name, assignment) or named_after(folder.name, module):
        why = f"its folder {safe(folder.name, 60)}/ is named after the assignment"
    elif id_problem(folder.name):
        why = f"its folder's name {safe(folder.name, 60)!r} cannot be a student id"
    elif (folder / "course.yaml").is_file():
        why = f"its folder {safe(folder.name, 60)}/ is the course's (it holds course.yaml)"
    elif not _student_folder(folder, module):
        others = ", ".join(safe(p.name, 60) for p in _visible(folder) if p.suffix in SUFFIXES and p.name != path.name)
        why = f"its folder {safe(folder.name, 60)}/ holds other .py or .ipynb files ({others[:200]}), as a class's does"
    else:
        return dataclasses.replace(_student_in(folder, module), root=folder.parent)
    return named_as_module(path, module, why)


def _zipped_class(root: Path, module: str) -> Path:
    """Where the class begins in an extracted zip: its one top-level folder, when a flat class was zipped with
    its folder (`zip -r class.zip class/`: `class/ann.py`, `class/ben/hw.ipynb`); else the top.

    A lone folder that holds the module's own file (`ann/hw.ipynb`) is one student's, as in a flat
    folder; an nbgrader course zipped with its folder is found by its submitted/ tree (`_find`).
    """
    entries = _visible(root)
    if len(entries) != 1 or os.path.islink(entries[0]) or not entries[0].is_dir():
        return root
    folder = entries[0]
    handins = [p for p in _visible(folder) if p.suffix in SUFFIXES]
    if folder.name == "submitted" or (folder / "submitted").is_dir() or any(p.stem == module for p in handins):
        return root
    students = [p for p in _folders(folder) if _shown_entry(p) and p.suffix not in SUFFIXES]
    return folder if students or handins else root


def _in_nbgrader_tree(path: Path, assignment: str) -> tuple[Path, str] | None:
    """(the submitted/ folder, the student) where `path` is a student's folder of nbgrader's submitted/ tree, their
    assignment folder in it, or a file there; None elsewhere. Graded as a flat folder or a file, the student would
    be named after the assignment's folder or the file (`hw3`, `hw`), at the file's time."""
    path = Path(os.path.abspath(path))
    if path.is_dir() and path.parent.name == "submitted" and (path / assignment).is_dir():
        return path.parent, path.name
    folder = path if path.is_dir() else path.parent if path.suffix in SUFFIXES else None  # not its timestamp.txt
    if folder is not None and folder.name == assignment and folder.parent.parent.name == "submitted":
        return folder.parent.parent, folder.parent.name
    return None


def _one_of(path: Path, found: list[Found]) -> list[Found]:
    """The hand-in grading the class finds for the student whose part of the class `path` is. A file named that is
    not the one the class's grading takes is refused, and nothing stored: stored as the student's hand-in at the
    same time, it would replace the one that counts, and a TA who names it may only mean to look at it."""
    if not found or not path.is_file() or os.path.abspath(found[0].path) == os.path.abspath(path):
        return found
    graded = found[0]
    return [dataclasses.replace(graded, path=path, stored=False, problem=(
        f"{safe(path.name, 100)} is not the file grading the class takes from {safe(graded.student, 100)}'s hand-in "
        f"({safe(graded.path.name, 100)}); stored, it would replace that one, handed in at the same time. Grade "
        f"their folder to grade their hand-in; to look at {safe(path.name, 100)} alone, grade a copy of it kept "
        "elsewhere, with a --db of its own"))]


def _nbgrader(submitted: Path, assignment: str, module: str, only: str | None = None) -> list[Found]:
    """Every student's hand-in in nbgrader's submitted/ tree (only: that student's alone)."""
    found = []
    for student_dir in sorted(p for p in _folders(submitted) if _shown_entry(p) and only in (None, p.name)):
        folder = student_dir / assignment
        if os.path.islink(student_dir) or os.path.islink(folder):
            found.append(linked(folder, f"{module}.ipynb", student_dir.name, submitted))
        elif not os.access(student_dir, os.R_OK | os.X_OK):  # else is_dir() below is False: left out unsaid
            found.append(unlisted(student_dir, module, student_dir.name, PermissionError(13, "Permission denied")))
        elif folder.is_dir():
            picked = _pick(folder, module, student_dir.name) or \
                nothing_to_grade(folder, _visible(folder), module, student_dir.name)
            at, source, note = submission_time(folder, picked.path)
            note = "; ".join(n for n in (picked.note, note) if n)
            found.append(dataclasses.replace(picked, note=note, submitted_at=at, submitted_at_source=source,
                                             root=submitted))
        else:  # no hand-in for this assignment, unless one is named as it in another case
            found += [misnamed(near, assignment, module, student_dir.name) for near in _folders(student_dir)
                      if near.name.casefold() == assignment.casefold()][:1]
    return found


def _gradescope(folder: Path, module: str, only: str | None = None) -> list[Found]:
    """The submissions of a Gradescope download, each under the id and time its metadata gives; a folder the
    metadata does not name keeps its own name, with its file's time. only: that submission folder's alone."""
    try:
        exported = read_export(folder)
    except ExportError as error:
        raise LayoutError(str(error)) from None
    found = []
    for submission in (p for p in _folders(folder) if _shown_entry(p) and only in (None, p.name)):
        entry = exported.get(submission.name)
        student = entry.student if entry and entry.student else submission.name
        if os.path.islink(submission):
            found.append(linked(submission, f"{module}.ipynb", student, folder))
            continue
        picked = pick_submission_file(submission, module)
        item = Found(student, picked.path, picked.note, root=folder) if picked.path \
            else nothing_to_grade(submission, _visible(submission), module, student)
        if entry is None:
            item = dataclasses.replace(item, note="; ".join(n for n in (item.note, (
                f"{submission.name}/ is not in the download's submission_metadata.yml: graded under its folder's "
                "name, at its file's time")) if n))
        elif entry.problem:
            item = dataclasses.replace(item, problem=entry.problem, stored=False)
        elif entry.submitted_at:
            item = dataclasses.replace(item, submitted_at=entry.submitted_at, submitted_at_source=GRADESCOPE_METADATA)
        found.append(dataclasses.replace(item, lms="Gradescope"))
    return found


def _flat(folder: Path, module: str, empty: list[Path]) -> list[Found]:
    """The hand-ins of a flat folder; `empty` gets its folders that hold none, and its files named as the
    assignment's own among students' files."""
    found = []
    entries = _visible(folder)
    handins = [p for p in entries if p.suffix in SUFFIXES]  # a link, a FIFO, a folder named x.py too
    receipts = {p.name: functools.partial(_first_line, p, folder) for p in entries if is_receipt(p.name)}
    download = read_download([p.name for p in handins], receipts)  # {}: the TA named the files
    # A file named as the assignment's own (hw.py) among students' files names no student: the released stub or a
    # TA's copy, which was graded as a student "hw" with 0 (grade.not_graded says so, and how to keep it).
    stray = [p for p in handins if p.name not in download and named_after(p.stem, module)]
    folders = [p for p in _folders(folder) if p.suffix not in SUFFIXES and _shown_entry(p)]  # students' folders
    if len(stray) < len(handins) or (stray and folders):
        empty += stray
        handins = [p for p in handins if p not in stray]
    students: dict[str, list[Path]] = {}
    stems = {p.stem for p in handins}
    for path in handins:
        # A browser's second download of carl.py is `carl (1).py`: carl's, not a student "carl (1)".
        base = _BROWSER_COPY.sub("", path.stem)
        student = path.stem if base == path.stem or base not in stems else base
        students.setdefault(download[path.name].student if path.name in download else student, []).append(path)
    for student, paths in two_formats_joined(students).items():
        paths, attempt, earlier = latest_attempt(paths, download)
        paths, upload, replaced = latest_uploads(paths, download)
        attempt = "; ".join(n for n in (attempt, upload) if n)
        chosen = choose(paths, module, folder, {p: download[p.name] for p in paths if p.name in download})
        path = chosen.path
        at = attempt_time(download[path.name].attempt) if path.name in download else ""
        # An earlier upload or attempt comes last: graded only where every later file is retracted (grading.retract).
        others = (*chosen.others, *replaced, *earlier)
        found.append(Found(student, path, "; ".join(n for n in (attempt, chosen.note) if n), submitted_at=at,
                           submitted_at_source=LMS_LOCAL_TIME if at else "", others=others, tied=chosen.tied,
                           lms=download[path.name].lms if path.name in download else "",
                           stated=tuple((o, attempt_time(download[o.name].attempt)) for o in others
                                        if at and o.name in download)))
    for directory in folders:
        picked = _student_in(directory, module)
        if picked:
            found.append(picked)
        elif canonical(directory.name) not in {canonical(item.student) for item in found}:
            empty.append(directory)  # `dan/` beside `dan.py` is no missing hand-in
    return found


def _student_in(directory: Path, module: str) -> Found | None:
    """The hand-in of a flat class's student folder, named for the folder; None where it holds none."""
    if os.path.islink(directory):
        return linked(directory, f"{module}.py", directory.name, directory.parent)
    picked = _pick(directory, module, directory.name)
    if picked:
        return dataclasses.replace(picked, lms="Moodle" if moodle_participant(directory.name) else "")
    if moodle_participant(directory.name):  # Moodle made this folder for a hand-in: the student is listed
        return dataclasses.replace(nothing_to_grade(directory, _visible(directory), module, directory.name),
                                   lms="Moodle")
    return None


def _student_folder(path: Path, module: str) -> bool:
    """Whether `path` is a flat class's student folder passed alone (`class/ann`, holding hw.ipynb, perhaps beside
    an Untitled.ipynb): graded as the class's grading finds it, named for the folder, and nothing in it (a planted
    submitted/ tree) read as a layout. It holds the module's own file and a few others at most: a class folder
    with the released notebook left in it holds a hand-in for each student, and stays a class, and so does a
    small one (`bob.py` beside a stray hw.py): a student's other files are drafts of the work (`a_draft_of`)."""
    if not path.is_dir() or os.path.islink(path):
        return False
    handins = [p for p in _visible(path) if p.suffix in SUFFIXES]
    # Every other file a draft of the work: `bob.py` beside a stray hw.py (the stub a TA left in) is a class of one,
    # and so is `ann/hw.py` beside it (a class of folders).
    return (any(named_after(p.stem, module) for p in handins) and len(handins) <= STUDENT_FILES
            and all(a_draft_of(p.stem, module) for p in handins)
            and not any(named_after(q.stem, module) and q.suffix in SUFFIXES
                        for d in _folders(path) if not os.path.islink(d) for q in _visible(d)))


def one_students_part(path: Path, assignment: str, module: str) -> bool:
    """Whether `path` is not a class folder: a file (a zip is read as a class, but may be anyone's), or one
    student's folder of a class layout. Grading it says nothing of the other students stored from the class."""
    absolute = Path(os.path.abspath(path))
    return (not absolute.is_dir() or gradescope_export_of(absolute) is not None
            or _in_nbgrader_tree(absolute, assignment) is not None or _student_folder(absolute, module))


def _first_line(path: Path, root: Path) -> str:
    """A Blackboard receipt's first line (`Name: Ann Lee (s_1234)`), read by the hand-in rule; "" if refused.
    The rest holds the student's own comments, which name nothing."""
    return read_bytes(path, root).data.split(b"\n", 1)[0][:MAX_LINE].decode("utf-8", "replace")


def _other_files(folder: Path) -> list[Path]:
    """The files of a flat folder that are not hand-ins (`hw.pdf`, `hw.zip`, `hw.py.txt`, `hw.PY`), and hidden ones
    that would be (`.ann.py`): a file browser hides them, so a TA would not know they were left out."""
    hidden = sorted(p for p in folder.iterdir() if p.name.startswith(".") and p.suffix in SUFFIXES and not p.is_dir())
    return hidden + [p for p in _visible(folder) if p.suffix not in SUFFIXES and p.name not in NOT_HANDINS
                     and not p.is_dir() and not is_receipt(p.name)]


def _folders(folder: Path) -> list[Path]:
    """Folders in `folder`, and links to folders (found, so that reading through them is refused with a message)."""
    return sorted(p for p in folder.iterdir() if p.is_dir())


def _pick(folder: Path, module: str, student: str) -> Found | None:
    """The submission in a student's folder, if it holds one; a folder that cannot be listed is found with why."""
    try:
        candidates = [p for p in _visible(folder) if p.suffix in SUFFIXES]
    except OSError as error:
        return unlisted(folder, module, student, error)
    if not candidates:
        return None
    chosen = choose(candidates, module, folder)
    return Found(student, chosen.path, chosen.note, others=chosen.others, tied=chosen.tied)


def _shown_entry(path: Path) -> bool:
    return not path.name.startswith(".") and path.name not in IGNORED


def _visible(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in IGNORED)
