"""Issue 22: an environment that cannot grade refuses to grade, and limits hold for every build of the libraries.

The faults are real, made without installing another build: tests/fixtures/preload/ holds modules that the
workers preload (through a small virtualenv whose .pth file adds them), one mapping 3 GiB of address space
at import as PyTorch's default CUDA build does, one making every call's child exit as a broken build would.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
import yaml

from autograder.grading.course import load_course
from autograder.grading.grader import Grader
from autograder.grading.submission import read_submission
from autograder.grading.suite import load_suite
from autograder.sandbox.protections import probe
from autograder.sandbox.zygote import Sandbox

from conftest import FIXTURES, PLAIN, REFERENCE, ROOT, private_course, run_cli

ASSIGNMENT = "w07_attention"
PRELOADS = FIXTURES / "preload"


@pytest.fixture(scope="module")
def preload_python():
    """A Python with this environment's packages and the fixture preloads: what $AUTOGRADER_WORKER_PYTHON names."""
    place = Path(tempfile.mkdtemp(prefix="preload-python-", dir="/tmp"))
    place.chmod(0o755)  # workers run under a uid of their own
    extra = place / "extra" / "site-packages"  # named so: the sandbox binds a worker's package folders
    extra.mkdir(parents=True)
    for module in PRELOADS.glob("*.py"):
        shutil.copy(module, extra)
    for folder in (place / "extra", extra):
        folder.chmod(0o755)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(place / "venv")], check=True, timeout=120)
    site_packages = next((place / "venv").glob("lib/python*/site-packages"))
    (site_packages / "borrowed.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n{extra}\n")
    yield str(place / "venv" / "bin" / "python")
    shutil.rmtree(place)


def _course_with(folder: Path, preload: list[str] | None = None, memory_mib: int | None = None) -> Path:
    path = private_course(folder)
    data = yaml.safe_load(path.read_text())
    if preload is not None:
        data["assignments"][ASSIGNMENT]["preload"] = preload
    if memory_mib is not None:
        data["defaults"]["limits"]["memory_mib"] = memory_mib
    path.write_text(yaml.safe_dump(data))
    return path


def _stored(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_preload_that_maps_3_gib_leaves_the_reference_its_full_marks(tmp_path, preload_python):
    """The limit counts from what the child has mapped after the preload, so a large build of a library
    (PyTorch's CUDA build maps ~3.1 GiB) grades like the CPU build instead of failing every check."""
    course = load_course(_course_with(tmp_path, preload=["numpy", "torch", "reserve_address_space"]))
    suite = load_suite(course, ASSIGNMENT)
    with Sandbox(probe("auto", python=preload_python), suite.assignment.preload) as box:
        result = Grader(course, suite, box).grade(read_submission(REFERENCE))
    assert (result.score, result.max_score) == (100, 100), [t.message for t in result.tests if t.status != "passed"]


@pytest.mark.slow
def test_grade_and_doctor_with_a_preload_that_maps_3_gib(tmp_path, preload_python):
    """The same through the command line: the probe passes, the class grades, doctor shows the mapped size."""
    course = _course_with(tmp_path, preload=["numpy", "torch", "reserve_address_space"])
    env = {"AUTOGRADER_WORKER_PYTHON": preload_python}
    done = run_cli("grade", ASSIGNMENT, REFERENCE, PLAIN, "--json", "--course", course, "--db", tmp_path / "g.db",
                   env=env)
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["score"], r["max_score"]) for r in results] == [(100, 100), (100, 100)]
    doctor = run_cli("doctor", "--course", course, env=env)
    assert doctor.returncode == 0, doctor.stdout
    mapped = float(re.search(r"a worker maps (\d+) MiB after the preload", doctor.stdout).group(1))
    assert mapped > 3072


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_the_memory_limit_still_stops_a_submission_on_top_of_the_preload(tmp_path, preload_python):
    """Counting from the preload moves the limit, it does not remove it: 2 GiB more is refused."""
    course = load_course(_course_with(tmp_path, preload=["numpy", "reserve_address_space"]))
    suite = load_suite(course, ASSIGNMENT)
    hog = tmp_path / "hog.py"
    hog.write_text(PLAIN.read_text() + "\nimport numpy as _np\n_HOG = _np.ones((2100 << 20) // 8)\n")
    with Sandbox(probe("auto", python=preload_python), suite.assignment.preload) as box:
        result = Grader(course, suite, box).grade(read_submission(hog))
    assert "MemoryError" in result.problem, (result.problem, result.notes)  # a .py whose top level raises is not loaded


@pytest.mark.slow
def test_grade_and_doctor_refuse_where_every_call_dies_and_nothing_is_stored(tmp_path, preload_python):
    course = _course_with(tmp_path, preload=["numpy", "torch", "calls_always_die"])
    env = {"AUTOGRADER_WORKER_PYTHON": preload_python}
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, REFERENCE, PLAIN, "--course", course, "--db", db, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "grading refused: this environment cannot grade w07_attention" in done.stderr
    assert "could not answer a call (echo stopped the worker process" in done.stderr
    assert "Nothing was graded" in done.stderr and "Traceback" not in done.stderr
    assert _stored(db) == 0
    doctor = run_cli("doctor", "--course", course, env=env)
    assert doctor.returncode == 1
    assert "[ ] w07_attention: cannot grade here: a worker child under the limits could not answer" in doctor.stdout


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_worker_that_dies_on_every_check_the_same_way_is_an_internal_error(tmp_path, preload_python):
    """Past the probe (a Grader used directly), such a result still blames the environment, not the student."""
    course = load_course(_course_with(tmp_path, preload=["numpy", "torch", "calls_always_die"]))
    suite = load_suite(course, ASSIGNMENT)
    with Sandbox(probe("auto", python=preload_python), suite.assignment.preload) as box:
        result = Grader(course, suite, box).grade(read_submission(REFERENCE))
    assert result.internal_error.startswith(f"the worker died on all {len(suite.checks)} checks")
    assert "the same way" in result.internal_error and "autograder doctor" in result.internal_error


@pytest.mark.slow
def test_a_missing_preload_is_named_with_its_course_yaml_key_and_no_pip_install_of_a_name_the_project_knows_not(
        tmp_path):
    """A name the project neither pins nor knows may be a misspelling: pip is not offered to install it from PyPI
    into the workers' Python (tests/test_course_faults.py: a misspelling with its likely name)."""
    course = _course_with(tmp_path, preload=["numpy", "no_such_module_here"])
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, REFERENCE, "--course", course, "--db", db)
    assert done.returncode == 2
    assert (f"course.yaml: assignments.{ASSIGNMENT}.preload: 'no_such_module_here' cannot be imported in the "
            f"workers' Python ({sys.executable}). To fix it: correct the name under assignments.{ASSIGNMENT}.preload "
            "in course.yaml, as `import` names the module (case-sensitive, and not always the name pip knows it by: "
            "`sklearn` for scikit-learn); if it is a library the course needs, install it into "
            f"{sys.executable} from a source you trust") in done.stderr, done.stderr
    assert "pip install" not in done.stderr and _stored(db) == 0
    doctor = run_cli("doctor", "--course", course)
    assert doctor.returncode == 1 and "'no_such_module_here' cannot be imported" in doctor.stdout


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_preload_that_fails_to_import_is_the_one_named_never_another_to_reinstall(tmp_path, preload_python):
    """An installed preload whose import raises ImportError was answered with `pip install --force-reinstall` of the
    LAST preload entry (torch here), whatever failed: the entry that fails is found and named alone."""
    course = _course_with(tmp_path, preload=["numpy", "import_fails", "torch"])
    done = run_cli("grade", ASSIGNMENT, REFERENCE, "--course", course, "--db", tmp_path / "g.db",
                   env={"AUTOGRADER_WORKER_PYTHON": preload_python})
    assert done.returncode == 2
    assert (f"To fix it: reinstall 'import_fails', the preload entry that fails, into {preload_python} from a source "
            "you trust") in done.stderr, done.stderr
    assert "pip install" not in done.stderr and "torch" not in done.stderr.split("To fix it:")[1]


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_check_and_doctor_in_a_released_folder_name_the_missing_preload(tmp_path):
    """A student's machine has no reference: there the probe is the preload imported in a child."""
    folder = tmp_path / "w07"
    shutil.copytree(ROOT / "assignments" / ASSIGNMENT, folder, ignore=shutil.ignore_patterns("*.ipynb"))
    manifest = json.loads((folder / "public_manifest.json").read_text())
    manifest["entry"]["preload"] = ["numpy", "no_such_module_here"]
    (folder / "public_manifest.json").write_text(json.dumps(manifest))
    shutil.copy(REFERENCE, folder / "attention.py")
    done = run_cli("check", folder / "attention.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "autograder check refused" in done.stderr and "the assignment preloads 'no_such_module_here', which " \
        "cannot be imported" in done.stderr, done.stderr
    assert "tell the course staff that the released assignment names 'no_such_module_here'" in done.stderr
    assert "pip install" not in done.stderr  # the student's Python is not the place to fix a name
    doctor = run_cli("doctor", "--dir", folder, cwd=tmp_path)
    assert doctor.returncode == 1 and "'no_such_module_here', which cannot be imported" in doctor.stdout


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_reference_that_fails_in_the_sandbox_is_refused_with_its_check(tmp_path):
    """1 MiB above the preload is too little for the largest checks, and now and then for loading the file or
    even for the probe's own first call (where the heap grows in 2 MiB steps): whichever fails, the probe
    names it and what to raise."""
    course = _course_with(tmp_path, memory_mib=1)
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, PLAIN, "--course", course, "--db", db)
    assert done.returncode == 2, done.stderr
    assert re.search(r"the reference solution \(.*reference.py\) passed \d+ of 39 checks in this sandbox; "
                     r"(\w+\.\w+ \w+|not loaded): |a worker child .*could not .*(Cannot allocate memory|MemoryError)",
                     done.stderr), done.stderr
    assert "raise `memory_mib` in course.yaml (now 1 MiB" in done.stderr, done.stderr
    assert _stored(db) == 0


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_gradescope_run_refuses_and_tells_the_student_it_did_not_run(tmp_path):
    course = _course_with(tmp_path, preload=["numpy", "no_such_module_here"])
    root = tmp_path / "gs"
    (root / "submission").mkdir(parents=True)
    shutil.copy(PLAIN, root / "submission" / "attention.py")
    done = run_cli("gradescope-run", ASSIGNMENT, "--root", root, "--course", course, cwd=tmp_path)
    assert done.returncode == 2
    assert "gradescope-run refused" in done.stderr and "'no_such_module_here' cannot be imported" in done.stderr
    shown = json.loads((root / "results" / "results.json").read_text())
    assert shown["score"] == 0 and "did not run" in shown["output"]


CUDA_VENV = os.environ.get("AUTOGRADER_TEST_CUDA_VENV", "")


@pytest.mark.slow
@pytest.mark.skipif(not CUDA_VENV, reason="set AUTOGRADER_TEST_CUDA_VENV to a virtualenv holding PyTorch's default "
                                          "(CUDA) build and this package (README: Sandbox, Limits)")
def test_the_example_class_grades_the_same_with_the_default_cuda_build(tmp_path):
    results = {}
    for name, python in (("cpu", sys.executable), ("cuda", str(Path(CUDA_VENV) / "bin" / "python"))):
        build = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                               text=True, check=True).stdout.strip()
        assert ("+cpu" in build) == (name == "cpu"), build
        done = subprocess.run([python, "-m", "autograder", "grade", ASSIGNMENT, "examples/w07_class",
                               REFERENCE, "--json", "--db", tmp_path / f"{name}.db"], cwd=ROOT,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr
        results[name] = {r["student"]: r["score"] for r in map(json.loads, done.stdout.splitlines())}
    assert results["cuda"] == results["cpu"]
    assert results["cuda"]["reference"] == 100


def _package_copy(folder: Path) -> Path:
    """The package's sources, as pip would get them from a clone (so no build files land in the repository)."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, folder / name)
    shutil.copytree(ROOT / "autograder", folder / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.mark.slow
def test_a_student_install_is_told_to_install_torch_and_the_readme_install_checks(tmp_path):
    """A fresh virtualenv with the package and no extra is a real student install without PyTorch; the
    README's student command (the torch extra) is what makes `autograder check` pass."""
    (tmp_path / "package").mkdir()
    package = _package_copy(tmp_path / "package")
    venv = tmp_path / "student"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, str(package)], check=True, timeout=1800, capture_output=True)
    folder = tmp_path / "w07"
    shutil.copytree(ROOT / "assignments" / ASSIGNMENT, folder, ignore=shutil.ignore_patterns("*.ipynb"))
    shutil.copy(REFERENCE, folder / "attention.py")

    def autograder(*args) -> subprocess.CompletedProcess:
        return subprocess.run([str(venv / "bin" / "autograder"), *map(str, args)], cwd=folder, capture_output=True,
                              text=True, timeout=600, env={**os.environ, "PYTHONPATH": ""})

    done = autograder("check", "attention.py")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (f"the assignment preloads numpy, torch, and torch is not installed in the workers' Python ({python})"
            in done.stderr)
    assert f"`{python} -m pip install 'torch==2.13.0' --index-url https://download.pytorch.org/whl/cpu`" in done.stderr
    doctor = autograder("doctor")
    assert doctor.returncode == 1 and "torch is not installed" in doctor.stdout

    readme = (ROOT / "README.md").read_text()
    assert "pip install 'attention-autograder[torch]'" in readme  # the student command
    subprocess.run([*pip, f"{package}[torch]"], check=True, timeout=1800, capture_output=True)
    done = autograder("check", "attention.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All public checks passed" in done.stdout
    assert autograder("doctor").returncode == 0


@pytest.mark.slow
def test_a_dask_worker_whose_environment_cannot_grade_takes_no_task_and_is_named(tmp_path, preload_python):
    pytest.importorskip("distributed", reason="grading on a cluster needs the [dask] extra (make test installs it)")
    course = _course_with(tmp_path, preload=["numpy", "torch", "calls_always_die"])
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, REFERENCE, PLAIN, "--course", course, "--db", db, "--cluster", "local:1",
                   env={"AUTOGRADER_WORKER_PYTHON": preload_python}, timeout=600)
    assert done.returncode == 2, done.stdout + done.stderr
    assert re.search(r"worker tls://127\.0\.0\.1:\d+ cannot grade here: grading refused: this environment cannot "
                     r"grade w07_attention: a worker child under the limits could not answer a call", done.stderr)
    assert "no Dask worker of local:1 can grade" in done.stderr
    assert _stored(db) == 0


@pytest.mark.slow  # a whole command in a subprocess, starting its own sandbox: make test runs it
def test_a_reference_that_does_not_load_in_the_sandbox_is_refused_with_the_reason(tmp_path):
    """A file that does not load fails every check "not run": the probe names why it did not load instead.
    (With memory_mib: 1 this happens now and then for real; here the load fails in every worker child.)"""
    course = _course_with(tmp_path)
    reference = course.parent / "solutions" / ASSIGNMENT / "reference.py"
    reference.write_text(reference.read_text() + "\nimport os as _os\nif _os.getcwd() == _os.environ.get('HOME'):  "
                         "# a worker child's\n    raise MemoryError('no memory left while loading')\n")
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, PLAIN, "--course", course, "--db", db)
    assert done.returncode == 2, done.stderr
    assert re.search(r"the reference solution \(.*reference.py\) passed 0 of 39 checks in this sandbox; not "
                     r"loaded: .*raised MemoryError", done.stderr), done.stderr
    assert "not run: the file did not load" not in done.stderr
    assert "raise `memory_mib` in course.yaml" in done.stderr and _stored(db) == 0
