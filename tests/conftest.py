"""Shared fixtures: the real course, one real sandbox for the session, helpers to build submissions."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
import yaml

from autograder.grading import calibration
from autograder.grading.course import load_course
from autograder.grading.grader import Grader
from autograder.grading.submission import read_submission
from autograder.grading.suite import load_suite
from autograder.sandbox.protections import probe
from autograder.sandbox.zygote import Sandbox

ROOT = Path(__file__).resolve().parents[1]
CACHE_FOLDER = pytest.StashKey[str]()


def pytest_configure(config):
    """The reference-timing cache (grading.suite_cache) of this test run's own, not the user's ~/.cache: every
    command a test starts inherits it, and no run reuses what an earlier one left."""
    config.stash[CACHE_FOLDER] = os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="autograder-test-cache-")


def pytest_unconfigure(config):
    """Remove this run's cache folder (one per test process: a full run would leave hundreds in /tmp)."""
    if CACHE_FOLDER in config.stash:
        shutil.rmtree(config.stash[CACHE_FOLDER], ignore_errors=True)


FIXTURES = ROOT / "tests" / "fixtures"
SUBMISSIONS = FIXTURES / "submissions"
PLAIN = SUBMISSIONS / "correct" / "plain.py"
STUB = ROOT / "assignments" / "w07_attention" / "attention.py"
REFERENCE = ROOT / "solutions" / "w07_attention" / "reference.py"
# attention is score -> apply_mask -> softmax -> context, so a bug in a part may cost attention's checks too.
PARTS_OF_ATTENTION = {"score", "apply_mask", "softmax", "context"}


def manifest(kind: str) -> dict:
    return yaml.safe_load((SUBMISSIONS / kind / "manifest.yaml").read_text())


def compose(directory: Path, name: str, snippet: Path | None = None, suffix: str = ".py") -> Path:
    """A submission file: plain.py with `snippet` appended (a later def overrides the earlier one)."""
    text = PLAIN.read_text() + ("\n\n" + snippet.read_text() if snippet else "")
    path = directory / f"{name}{suffix}"
    path.write_text(text)
    return path


# course.yaml of a course whose one assignment, tiny, asks `double(x)`: the tests/fixtures/tiny suite.
TINY_COURSE = """\
course: {name: Tiny, seed_salt: s}
defaults:
  tolerance:
    float32: {rtol: 1.0e-5, atol: 1.0e-6}
    float64: {rtol: 1.0e-9, atol: 1.0e-12}
assignments:
  tiny:
    title: Doubling
    module: tiny
    preload: [numpy]
    checks: {double.small: 1, double.matches_reference: 1}
"""


def tiny_class(folder: Path, students: dict[str, str], when: float) -> Path:
    """A flat class folder of the tiny assignment: student -> the expression `double(x)` returns, each file dated
    `when` (a flat folder's submission time)."""
    folder.mkdir(parents=True, exist_ok=True)
    for student, body in students.items():
        path = folder / f"{student}.py"
        path.write_text(f"def double(x):\n    return {body}\n")
        os.utime(path, (when, when))
    return folder


def module_spec(directory: Path, source: str) -> dict:
    """The worker's spec of an attention.py holding `source`, written in `directory`."""
    path = directory / "attention.py"
    path.write_text(source)
    return read_submission(path).worker_spec("attention")


@pytest.fixture(scope="session")
def course():
    return load_course(ROOT / "course.yaml")


@pytest.fixture(scope="session")
def suite(course):
    return load_suite(course, "w07_attention")


@pytest.fixture(scope="session")
def sandbox(suite):
    with Sandbox(probe("auto"), suite.assignment.preload, warmup=suite.assignment.warmup) as box:
        yield box


@pytest.fixture(scope="session")
def grader(course, suite, sandbox):
    return Grader(course, suite, sandbox)


@pytest.fixture(scope="session")
def reference(course, suite):
    """The reference's time on each check on this machine (grading.calibration), measured once per session."""
    return calibration.time_reference(course, suite)


@pytest.fixture
def grade(grader):
    """grade(path, student=None) -> SubmissionResult, through the real sandbox."""
    return lambda path, student=None: grader.grade(read_submission(Path(path), student))


@pytest.fixture(scope="session")
def grade_once(grader):
    """grade_once(path, student=None) -> SubmissionResult, graded once per session for the same bytes and student.

    Grading is a function of the file's bytes and the student id (the seed): test_grading's graded-twice test
    holds it to that. So tests that only read a result share it: a fixture file that test_grading and
    test_misconceptions both grade is graded once. The result's `file` names the first path graded; use
    `grade` where a test must grade again.
    """
    results: dict[tuple[str, str, str, str], object] = {}

    def graded(path, student=None):
        submission = read_submission(Path(path), student)
        key = (submission.student, submission.kind, submission.sha256, submission.problem)
        if key not in results:
            results[key] = grader.grade(submission)
        return results[key]
    return graded


def repository_env(**extra) -> dict:
    """This process's environment with the repository first on PYTHONPATH, plus `extra`.

    A subprocess started outside the repository root (a CLI run elsewhere,
    nbgrader's kernels, a script in a temporary folder) must import the
    `autograder` under test, not whichever checkout is installed in the environment.
    """
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, **extra, "PYTHONPATH": path}


def run_cli(*args, cwd=ROOT, timeout=600, env=None) -> subprocess.CompletedProcess:
    """The real `autograder` command in a subprocess; `env` adds to this process's environment."""
    return subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=repository_env(**(env or {})))


@pytest.fixture(scope="session")
def public_python(tmp_path_factory):
    """A Python other users can run, borrowing this environment's packages: what the fallback's workers need.

    This machine's own interpreter may live under /root, which no worker uid can enter; the system's
    python3 of the same version, in a virtualenv under /tmp, can be.
    """
    system = Path("/usr/bin/python3")
    if not system.is_file() or subprocess.run([str(system), "-c", f"import sys; assert sys.version_info[:2] == "
                                                f"{tuple(sys.version_info[:2])}"]).returncode != 0:
        _skip_or_fail(f"no system python3 of version {sys.version_info[0]}.{sys.version_info[1]} to run fallback "
                      "workers with")
    place = Path(tempfile.mkdtemp(prefix="public-python-", dir="/tmp"))
    place.chmod(0o755)
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(place)], check=True, timeout=120)
    site_packages = next(place.glob("lib/python*/site-packages"))
    (site_packages / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    if not probe("fallback", python=str(place / "bin" / "python")).separate_user:
        shutil.rmtree(place)
        _skip_or_fail("no worker uid can run a Python with this environment's packages (its folders are private)")
    yield str(place / "bin" / "python")
    shutil.rmtree(place)


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must test the fallback sandbox, but {reason}")
    pytest.skip(reason)


def private_course(folder: Path) -> Path:
    """A copy of the course in `folder` (a pytest tmp folder: no other user can enter it); its course.yaml."""
    shutil.copy(ROOT / "course.yaml", folder / "course.yaml")
    for part in ("assignments", "solutions"):
        shutil.copytree(ROOT / part / "w07_attention", folder / part / "w07_attention")
    return folder / "course.yaml"


def bwrap_works() -> bool:
    return shutil.which("bwrap") is not None and probe("auto").mode == "bwrap"
