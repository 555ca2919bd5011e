"""Issue 24: a library the class imports is imported once per sandbox, not once per hand-in.

`grade` reads the import statements of a sample of the class (grading.class_imports) and each zygote
imports, where it can, the modules more hand-ins import than there are zygotes (sandbox.libraries).
"""
from __future__ import annotations

import dataclasses
import math
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
import yaml

from autograder.grading.batch import grade_batch
from autograder.grading.class_imports import SAMPLE, class_imports, imported_names
from autograder.grading.course import load_course
from autograder.grading.discover import find_submissions
from autograder.grading.station import protections_for
from autograder.grading.store import Store
from autograder.grading.suite import load_suite
from autograder.sandbox import notebook_modules
from autograder.sandbox.protections import probe
from autograder.sandbox.zygote import Sandbox

from conftest import PLAIN, ROOT, private_course, run_cli

ASSIGNMENT = "w07_attention"
# Top-level code that says whether the sandbox had imported matplotlib.pyplot before the file's own import.
PRELOADED_HEADER = ('import sys\nprint("loaded before my import:", "matplotlib.pyplot" in sys.modules)\n'
                    'import matplotlib.pyplot')


def _class(folder: Path, headers: list[str]) -> list:
    """A flat folder of .py hand-ins, each plain.py below its header; what `grade` finds there."""
    folder.mkdir()
    for number, header in enumerate(headers):
        (folder / f"s{number:03d}.py").write_text(header + "\n" + PLAIN.read_text())
    return find_submissions([folder], ASSIGNMENT, "attention", folder)


def _assignment(**changes):
    assignment = load_course(ROOT / "course.yaml").assignment(ASSIGNMENT)
    return dataclasses.replace(assignment, **changes)


def test_a_notebook_and_a_file_name_the_modules_they_import(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("from the lecture: attention is selective retrieval"),
        nbformat.v4.new_code_cell("import numpy as np, matplotlib.pyplot as plt\nx = 1; import not_at_line_start"),
        nbformat.v4.new_code_cell("def f():\n    from IPython.display import (display,\n        HTML)\n"
                                  "from . import relative\nfrom scipy import special as sp"),
    ])
    path = tmp_path / "attention.ipynb"
    nbformat.write(notebook, path)
    found = imported_names(path.read_text())
    assert {"numpy", "matplotlib.pyplot", "IPython.display", "IPython.display.display", "scipy",
            "scipy.special"} <= found
    assert not {name for name in found if "relative" in name or "not_at_line_start" in name or "lecture" in name}
    assert imported_names("import a.b as c, d\n  from e import *\n") == {"a.b", "d", "e"}
    # Shown to the TA when chosen: names of a size a module's name has, in ASCII.
    assert imported_names(f"import matplotlib.{'a' * 200}\nimport numpyé\nfrom yaml import {'b' * 96}") == {"yaml"}


def test_a_module_is_preloaded_when_more_hand_ins_import_it_than_there_are_sandboxes(tmp_path):
    found = _class(tmp_path / "class", [
        "import matplotlib.pyplot as plt\nimport helper_they_write_themselves",
        "from matplotlib import pyplot\nimport helper_they_write_themselves",
        "import matplotlib.pyplot\nimport nbformat\nimport helper_they_write_themselves",
        "import math\nimport numpy\nfrom autograder.nbgrader.inkernel import check_function",
    ])
    assignment = _assignment()
    two = class_imports(found, 2, assignment)
    # Three hand-ins against two zygotes: the package comes with its module; the standard library, the
    # preload, the grader's own package, what one hand-in names and what is not installed are left out.
    assert two.modules == ("matplotlib.pyplot",) and two.imported_by == (3,) and two.sampled == 4
    assert "matplotlib.pyplot (3 of 4 hand-ins read)" in two.notes()[0]
    assert class_imports(found, 3, assignment).modules == ()  # three hand-ins, three zygotes: no gain
    assert class_imports(found, 1, _assignment(preload_class_imports=False)).modules == ()


def test_a_library_the_class_imports_that_is_not_installed_is_named_before_grading(tmp_path):
    """A hand-in importing a library the grader lacks will not load: the TA hears of it once, with the command
    that installs it, before the class is graded, and not of a library only one hand-in names."""
    found = _class(tmp_path / "class", [
        "from scipy.special import softmax as sp_softmax\nimport einops",
        "import scipy\nimport scipy.special",
        "import scipy.special\nimport my_own_helpers",
        "import my_own_helpers\nimport numpy\nimport sklearn",
        "from sklearn.decomposition import PCA\nfrom google.colab import drive",
        "import google.colab\nfrom IPython.display import Markdown",
        "from IPython.display import display",
    ])
    for assignment in (_assignment(), _assignment(preload_class_imports=False)):
        imports = class_imports(found, 2, assignment)
        assert imports.missing == ("scipy", "my_own_helpers", "sklearn") and imports.missing_by == (3, 2, 2)
        note = imports.notes()[-1]
        # google.colab and IPython.display are not named: a notebook's worker is given them (sandbox.notebook_modules).
        assert note.startswith("not installed here, but imported by hand-ins: scipy (3 of 7 hand-ins read), "
                               "my_own_helpers (2 of 7 hand-ins read), sklearn (2 of 7 hand-ins read)")
        # Installed under the name pip knows it by.
        assert f"`{sys.executable} -m pip install scipy my_own_helpers scikit-learn`" in note and "--force" in note
    assert notebook_modules.made("IPython.display.Markdown") and notebook_modules.made("google.colab.drive")
    assert not notebook_modules.made("IPython.core.display") and not notebook_modules.made("google.protobuf")
    installed = _class(tmp_path / "installed", ["import yaml", "import yaml"])
    assert class_imports(installed, 2, _assignment()).missing == ()


def test_the_sample_stands_for_the_class_in_proportion(tmp_path):
    size = 2 * SAMPLE + 50
    importers = set(random.Random(0).sample(range(size), size // 5))  # 50 of 250, in no order
    found = _class(tmp_path / "class", ["import yaml" if n in importers else "" for n in range(size)])
    assignment = _assignment()
    sampled = class_imports(found, 2, assignment)
    assert sampled.sampled == SAMPLE and sampled.modules == ("yaml",)
    seen = sampled.imported_by[0]  # of 100 read; about 20
    assert 10 <= seen <= 30
    # Those stand for seen * 250 / 100 hand-ins of the class: worth it for fewer zygotes than that.
    most = math.ceil(seen * size / SAMPLE) - 1
    assert class_imports(found, most, assignment).modules == ("yaml",)
    assert class_imports(found, most + 1, assignment).modules == ()


def test_the_sample_sees_a_class_whose_ids_alternate(tmp_path):
    """Every other hand-in imports it (two sections, say): a sample at a fixed stride (every other one,
    for twice SAMPLE) would miss them all."""
    size = 2 * SAMPLE
    found = _class(tmp_path / "class", ["import yaml" if n % 2 else "" for n in range(size)])
    sampled = class_imports(found, 2, _assignment())
    assert sampled.modules == ("yaml",) and 30 <= sampled.imported_by[0] <= 70
    assert class_imports(found, 2, _assignment()) == sampled  # the same class, the same sample


def test_an_import_that_fails_hangs_or_exits_is_skipped_and_the_next_one_still_imports(tmp_path):
    modules = {"hangs": "while True:\n    pass\n", "sleeps": "import time\ntime.sleep(60)\n",
               "exits": "raise SystemExit(3)\n", "raises": "1 / 0\n", "fine": "VALUE = 1\n"}
    for name, source in modules.items():
        (tmp_path / f"{name}.py").write_text(source)
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from autograder.sandbox.libraries import import_if_possible
        skipped = import_if_possible(["hangs", "sleeps", "exits", "raises", "no_such_module", "fine"], seconds=0.3)
        print(skipped, "fine" in sys.modules, "hangs" in sys.modules)
        del sys.modules["fine"]
        # Each may take 0.3 s, all of them 0.5 s: after two hangs, nothing more is tried.
        skipped = import_if_possible(["hangs", "sleeps", "fine"], seconds=0.3, in_all=0.5)
        print(skipped, "fine" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == "['hangs', 'sleeps', 'exits', 'raises', 'no_such_module'] True False"
    assert second == "['hangs', 'sleeps', 'fine'] False"


LOCAL_CLUSTER = pytest.param(("--cluster", "local:1"), True, marks=pytest.mark.slow, id="cluster")


@pytest.mark.parametrize(("where", "preload_class_imports"), [(("--jobs", "1"), True), (("--jobs", "1"), False),
                                                               LOCAL_CLUSTER])
def test_grade_imports_what_the_class_imports_in_the_sandbox_before_any_hand_in(tmp_path, where,
                                                                              preload_class_imports):
    if "--cluster" in where:
        pytest.importorskip("distributed", reason="grading on a cluster needs the [dask] extra")
    course_file = private_course(tmp_path)
    config = yaml.safe_load(course_file.read_text())
    config["assignments"][ASSIGNMENT]["preload_class_imports"] = preload_class_imports
    course_file.write_text(yaml.safe_dump(config))
    _class(tmp_path / "class", [PRELOADED_HEADER] * 3)
    db = tmp_path / "grades.db"
    done = run_cli("grade", ASSIGNMENT, tmp_path / "class", "--db", db, *where, "--course", course_file)
    assert done.returncode == 0, done.stderr
    assert ("matplotlib.pyplot (3 of 3 hand-ins read)" in done.stderr) is preload_class_imports
    with Store(db) as store:
        results = store.results(ASSIGNMENT)
    assert len(results) == 3 and {result.score for result in results} == {100.0}
    # The first line: matplotlib's own import may print a warning after it.
    assert {result.printed.splitlines()[0] for result in results} == {
        f"loaded before my import: {preload_class_imports}"}


def test_grading_processes_started_without_a_launched_sandbox_import_the_class_imports_too(tmp_path):
    """As `regrade` grades, and as a grading process that died is replaced: from Setup.class_imports."""
    course = load_course(ROOT / "course.yaml")
    suite = load_suite(course, ASSIGNMENT)
    found = _class(tmp_path / "class", [PRELOADED_HEADER] * 2)
    results = []
    with Store(tmp_path / "grades.db") as store:
        grade_batch(course, suite, protections_for("auto"), found, store, 1, results.append,
                    class_imports=("matplotlib.pyplot",))
    assert [result.printed.splitlines()[0] for result in results] == ["loaded before my import: True"] * 2


def test_regrade_preloads_what_the_stored_hand_ins_import(tmp_path):
    course_file = private_course(tmp_path)
    _class(tmp_path / "class", [PRELOADED_HEADER] * 3)
    db = tmp_path / "grades.db"
    assert run_cli("grade", ASSIGNMENT, tmp_path / "class", "--db", db, "--jobs", "1",
                   "--course", course_file).returncode == 0
    done = run_cli("regrade", ASSIGNMENT, "--db", db, "--jobs", "1", "--preview", "--course", course_file)
    assert done.returncode == 0, done.stderr
    assert "matplotlib.pyplot (3 of 3 hand-ins read)" in done.stderr


def test_a_class_import_that_starts_a_thread_is_dropped_and_the_zygote_started_again(public_python):
    """A fork keeps only the forking thread, and any lock another thread held stays held in the child:
    a zygote whose class imports started one is started again without them. The module that starts a
    thread is installed in a Python of the test's own (conftest.public_python)."""
    site_packages = next(Path(public_python).parent.parent.glob("lib/python*/site-packages"))
    module = site_packages / "starts_a_thread_when_imported.py"
    module.write_text("import threading, time\n"
                      "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n")
    assignment = _assignment()
    try:
        with Sandbox(probe("auto", python=public_python), assignment.preload, warmup=assignment.warmup,
                     class_imports=("matplotlib.pyplot", "starts_a_thread_when_imported")) as sandbox:
            assert sandbox.class_imports == ()
            assert len(os.listdir(f"/proc/{sandbox.zygote_pid()}/task")) == 1
        with Sandbox(probe("auto", python=public_python), assignment.preload, warmup=assignment.warmup,
                     class_imports=("matplotlib.pyplot",)) as sandbox:
            assert sandbox.class_imports == ("matplotlib.pyplot",)  # a library that starts none is kept
    finally:
        module.unlink()
