"""Issue 6: the nbgrader source notebook, `autograder release`, the leak scan, and `autograder check`.

Real nbgrader (generate_assignment, validate) runs in a temporary course directory.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import shutil
import textwrap

import nbformat
import pytest

from autograder.grading.course import CourseError, load_course
from autograder.grading.manifest import MANIFEST_FILE, manifest_data, manifest_text, stub_parameters
from autograder.grading.suite import HIDDEN_FILE, PUBLIC_FILE, load_public_suite, load_suite
from autograder.nbgrader import ReleaseError
from autograder.nbgrader.leaks import scan_release
from autograder.nbgrader.release import release as release_assignment
from autograder.nbgrader.source import build_source, sync_notebook

from conftest import PLAIN, REFERENCE, ROOT, STUB, SUBMISSIONS, compose, run_cli
from nbgrader_course import WRITTEN, make_course, nbgrader, release, with_code

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
SOURCE = ROOT / "assignments" / "w07_attention"


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def graded_cells(notebook) -> dict:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in notebook.cells
            if "grade_id" in c.metadata.get("nbgrader", {})}


@pytest.fixture(scope="module")
def source():
    return nbformat.read(SOURCE / "attention.ipynb", as_version=4)


# ---------------------------------------------------------------- one source of truth

def test_source_notebook_and_manifest_are_generated_from_reference_stub_and_course(course, suite, source):
    assert build_source(course, suite, write=False) == []  # what `autograder release` checks before releasing
    synced = sync_notebook(source, suite, STUB.read_text(), REFERENCE.read_text())
    stale = [c.metadata["nbgrader"]["grade_id"] for c, s in zip(source.cells, synced.cells)
             if (c.source, c.metadata) != (s.source, s.metadata)]
    assert stale == [], f"{stale} are out of date: run `autograder release w07_attention --rebuild`, commit the result"
    public = [e.name for e in suite.checks if e.visibility == "public"]
    parameters = stub_parameters(STUB.read_text(), suite.functions)
    assert (SOURCE / MANIFEST_FILE).read_text() == manifest_text(manifest_data(suite.assignment, public, parameters)), \
        "public_manifest.json is out of date with course.yaml: run `autograder release w07_attention --rebuild`"


def test_solution_regions_are_the_reference_bodies(suite, source):
    reference = load(REFERENCE, "reference_for_test")
    cells = graded_cells(source)
    for function in suite.functions:
        code = textwrap.dedent(inspect.getsource(getattr(reference, function)))
        docstring = ast.get_docstring(ast.parse(code).body[0], clean=False)
        body = code.split(f'"""{docstring}"""', 1)[1].strip("\n")
        region = cells[f"answer_{function}"].source.split("### BEGIN SOLUTION\n")[1].split("\n    ### END SOLUTION")[0]
        assert region == body, function


def test_answer_cells_have_the_stubs_signatures_and_docstrings(suite, source):
    stub, reference = load(STUB, "stub_for_test"), load(REFERENCE, "reference_for_test")
    cells = graded_cells(source)
    for function in suite.functions:
        assert inspect.signature(getattr(stub, function)) == inspect.signature(getattr(reference, function)), function
        namespace = {}
        exec(cells[f"answer_{function}"].source, namespace)  # defines the function; nothing is called
        cell_function = namespace[function]
        assert inspect.signature(cell_function) == inspect.signature(getattr(stub, function)), function
        assert cell_function.__doc__ == getattr(stub, function).__doc__, function


def test_cell_points_are_course_yaml_points(course, source):
    assignment = course.assignment("w07_attention")
    cells = graded_cells(source)
    by_function: dict[str, float] = {}
    for name, config in assignment.checks.items():
        by_function[name.split(".")[0]] = by_function.get(name.split(".")[0], 0) + config.points
    tests = {gid[len("test_"):]: c.metadata["nbgrader"]["points"] for gid, c in cells.items()
             if gid.startswith("test_")}
    assert tests == by_function
    assert sum(tests.values()) == assignment.max_score == 100
    written = {gid[len("written_"):]: c.metadata["nbgrader"]["points"] for gid, c in cells.items()
               if gid.startswith("written_")}
    assert written == assignment.written and len(written) == 2


def test_test_cells_call_the_grading_suite_in_their_hidden_region(suite, source):
    cells = graded_cells(source)
    for function in suite.functions:
        text = cells[f"test_{function}"].source
        visible, hidden = text.split("### BEGIN HIDDEN TESTS")
        assert f'check_function("{function}", globals())' in visible
        assert f'grade_function("w07_attention", "{function}", globals())' in hidden
        assert hidden.strip().endswith("### END HIDDEN TESTS")


def test_the_introduction_counts_the_functions_students_implement(suite, source):
    """The hand-written introduction says how many functions there are in NumPy and in PyTorch."""
    words = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    torch = [f for f in suite.functions if f.endswith("_torch")]
    intro = next(c.source for c in source.cells if c.cell_type == "markdown" and "functions in NumPy" in c.source)
    assert f"{words[len(suite.functions) - len(torch)]} functions in NumPy and {words[len(torch)]} in PyTorch" in intro


def test_sync_refuses_a_notebook_without_a_cell_for_a_function(suite, source):
    broken = nbformat.from_dict(source)
    broken.cells = [c for c in broken.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "test_softmax"]
    with pytest.raises(ReleaseError, match="test_softmax"):
        sync_notebook(broken, suite, STUB.read_text(), REFERENCE.read_text())
    drifted = STUB.read_text().replace("def softmax(S):", "def softmax(S, axis=-1):")
    with pytest.raises(ReleaseError, match="signature"):
        sync_notebook(source, suite, drifted, REFERENCE.read_text())


def test_a_points_change_in_course_yaml_is_refused_until_rebuilt(tmp_path):
    for folder in ("assignments/w07_attention", "solutions/w07_attention"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    text = (ROOT / "course.yaml").read_text()
    assert text.count("score.lecture_example: 2\n") == 1
    (tmp_path / "course.yaml").write_text(text.replace("score.lecture_example: 2\n", "score.lecture_example: 5\n"))
    course = load_course(tmp_path / "course.yaml")
    suite = load_suite(course, "w07_attention")
    stale = {p.name for p in build_source(course, suite, write=False)}
    assert stale == {"attention.ipynb", MANIFEST_FILE}
    with pytest.raises(ReleaseError, match="--rebuild"):
        release_assignment(course, suite, tmp_path / "release")
    assert {p.name for p in build_source(course, suite, write=True)} == stale
    assert build_source(course, suite, write=False) == []
    rebuilt = graded_cells(nbformat.read(tmp_path / "assignments/w07_attention/attention.ipynb", as_version=4))
    assert rebuilt["test_score"].metadata["nbgrader"]["points"] == 15
    assert "# score: 15 points." in rebuilt["test_score"].source
    manifest = json.loads((tmp_path / "assignments/w07_attention" / MANIFEST_FILE).read_text())
    assert manifest["entry"]["checks"]["score.lecture_example"] == 5



def test_one_stale_source_file_is_named_in_the_singular(tmp_path):
    for folder in ("assignments/w07_attention", "solutions/w07_attention"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "course.yaml", tmp_path / "course.yaml")
    reference = tmp_path / "solutions/w07_attention/reference.py"
    reference.write_text(reference.read_text().replace("    return ", "    return  ", 1))
    course = load_course(tmp_path / "course.yaml")
    suite = load_suite(course, "w07_attention")
    assert [p.name for p in build_source(course, suite, write=False)] == ["attention.ipynb"]
    with pytest.raises(ReleaseError, match=r"^assignments/w07_attention/attention\.ipynb no longer matches the "):
        release_assignment(course, suite, tmp_path / "release")


# ---------------------------------------------------------------- the release

@pytest.fixture(scope="module")
def course_dir(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("nbgrader_course"))
    release(root)
    return root


@pytest.fixture(scope="module")
def released(course_dir):
    return course_dir / "release" / "w07_attention"


def test_release_ships_the_notebook_stub_public_checks_and_manifest(released):
    assert sorted(p.name for p in released.iterdir()) == sorted(
        ["attention.ipynb", "attention.py", PUBLIC_FILE, MANIFEST_FILE])
    assert (released / "attention.py").read_text() == STUB.read_text()
    notebook = nbformat.read(released / "attention.ipynb", as_version=4)
    cells = graded_cells(notebook)
    assert "raise NotImplementedError()" in cells["answer_softmax"].source
    assert "grade_function" not in cells["test_softmax"].source
    assert cells["written_why_scale_by_sqrt_dk"].source == "YOUR ANSWER HERE"
    assert "!autograder check attention.ipynb" in notebook.cells[-1].source


def test_nothing_from_solutions_or_hidden_checks_is_released(suite, released):
    """Every released file against the reference's bodies, the hidden checks' names and their own numbers."""
    reference = load(REFERENCE, "reference_for_scan")
    needles = {}
    for function in suite.functions:
        code = textwrap.dedent(inspect.getsource(getattr(reference, function)))
        docstring = ast.parse(code).body[0].body[0]
        for line in code.splitlines()[docstring.end_lineno:]:
            if len(line.strip()) >= 8 and not line.strip().startswith("#"):
                needles[line.strip()] = f"reference {function}"
    hidden = [e for e in suite.checks if e.visibility == "hidden"]
    assert len(hidden) >= 15 and len(needles) >= 20
    needles.update({e.name: "hidden check name" for e in hidden})
    needles.update({e.check.run.__name__: "hidden check function" for e in hidden})
    needles.update({"### BEGIN SOLUTION": "marker", "### BEGIN HIDDEN TESTS": "marker",
                    "grade_function": "hidden part"})
    hidden_numbers = _numbers((ROOT / "solutions" / "w07_attention" / HIDDEN_FILE).read_text()) - \
        _numbers((SOURCE / PUBLIC_FILE).read_text())
    distinctive = {n for n in hidden_numbers if not (float(n).is_integer() and abs(n) < 100)}
    assert 512 in distinctive  # T = 512 is the hidden checks' own
    found = []
    for path in released.rglob("*"):
        text = path.read_text()
        found += [(path.name, why, needle) for needle, why in needles.items() if needle in text]
        code = [_python(c.source) for c in nbformat.reads(text, 4).cells if c.cell_type == "code"] \
            if path.suffix == ".ipynb" else [text] if path.suffix == ".py" else []
        found += [(path.name, "hidden number", n) for n in distinctive if any(n in _numbers(c) for c in code)]
    assert found == []


def _python(cell: str) -> str:
    """A notebook cell as plain Python: IPython's `!shell` and `%magic` lines become `pass`."""
    return "\n".join(line[:len(line) - len(line.lstrip())] + "pass" if line.lstrip()[:1] in ("!", "%") else line
                     for line in cell.splitlines())


def _numbers(code: str) -> set:
    return {node.value for node in ast.walk(ast.parse(code))
            if isinstance(node, ast.Constant) and type(node.value) in (int, float)}


def test_the_leak_scan_finds_a_planted_leak(suite, source, released, tmp_path):
    assert scan_release(released, suite, source) == []
    copy = tmp_path / "w07_attention"
    shutil.copytree(released, copy)
    with open(copy / "attention.py", "a") as stub:
        stub.write("\n# see softmax.matches_reference\nT = 512\n")
    (copy / "notes.md").write_text("e = np.exp(S - S.max(axis=-1, keepdims=True))\n")
    found = {(leak.path.name, leak.what.split(":")[0]) for leak in scan_release(copy, suite, source)}
    assert ("attention.py", "the name of hidden check softmax.matches_reference") in found
    assert ("attention.py", "a number used only by the hidden checks") in found
    assert ("notes.md", "a line of the reference's softmax") in found


def test_the_public_suite_loads_from_the_release_alone(course, released, tmp_path):
    alone = tmp_path / "student" / "w07_attention"  # no course.yaml above, no solutions/ anywhere near
    shutil.copytree(released, alone)
    public = load_public_suite(alone)
    assert public.reference is None
    assert {e.visibility for e in public.checks} == {"public"}
    assert {e.name: e.points for e in public.checks} == {
        name: config.points for name, config in course.assignment("w07_attention").checks.items()
        if name in {e.name for e in public.checks}}
    assert len(public.checks) == 19
    (alone / MANIFEST_FILE).unlink()
    with pytest.raises(CourseError, match="public_manifest.json is missing"):
        load_public_suite(alone)


# ---------------------------------------------------------------- nbgrader validate

def _validate(released, tmp_path, notebook):
    folder = tmp_path / "w07_attention"
    shutil.copytree(released, folder)
    nbformat.write(notebook, folder / "attention.ipynb")
    return nbgrader("validate", "attention.ipynb", cwd=folder, timeout=600)


def test_nbgrader_validate_passes_with_the_reference_pasted_in(suite, released, tmp_path):
    done = _validate(released, tmp_path, with_code(released, REFERENCE.read_text(), suite.functions, WRITTEN))
    assert "Success! Your notebook passes all the tests." in done.stdout, done.stdout + done.stderr


def test_nbgrader_validate_fails_the_untouched_release(suite, course, released, tmp_path):
    done = _validate(released, tmp_path, nbformat.read(released / "attention.ipynb", as_version=4))
    expected = len(suite.functions) + len(course.assignment("w07_attention").written)
    assert f"VALIDATION FAILED ON {expected} CELL(S)" in done.stdout, done.stdout + done.stderr
    assert "ChecksFailed: 5 of 5 public checks of softmax failed" in done.stdout
    assert "softmax.lecture_example: softmax is not implemented yet" in done.stdout


# ---------------------------------------------------------------- autograder check

def test_check_passes_the_reference_and_fails_the_stub(released, tmp_path):
    folder = tmp_path / "w07_attention"
    shutil.copytree(released, folder)
    shutil.copy(REFERENCE, folder / "mine.py")
    good = run_cli("check", "mine.py", cwd=folder)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "19 of 19 public checks passed" in good.stdout
    bad = run_cli("check", "attention.ipynb", cwd=folder)  # the untouched notebook, as released
    assert bad.returncode == 1
    assert "0 of 19 public checks passed" in bad.stdout
    assert "softmax is not implemented yet (it raises NotImplementedError)" in bad.stdout
    assert "Traceback" not in bad.stdout + bad.stderr


def test_check_gives_the_messages_grade_gives(released, tmp_path):
    folder = tmp_path / "w07_attention"
    shutil.copytree(released, folder)
    buggy = compose(folder, "attention", SUBMISSIONS / "buggy" / "softmax_no_max_subtraction.py")
    checked = run_cli("check", buggy.name, cwd=folder)
    # Graded as a student's: the assignment's own file in the assignment's folder has no student id to take.
    handed_in = shutil.copy(buggy, tmp_path / "s0001.py")
    graded = run_cli("grade", "w07_attention", handed_in, "--json", "--db", tmp_path / "grades.db")
    assert checked.returncode == 1 and graded.returncode == 0, checked.stderr + graded.stderr
    public_failures = [t for t in json.loads(graded.stdout.splitlines()[0])["tests"]
                       if t["visibility"] == "public" and t["status"] != "passed"]
    assert [t["name"] for t in public_failures] == ["softmax.large_scores_stable"]
    assert public_failures[0]["message"] in checked.stdout
    assert "matches_reference" not in checked.stdout  # hidden checks are not run, nor named


def test_check_outside_a_released_folder_says_what_to_do(tmp_path):
    shutil.copy(PLAIN, tmp_path / "attention.py")
    done = run_cli("check", "attention.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "public_manifest.json is missing" in done.stderr and "--dir" in done.stderr


def test_check_given_an_assignment_name_too_says_it_takes_the_file_alone(tmp_path):
    """`grade` takes the assignment and then the files; `check` the file alone. Given both, argparse had answered
    "unrecognized arguments: attention.py", which does not say what to drop."""
    shutil.copy(PLAIN, tmp_path / "attention.py")
    done = run_cli("check", "w07_attention", "attention.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "check takes one file only" in done.stderr and "`autograder check attention.py`" in done.stderr, done.stderr
