"""The Gradescope autograder bundle: setup.sh, run_autograder, this package, and what grading one assignment needs.

Nothing else of the assignment goes in (nbgrader's source notebook holds
every solution region), and run_autograder makes everything it unpacked
unreadable to the workers before it grades.
"""
from __future__ import annotations

import os
import shlex
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.course import Course
from autograder.grading.suite import PUBLIC_FILE
from autograder.outputs import ExportError

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root with network access, when it builds the autograder image.
set -euxo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
# bubblewrap is the strong sandbox; if it cannot start inside Gradescope's container the
# grader falls back to rlimits and a separate uid, and records "fallback" in every result.
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
@TORCH@/autograder/venv/bin/pip install /autograder/source
/autograder/venv/bin/autograder doctor
"""


RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this once per submission, as root, from /autograder.
# GRADESCOPE_ROOT, AUTOGRADER_PYTHON and AUTOGRADER_SANDBOX exist so the same script can be tried
# outside Gradescope.
set -euo pipefail
ROOT="${GRADESCOPE_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
# Workers run under their own uid when the grader is root: keep the course (the reference, the
# hidden checks, course.yaml's seed salt) unreadable to them even where bubblewrap cannot start.
# The grader checks this before it grades, and refuses to grade where it does not hold.
chmod -R go-rwx "$ROOT/source"
mkdir -p "$ROOT/results"
cd "$ROOT/source"
exec "$PYTHON" -m autograder gradescope-run @ASSIGNMENT@ --root "$ROOT" --course "$ROOT/source/course.yaml" \\
    --sandbox "${AUTOGRADER_SANDBOX:-auto}"
"""


_TOP_FILES = ("pyproject.toml", "README.md")  # pip builds the package from these


_SKIPPED_DIRS = {"__pycache__", ".ipynb_checkpoints", "__MACOSX"}


_SKIPPED_SUFFIXES = (".pyc", ".db", ".db-wal", ".db-shm", ".partial")


@dataclass(frozen=True)
class BundleMember:
    name: str  # path inside the zip
    data: bytes
    executable: bool = False


TORCH_STEP = """\
# No local wheel here: without PyTorch's CPU index pip would fetch a multi-GB CUDA build.
/autograder/venv/bin/pip install @PIN@ --index-url @INDEX@
"""


def torch_requirement(root: Path) -> str:
    """The torch pin of pyproject.toml's `torch` extra (e.g. "torch==2.13.0"), so setup.sh never drifts from it."""
    try:
        project = tomllib.loads((Path(root) / "pyproject.toml").read_text())["project"]
        dependencies = project.get("optional-dependencies", {}).get("torch", [])
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        raise ExportError(f"cannot read the dependencies in {Path(root) / 'pyproject.toml'} ({error}); the "
                          "bundle installs what it lists, so fix that file first.") from None
    pins = [d.split(";")[0].strip() for d in dependencies if d.replace(" ", "").startswith("torch==")]
    if not pins:
        raise ExportError("pyproject.toml's `torch` extra does not pin torch (torch==X.Y.Z); setup.sh needs an exact "
                          "version to fetch the CPU build for an assignment that preloads torch. Pin it and run again.")
    return pins[0].replace(" ", "")


def bundle_members(course: Course, assignment: str) -> list[BundleMember]:
    """What autograder.zip holds: the two scripts, the package, the course settings, and what grading one
    assignment needs: its public checks and its solution folder. Nothing else of the assignment (the
    nbgrader source notebook holds every solution region) goes in, and run_autograder makes everything
    unreadable to the workers."""
    settings = course.assignment(assignment)
    root = course.root
    package = Path(__file__).resolve().parents[1]
    torch = ""
    if "torch" in settings.preload:  # the engine itself needs no torch; an assignment's checks may
        torch = TORCH_STEP.replace("@PIN@", shlex.quote(torch_requirement(root))).replace("@INDEX@", TORCH_CPU_INDEX)
    setup = SETUP_SH.replace("@TORCH@", torch)
    run = RUN_AUTOGRADER.replace("@ASSIGNMENT@", shlex.quote(assignment))
    members = [BundleMember("setup.sh", setup.encode(), True), BundleMember("run_autograder", run.encode(), True)]
    members += [BundleMember(name, (root / name).read_bytes()) for name in _TOP_FILES if (root / name).is_file()]
    members.append(BundleMember("course.yaml", course.path.read_bytes()))
    members += _folder_members(package, "autograder")
    public = settings.source_dir / PUBLIC_FILE
    members.append(BundleMember(f"{_inside(settings.source_dir, root)}/{PUBLIC_FILE}", public.read_bytes()))
    members += _folder_members(settings.solution_dir, _inside(settings.solution_dir, root))
    return members


def write_bundle(course: Course, assignment: str, out: Path) -> list[str]:
    """Write the Gradescope autograder zip; returns the names it holds."""
    members = bundle_members(course, assignment)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as bundle:
        for member in members:
            # A fixed date makes the same sources give the same zip, so a changed bundle means changed code.
            info = zipfile.ZipInfo(member.name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100755 if member.executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, member.data)
    os.replace(partial, out)
    return [m.name for m in members]


def _inside(folder: Path, root: Path) -> str:
    try:
        return Path(folder).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ExportError(f"{folder} is outside the course folder {root}; the bundle keeps the course's "
                          "layout, so move the assignment's folders under it (see course.yaml).") from None


def _folder_members(folder: Path, target: str) -> list[BundleMember]:
    if not Path(folder).is_dir():
        raise ExportError(f"{folder} does not exist; the bundle needs it. Check the assignment's folders "
                          "in course.yaml.")
    members = []
    for directory, subdirs, files in os.walk(folder):
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            path = Path(directory) / name
            if name.startswith(".") or name.endswith(_SKIPPED_SUFFIXES) or path.is_symlink():
                continue
            relative = path.relative_to(folder).as_posix()
            members.append(BundleMember(f"{target}/{relative}", path.read_bytes()))
    return members
