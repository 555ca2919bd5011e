"""Finding a class's submissions: files, a flat folder, nbgrader's submitted/ tree, or a zip.

Layouts understood, for assignment module `attention`:
- files given directly: the student id is the file's stem;
- a flat folder of `<student>.py` / `<student>.ipynb`, or `<student>/` folders holding one;
- an nbgrader course (or its `submitted/` folder): `submitted/<student>/<assignment>/attention.ipynb`;
- a .zip of any of these, extracted safely to a temporary folder.
"""
from __future__ import annotations

import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from autograder.submission import SUFFIXES

MAX_ZIP_BYTES = 4 << 30
MAX_ZIP_MEMBERS = 100_000
IGNORED = {".ipynb_checkpoints", "__pycache__", "__MACOSX"}


class LayoutError(Exception):
    """A path given to `grade` holds no submissions we can recognise."""


@dataclass(frozen=True)
class Found:
    student: str
    path: Path
    note: str = ""  # e.g. which of two files was picked


def find_submissions(paths: list[Path], assignment: str, module: str, workdir: Path) -> list[Found]:
    """Every submission under `paths`, one per student (sorted by student).

    workdir: where zips are extracted; the caller owns and removes it.
    """
    found: dict[str, Found] = {}
    for path in paths:
        for item in _find(Path(path), assignment, module, workdir):
            found[item.student] = item
    return [found[student] for student in sorted(found)]


def _find(path: Path, assignment: str, module: str, workdir: Path) -> list[Found]:
    if not path.exists():
        raise LayoutError(f"{path} does not exist; pass student files, a folder of them, an nbgrader "
                          "course folder or a zip")
    if path.is_file() and path.suffix == ".zip":
        return _find(_extract(path, workdir), assignment, module, workdir)
    if path.is_file():
        if path.suffix not in SUFFIXES:
            raise LayoutError(f"{path} is not a .py, .ipynb or .zip file")
        return [Found(path.stem, path)]
    submitted = path if path.name == "submitted" else path / "submitted"
    if submitted.is_dir():
        return _nbgrader(submitted, assignment, module)
    flat = _flat(path, module)
    if not flat:
        inner = [p for p in path.iterdir() if p.is_dir() and p.name not in IGNORED and (p / "submitted").is_dir()]
        if len(inner) == 1:  # a zip of a course folder extracts to one top-level folder
            return _nbgrader(inner[0] / "submitted", assignment, module)
        raise LayoutError(f"{path} holds no .py or .ipynb submissions, no <student>/ folders with one, and "
                          "no nbgrader submitted/ tree")
    return flat


def _nbgrader(submitted: Path, assignment: str, module: str) -> list[Found]:
    found = []
    for student_dir in sorted(p for p in submitted.iterdir() if p.is_dir() and p.name not in IGNORED):
        folder = student_dir / assignment
        if folder.is_dir():
            picked = _pick(folder, module, student_dir.name)
            if picked:
                found.append(picked)
    return found


def _flat(folder: Path, module: str) -> list[Found]:
    found = []
    files = [p for p in _visible(folder) if p.is_file() and p.suffix in SUFFIXES]
    stems: dict[str, list[Path]] = {}
    for path in files:
        stems.setdefault(path.stem, []).append(path)
    for student, paths in stems.items():
        found.append(_choose(paths, student))
    for directory in (p for p in _visible(folder) if p.is_dir()):
        picked = _pick(directory, module, directory.name)
        if picked:
            found.append(picked)
    return found


def _pick(folder: Path, module: str, student: str) -> Found | None:
    """The submission in a student's folder: `<module>.*` if present, else the only candidate."""
    candidates = [p for p in _visible(folder) if p.is_file() and p.suffix in SUFFIXES]
    named = [p for p in candidates if p.stem == module]
    if named:
        return _choose(named, student)
    if not candidates:
        return None
    return _choose(candidates, student)


def _choose(paths: list[Path], student: str) -> Found:
    """One file per student; with several, the notebook, then the newest, and a note saying so."""
    if len(paths) == 1:
        return Found(student, paths[0])
    ranked = sorted(paths, key=lambda p: (p.suffix == ".ipynb", p.stat().st_mtime), reverse=True)
    others = ", ".join(p.name for p in ranked[1:])
    return Found(student, ranked[0], f"several files were handed in; graded {ranked[0].name}, not {others}")


def _visible(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in IGNORED)


def _extract(archive: Path, workdir: Path) -> Path:
    """Extract a zip without letting it write outside `workdir` or fill the disk."""
    target = Path(tempfile.mkdtemp(prefix=archive.stem + "-", dir=workdir))
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            if len(members) > MAX_ZIP_MEMBERS or sum(m.file_size for m in members) > MAX_ZIP_BYTES:
                raise LayoutError(f"{archive} is too large to extract safely (over {MAX_ZIP_MEMBERS} files or "
                                  f"{MAX_ZIP_BYTES >> 30} GB); unpack it yourself and pass the folder")
            for member in members:
                destination = (target / member.filename).resolve()
                if not destination.is_relative_to(target.resolve()) or (member.external_attr >> 16) & 0o170000 == 0o120000:
                    continue  # absolute paths, ../ escapes and symlinks are skipped
                bundle.extract(member, target)
    except zipfile.BadZipFile:
        raise LayoutError(f"{archive} is not a valid zip file; check the download and try again") from None
    return target
