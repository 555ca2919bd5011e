"""Issues 15 and 13: nbgrader and Dask are extras. Grading needs nothing from Jupyter or Dask; what needs
either says how to install it; the Gradescope bundle installs the package without nbgrader.

"Not installed" is made real in a subprocess: the Jupyter stack's and Dask's modules are set to None in
sys.modules, so importing any of them raises ModuleNotFoundError, as in an environment without them.
"""
from __future__ import annotations

import csv
import subprocess
import sys
import tomllib

import pytest

from autograder.cli.gradescope import run_script
from autograder.grading.results import CheckResult, SubmissionResult
from autograder.grading.store import Store
from autograder.outputs.bundle import bundle_members

from conftest import REFERENCE, ROOT, repository_env

ASSIGNMENT = "w07_attention"
JUPYTER = ("nbgrader", "nbconvert", "nbclient", "jupyter_server", "notebook", "jupyterlab", "ipykernel",
           "sqlalchemy", "alembic")
DASK = ("dask", "distributed")
EXTRAS = JUPYTER + DASK
HINT = "pip install 'attention-autograder[nbgrader]'"


def _without_extras(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    """The `autograder` command in an interpreter where neither the Jupyter stack nor Dask can be imported."""
    script = (f"import sys\nfor name in {EXTRAS!r}:\n    sys.modules[name] = None\n"
              "from autograder.cli import main\ncode = main(sys.argv[1:])\n"
              f"print('imported:', sorted(n for n in sys.modules if n.split('.')[0] in {EXTRAS!r} "
              "and sys.modules[n] is not None))\nsys.exit(code)\n")
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=repository_env())


def test_nbgrader_and_dask_are_extras_that_make_installs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith(("nbgrader", "dask", "distributed"))]
    assert project["optional-dependencies"]["nbgrader"] == ["nbgrader==0.9.6"]
    assert {d.split(">")[0] for d in project["optional-dependencies"]["dask"]} == {"dask", "distributed",
                                                                                  "cryptography"}
    assert {d.split(">")[0] for d in project["optional-dependencies"]["slurm"]} == {"dask-jobqueue"}
    assert "pip install --quiet -e '.[torch,test,nbgrader,dask,slurm]'" in (ROOT / "Makefile").read_text()


def test_the_gradescope_bundle_installs_the_package_without_nbgrader(course):
    members = bundle_members(course, ASSIGNMENT, run_script(ASSIGNMENT))
    setup = next(m for m in members if m.name == "setup.sh").data.decode()
    assert "pip install /autograder/source\n" in setup
    assert "nbgrader" not in setup and "jupyter" not in setup.lower()


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_what_needs_nbgrader_says_how_to_install_it(tmp_path):
    db = tmp_path / "grades.db"
    with Store(db) as store:
        store.save(SubmissionResult(student="s1", assignment=ASSIGNMENT, file="s1.py", sha256="0" * 64,
                                    suite_version="v", seed=1, sandbox="bwrap",
                                    tests=(CheckResult("score.a", "score", "public", "passed", 2.0, 2.0),)))
    done = _without_extras("export", "nbgrader", "--db", db, "--root", tmp_path)
    assert done.returncode == 2 and HINT in done.stderr and "Traceback" not in done.stderr
    done = _without_extras("release", ASSIGNMENT, "--out", tmp_path / "release")
    assert done.returncode == 2 and HINT in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "release").exists()


def test_grading_on_a_cluster_without_dask_says_how_to_install_it(tmp_path):
    done = _without_extras("grade", ASSIGNMENT, REFERENCE, "--db", tmp_path / "g.db", "--cluster", "local:1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--cluster needs Dask" in done.stderr and "pip install 'attention-autograder[dask]'" in done.stderr
    assert not (tmp_path / "g.db").exists()


@pytest.mark.slow
def test_grading_and_its_outputs_need_nothing_from_jupyter_or_dask(tmp_path):
    db = tmp_path / "grades.db"
    done = _without_extras("grade", ASSIGNMENT, REFERENCE, "--db", db, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert "imported: []" in done.stdout
    out = tmp_path / "grades.csv"
    for command in (("export", "csv", "--db", db, "--out", out), ("report", "--db", db, "--out", tmp_path / "r"),
                    ("export", "gradescope", "--db", db, "--out", tmp_path / "gs")):
        done = _without_extras(*command)
        assert done.returncode == 0, done.stderr
        assert "imported: []" in done.stdout
    assert next(csv.DictReader(out.open()))["total"] == "100"
