"""One student's hand-in as finding a class gives it (grading.discover), and what every layout's finds share:
ids settled so every output can hold them, and hand-ins refused where the class folder must be fixed first.
"""
from __future__ import annotations

import dataclasses
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.handin import read_bytes
from autograder.grading.ids import canonical, id_problem, shown_id, unique
from autograder.grading.late import FILE_TIME, FILE_TIME_INSTEAD, TIMESTAMP_FILE, LateRule, file_time
from autograder.grading.results import NOT_LOADED, SubmissionResult
from autograder.grading.submission import SUFFIXES
from autograder.text import counted, joined, safe

CHECKPOINTS = ".ipynb_checkpoints"  # Jupyter's hidden folder of autosaved copies, never graded
CHECKPOINTS_SAID = f"{CHECKPOINTS}/, Jupyter's hidden folder of autosaved copies, which is not graded"
MACOSX = "__MACOSX"  # macOS's zip tool's folder of file metadata (resource forks, `._hw.ipynb`)
MACOSX_SAID = f"{MACOSX}/, a zip tool's folder of file metadata (not your files), which is not graded"
IGNORED = {CHECKPOINTS, "__pycache__", MACOSX}  # folders that are never a student's work
TOP_ONLY = "only files at the top of a hand-in are graded"
BELOW = 3  # folders down a hand-in is looked in for a .py or .ipynb put in a subfolder (never graded, but named)
NOTHING_TO_GRADE = "nothing to grade"  # a hand-in with no .py or .ipynb (a PDF alone): graded as 0, said why


class LayoutError(Exception):
    """A path given to `grade` holds no submissions we can recognise."""


@dataclass(frozen=True)
class Found:
    student: str
    path: Path
    note: str = ""  # e.g. which of two files was picked
    problem: str = ""  # why the file cannot be graded at all, found before reading it (a refused zip member)
    submitted_at: str = ""  # ISO 8601 in UTC (grading.late)
    submitted_at_source: str = ""  # where that time came from: late.NBGRADER_TIMESTAMP, LMS_LOCAL_TIME or FILE_TIME
    root: Path | None = None  # the layout's top: no link below it is followed when the file is read (grading.handin)
    lms: str = ""  # the LMS whose download named the file ("Canvas"), where its name was read (grading.lms_downloads)
    # False where the class folder must be fixed before the hand-in can be graded (two files give one id, an id
    # no output can hold, a link): `grade` names it with `problem` and stores nothing under an id made up for it
    stored: bool = True
    # The student's other files, best first by the rule that chose `path` (grading.handin_choice): where `path` is a
    # retracted hand-in of theirs, the next of these is graded instead (grading.retract)
    others: tuple[Path, ...] = ()
    tied: tuple[Path, ...] = ()  # those of `others` equally good by every rule up to the time (handin_choice.Chosen)
    stated: tuple[tuple[Path, str], ...] = ()  # (one of `others`, the time the layout states for it: an attempt's)


def settle_ids(found: list[Found]) -> list[Found]:
    """Every hand-in with an id every output can hold, unique; refused and colliding ones get their problem.

    The hand-ins to be stored take their ids first, so each keeps its own: a refused one (`alice .py`, whose
    readable form is `alice`) is listed under an id left over (`alice-2`), and never pushes the real `alice.py`
    to an invented id, in whatever order the files were found (a space sorts before a dot)."""
    by_id: dict[str, list[Found]] = {}
    for item in found:
        by_id.setdefault(canonical(item.student), []).append(item)
    judged = [_judged(item, group) for group in by_id.values() for item in group]
    taken: set[str] = set()
    ids = {index: unique(_storable(judged[index].student), taken)
           for index in sorted(range(len(judged)), key=lambda index: not judged[index].stored)}
    return [dataclasses.replace(item, student=ids[index]) for index, item in enumerate(judged)]


def _judged(item: Found, group: list[Found]) -> Found:
    """`item` with the problem its id gives it (shared with another hand-in, or refused), and not stored if so."""
    folder_problem = _collision(item, group) or _id_refused(item)
    return dataclasses.replace(item, problem=item.problem or folder_problem, stored=item.stored and not folder_problem)


def _storable(student: str) -> str:
    return student if not id_problem(student) else shown_id(student)


def _collision(item: Found, group: list[Found]) -> str:
    if len(group) == 1:
        return ""
    files = " and ".join(safe(other.path, 300) for other in group)
    return (f"{len(group)} hand-ins give the student id {safe(group[0].student, 200)!r}: {files}"
            f"{_normalization_note(group)}. None of them was graded, so no result replaces another; keep one (rename "
            "or remove the others) and grade again")


def _normalization_note(group: list[Found]) -> str:
    """Where two names look the same and differ only in how their accents are encoded (`josé` typed, and `josé` as
    macOS or a zip tool writes it: e and a combining accent), which file is which: printed, both look identical."""
    names = {item.student for item in group}
    if len({unicodedata.normalize("NFC", name) for name in names}) == len(names):
        return ""
    told = "; ".join(f"{safe(item.path, 300)} is {_escaped(item.student)}, " + (
        "composed (NFC: one character for each accented letter, as typed on a keyboard)" if _composed(item.student)
        else "decomposed (NFD: a letter then a combining accent, as macOS and some zip tools write names)")
        for item in group)
    return (f". They look the same but differ in Unicode normalization: {told}. If they are two students', rename "
            "the decomposed one to its student's own id; if one student's, remove the one not to grade (bash takes a "
            "name quoted as shown: `mv $'jose\\u0301.py' NEW_ID.py`)")


def _escaped(student: str) -> str:
    """`student` as bash's $'...' quoting writes it: each character beyond ASCII as \\uXXXX, so two that look alike
    differ on the screen."""
    text = "".join(c if c.isascii() and c.isprintable() and c not in "'\\" else
                   f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}" for c in student)
    return f"$'{text}'"


def _composed(student: str) -> bool:
    return unicodedata.normalize("NFC", student) == student


def _id_refused(item: Found) -> str:
    reason = id_problem(item.student)
    return f"{safe(item.path, 300)} was not graded: {reason}, and grade again" if reason else ""


def link_refused(item: Found) -> Found:
    """`item`, not to be stored where its file (or the student's folder, below the layout's top) is a symbolic link,
    or its file a hard link: the class folder was copied keeping links (`cp -a`, `cp -al`, rsync's --link-dest, a
    tool merging identical files), which the hand-in rule refuses to follow, and a zero for the student would stand
    for the copy, not their work. Its problem is what reading it says (grading.handin).
    The folder the TA passed may itself be a link: it is not the student's part of the path."""
    if item.problem or not (any(os.path.islink(path) for path in _below_the_top(item)) or _hard_link(item.path)):
        return item
    problem = read_bytes(item.path, item.root).error or (
        f"{safe(item.path, 300)} is in a folder that is a symbolic link; replace the link with a copy (or copy the "
        "class folder without keeping links) and grade again")
    return dataclasses.replace(item, problem=problem, stored=False)


def _hard_link(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink > 1


def _below_the_top(item: Found) -> list[Path]:
    """The hand-in's file and each folder above it below the layout's top (submitted/<student>/<assignment>/ has two:
    a student's folder linked in had been graded, at 0), the folder the TA passed left out."""
    if item.root is None:
        return [item.path]
    root = Path(item.root)
    return [item.path, *[folder for folder in item.path.parents if root in folder.parents]]


def unreadable_refused(item: Found) -> Found:
    """`item`, not to be stored where this account may not read its file: the class folder's permissions to fix,
    not the student's 0 (an export would write it)."""
    if item.problem or os.access(item.path, os.R_OK) or not os.path.isfile(item.path):
        return item
    return dataclasses.replace(item, problem=read_bytes(item.path, item.root).error, stored=False)


def timed(item: Found) -> Found:
    """`item` with a submission time: its own (nbgrader's), else the file's, which is unreliable; for a hand-in of
    no file to grade (a PDF alone), its folder's."""
    return item if item.submitted_at else dataclasses.replace(
        item, submitted_at=file_time(item.path) or file_time(item.path.parent), submitted_at_source=FILE_TIME)


def held_for_their_time(item: Found, rule: LateRule) -> Found:
    """`item`, with a due time set and a timestamp.txt that could not be read, held back: not stored, so that no
    late penalty from its file's modification time (which copying the class folder changes) reaches a gradebook."""
    if rule.due is None or item.submitted_at_source != FILE_TIME or not item.note.endswith(FILE_TIME_INSTEAD):
        return item
    return dataclasses.replace(item, stored=False, problem=(
        f"{item.student}: {item.note.removesuffix(FILE_TIME_INSTEAD)}; fix {TIMESTAMP_FILE} and grade again (its "
        "file's modification time, which copying the class folder changes, would decide whether it is late). Until "
        "then `report` and every export leave this student out, as nothing is stored (an LMS export with "
        "`missing: zero` writes them 0)"))


def nothing_to_grade(folder: Path, entries: list[Path], module: str, student: str) -> Found:
    """A student's hand-in folder with no .py or .ipynb in it (a PDF, a renamed file, a subfolder; `entries`, what it
    shows): the student handed in for this assignment, so they are listed with why nothing was graded, not left out
    without a word. What is said is the student's to read (feedback, Gradescope, an LMS's feedback column): what
    their hand-in holds and what to hand in; what a TA may do instead is `grade`'s to say (for_the_ta)."""
    entries = [p for p in entries if p.name != "timestamp.txt"]
    checkpoints = Path(folder, CHECKPOINTS).is_dir()
    below, zips, deeper = _looked_below(folder)
    hand_in = f"Hand in your notebook itself ({module}.ipynb, as saved by Jupyter) or your .py file"
    if below:
        return Found(student, folder / f"{module}.ipynb", problem=f"{NOTHING_TO_GRADE}: {_in_subfolders(below)}" + (
            f" ({CHECKPOINTS_SAID})" if checkpoints else "") + f", and {TOP_ONLY}. {hand_in}, not a folder that "
            "holds it")
    held = ", ".join(safe(p.name, 60) + ("/" if p.is_dir() else "") for p in entries[:5]) + \
        (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
    # A notebook's autosaved copy, without the notebook: what a student who handed in the folder Jupyter ran in has.
    holds = f"holds only {held}" if entries else f"holds only {CHECKPOINTS_SAID}" if checkpoints else \
        f"holds only {MACOSX_SAID}" if Path(folder, MACOSX).is_dir() else "is empty"
    also = f" (its {CHECKPOINTS_SAID})" if entries and checkpoints else ""
    zipped = f"; {joined([safe(p.as_posix(), 100) for p in zips[:3]])} {'is a zip' if len(zips) == 1 else 'are zips'}" \
        ", and a zip inside a hand-in is not opened" if zips else ""
    deep = f"; {joined([safe(name, 60) + '/' for name in deeper[:3]])} {'holds' if len(deeper) == 1 else 'hold'} " \
        f"folders more than {BELOW} folders down, which were not looked in" if deeper else ""
    return Found(student, folder / f"{module}.ipynb",
                 problem=f"{NOTHING_TO_GRADE}: this hand-in {holds}, with no .py or .ipynb file in it{also}{zipped}"
                         f"{deep}. {hand_in}")


def for_the_ta(problem: str) -> str:
    """What a TA may do about a hand-in whose file is in a subfolder (`problem`, as nothing_to_grade said it to the
    student), for `grade` to print beside it: the student's feedback says only what to hand in; "" for others."""
    if NOTHING_TO_GRADE not in problem or TOP_ONLY not in problem:
        return ""
    return (" (the student was told this). To grade the file as it was handed in instead, move it up to the top of "
            "the student's hand-in folder and grade again")


def nothing_handed_in(result: SubmissionResult) -> bool:
    """Whether `result` is of a hand-in with no file to grade (nothing_to_grade's): its stored file name is made up."""
    return (not result.sha256 and result.did_not_load
            and result.problem.startswith(f"{NOT_LOADED}: {NOTHING_TO_GRADE}"))


def handed_in_below(folder: Path, depth: int = BELOW) -> list[Path]:
    """Each .py or .ipynb in a folder inside `folder`, at most `depth` levels down, relative to `folder` (links not
    followed; Jupyter's autosaved copies and a zip tool's folders left out)."""
    return _looked_below(folder, depth)[0]


def _looked_below(folder: Path, depth: int = BELOW) -> tuple[list[Path], list[Path], list[str]]:
    """handed_in_below's files; the zips in `folder` or below it (relative to it); and the names of `folder`'s own
    folders that hold folders deeper than `depth`, which were not looked in."""
    found: list[Path] = []
    zips: list[Path] = []
    deeper: list[str] = []
    for root, folders, files in os.walk(folder):
        here = Path(root).relative_to(folder)
        folders[:] = sorted(name for name in folders if name not in IGNORED)
        if len(here.parts) >= depth:
            if folders and here.parts[0] not in deeper:
                deeper.append(here.parts[0])
            folders[:] = []
        found += [here / name for name in sorted(files) if here.parts and Path(name).suffix in SUFFIXES]
        zips += [here / name for name in sorted(files) if Path(name).suffix.lower() == ".zip"]
    return found, zips, deeper


def _in_subfolders(below: list[Path]) -> str:
    """`work/hw.py is in a subfolder`, or several such files named, a few at most."""
    names = [safe(path.as_posix(), 100) for path in below[:3]] + (
        [f"{len(below) - 3} more"] if len(below) > 3 else [])
    return f"{joined(names)} {'is in a subfolder' if len(below) == 1 else 'are in subfolders'}"


def misnamed(folder: Path, assignment: str, module: str, student: str) -> Found:
    """A student's hand-in folder named as the assignment in another case (`HW3` for hw3): nbgrader collects
    only submitted/<student>/<assignment>/, so it is named for the TA to rename, and nothing is stored."""
    return Found(student, folder / f"{module}.ipynb", stored=False,
                 problem=f"{safe(student, 60)}/{safe(folder.name, 60)}/ is not named {assignment}/, the assignment's "
                         f"folder that nbgrader collects; rename it to {assignment} and grade again")


def linked(folder: Path, name: str, student: str, root: Path) -> Found:
    """A student's folder that is a link: found without looking inside; reading `folder/name` refuses the link."""
    return Found(student, folder / name, root=root)


def unlisted(folder: Path, module: str, student: str, error: OSError) -> Found:
    """A student's folder this user cannot list: the class folder's to fix, named, not stored."""
    return Found(student, folder / f"{module}.ipynb", stored=False, problem=f"the folder {safe(str(folder), 300)} "
                 f"cannot be read ({error.strerror}); make it readable by this user (chmod -R u+rX) and grade again")


def named_as_module(path: Path, module: str, why: str) -> Found:
    """A file named as the assignment's module, given alone, whose folder gives no student id (`why`): refused, as
    stored it would be a student named after the module, whom every such file joins."""
    return Found(path.stem, path, stored=False, problem=(
        f"{safe(path, 300)} is named after the assignment's module ({module}), not after a student, and {why}, so no "
        f"student id can be taken from it; copy it as STUDENT{path.suffix} (the student's id) and grade that, or put "
        "it in a folder named after the student and pass that folder"))



def none_found(paths: list[Path], assignment: str) -> str:
    """Why `grade` found nothing in `paths`, and what to do: where an nbgrader tree was looked in, what it holds."""
    said = f"no submissions of {assignment} found in {', '.join(safe(p) for p in paths)}"
    trees = [p if p.name == "submitted" else p / "submitted" for p in map(Path, paths)]
    trees = [(tree, _student_folders(tree)) for tree in trees if tree.is_dir()]
    if not trees:
        return said
    held = sorted({name for _, students in trees for folders in students.values() for name in folders})
    other = f"`autograder grade {safe(held[0])} {' '.join(safe(p) for p in paths)}`" if len(held) == 1 else \
        "`autograder grade ASSIGNMENT ...`"
    looked = "; ".join(f"looked in {safe(tree)}/<student>/{safe(assignment)}/ and found {_held(students)}"
                       for tree, students in trees)
    return (f"{said}; {looked}. Collect this assignment's hand-ins first (`nbgrader collect {safe(assignment)}`, or "
            f"copy each student's into submitted/<student>/{safe(assignment)}/), or grade the assignment they hold "
            f"instead ({other})")


def _student_folders(submitted: Path) -> dict[str, tuple[str, ...]]:
    """Each student folder of an nbgrader submitted/ tree, with the folders (assignments) it holds."""
    return {student.name: tuple(p.name for p in sorted(student.iterdir()) if p.is_dir())
            for student in sorted(submitted.iterdir()) if student.is_dir() and not student.name.startswith(".")}


def _held(students: dict[str, tuple[str, ...]]) -> str:
    """What the student folders hold ("12 students with only hw1/"), kinds in order of first sight."""
    if not students:
        return "no student folders"
    kinds: dict[tuple[str, ...], int] = {}
    for folders in students.values():
        kinds[folders] = kinds.get(folders, 0) + 1
    return ", ".join(f"{counted(count, 'student')} with " + (f"only {', '.join(f + '/' for f in folders)}"
                                                             if folders else "no assignment folder")
                     for folders, count in kinds.items())
