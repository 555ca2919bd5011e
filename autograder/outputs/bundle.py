"""The Gradescope autograder bundle: setup.sh, run_autograder, this package, and what grading one assignment needs.

Nothing else of the assignment goes in (nbgrader's source notebook holds
every solution region), and run_autograder makes everything it unpacked
unreadable to the workers before it grades.
"""
from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import tomllib
import zipfile
from pathlib import Path

from autograder.grading.course import Course
from autograder.grading.coursefiles import CourseFile, folder_files, grading_files
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


_TOP_FILES = ("pyproject.toml", "README.md")  # pip builds the package from these


# The zip's members: the scripts, the package, and what grading the assignment needs.
BundleMember = CourseFile


TORCH_STEP = """\
# No local wheel here: without PyTorch's CPU index pip would fetch a multi-GB CUDA build.
/autograder/venv/bin/pip install @PIN@ --index-url @INDEX@
"""


def torch_requirement(pyproject: str) -> str:
    """The torch pin of pyproject.toml's `torch` extra (e.g. "torch==2.13.0"), so setup.sh never drifts from it."""
    try:
        project = tomllib.loads(pyproject)["project"]
        dependencies = project.get("optional-dependencies", {}).get("torch", [])
    except (KeyError, tomllib.TOMLDecodeError) as error:
        raise ExportError(f"cannot read the dependencies in the package's pyproject.toml ({error}); the bundle "
                          "installs what it lists, so fix that file first.") from None
    pins = [d.split(";")[0].strip() for d in dependencies if d.replace(" ", "").startswith("torch==")]
    if not pins:
        raise ExportError("pyproject.toml's `torch` extra does not pin torch (torch==X.Y.Z); setup.sh needs an exact "
                          "version to fetch the CPU build for an assignment that preloads torch. Pin it and run again.")
    return pins[0].replace(" ", "")


def bundle_members(course: Course, assignment: str, run_script: str) -> list[BundleMember]:
    """What autograder.zip holds: the two scripts, the package, the course settings, and what grading one
    assignment needs: its public checks and its solution folder. Nothing else of the assignment (the
    nbgrader source notebook holds every solution region) goes in, and run_autograder makes everything
    unreadable to the workers.

    run_script: run_autograder's text, which runs the command that grades there (cli.gradescope).
    """
    settings = course.assignment(assignment)
    package = Path(__file__).resolve().parents[1]
    top = package_project(package)
    torch = ""
    if "torch" in settings.preload:  # the engine itself needs no torch; an assignment's checks may
        pin = shlex.quote(torch_requirement(top["pyproject.toml"].decode()))
        torch = TORCH_STEP.replace("@PIN@", pin).replace("@INDEX@", TORCH_CPU_INDEX)
    setup = SETUP_SH.replace("@TORCH@", torch)
    members = [BundleMember("setup.sh", setup.encode(), True),
               BundleMember("run_autograder", run_script.encode(), True)]
    members += [BundleMember(name, data) for name, data in top.items()]
    members += folder_files(package, "autograder")
    return members + grading_files(course, assignment)


def package_project(package: Path) -> dict[str, bytes]:
    """What pip builds the package from, beside it: its source checkout's pyproject.toml and README.md, wherever
    the course's folder is; for a package installed from a wheel, which keeps neither, a pyproject.toml written
    from the installed package's own metadata (its dependencies, extras and command)."""
    source = package.parent
    if (source / "pyproject.toml").is_file():
        return {name: (source / name).read_bytes() for name in _TOP_FILES if (source / name).is_file()}
    return {"pyproject.toml": _pyproject_from_metadata().encode()}


def _pyproject_from_metadata() -> str:
    distribution = importlib.metadata.packages_distributions()["autograder"][0]  # pyproject.toml's name
    metadata = importlib.metadata.metadata(distribution)
    plain, extras = [], {}
    for requirement in metadata.get_all("Requires-Dist") or []:
        spec, _, marker = requirement.partition(";")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        (extras.setdefault(extra.group(1), []) if extra else plain).append(spec.strip())
    return "\n".join([
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n',
        f'[project]\nname = "{distribution}"\nversion = "{metadata["Version"]}"',
        f'requires-python = "{metadata["Requires-Python"] or ">=3.11"}"\ndependencies = {_toml_list(plain)}\n',
        "[project.optional-dependencies]", *(f"{name} = {_toml_list(items)}" for name, items in extras.items()),
        '\n[project.scripts]\nautograder = "autograder.__main__:main"\n',
        '[tool.setuptools.packages.find]\ninclude = ["autograder*"]\n',
        '[tool.setuptools.package-data]\nautograder = ["outputs/templates/*", "nbgrader/templates/*", '
        '"similarity/templates/*"]\n'])


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


def write_bundle(course: Course, assignment: str, out: Path, run_script: str) -> list[str]:
    """Write the Gradescope autograder zip, run_script as its run_autograder; returns the names it holds."""
    members = bundle_members(course, assignment, run_script)
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
