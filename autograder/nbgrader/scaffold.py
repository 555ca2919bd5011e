"""`autograder new`: a new assignment, scaffolded as a working example for an instructor to edit.

It writes what an assignment is made of, for two small functions: double
(an array in, an array out) and signs (an array in, a dict out):
- assignments/NAME/: the stub MODULE.py, public_checks.py and a short
  nbgrader source notebook MODULE.ipynb (its generated cells filled in here,
  as `autograder release --rebuild` would) with public_manifest.json;
- solutions/NAME/: reference.py, hidden_checks.py and an empty misconception catalogue;
- NAME's entry at the end of course.yaml, with the checks' points.
The reference then grades 100 %, the stub 0, and the assignment releases
through nbgrader. The README's "Writing a new assignment" walks through it.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from autograder.grading.course import Course, CourseError, load_course
from autograder.grading.suite import HIDDEN_FILE, MISCONCEPTIONS_FILE, PUBLIC_FILE, REFERENCE_FILE, load_suite
from autograder.nbgrader.source import build_source, nbgrader_cell

TEMPLATES = Path(__file__).parent / "templates"
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
ENTRY = """\
  @NAME@:
    title: "@NAME@ (rename me)"
    module: @MODULE@  # students hand in @MODULE@.py or @MODULE@.ipynb
    preload: [numpy]  # imported once per worker; add torch if the checks use it
    checks:  # points per check; the public ones are in assignments/@NAME@/public_checks.py
      double.small: 1
      double.matches_reference: 2
      signs.small: 1
"""


def new_assignment(course: Course, name: str, module: str | None = None) -> list[Path]:
    """Scaffold assignment `name` (student module `module`, default `name`) in `course`; the files written."""
    module = module or name
    for what, value in (("assignment name", name), ("module", module)):
        if not _IDENTIFIER.fullmatch(value):
            raise CourseError(f"{value!r} cannot be an {what}: use lowercase letters, digits and _, starting with a "
                              "letter (e.g. week08_convolution)")
    source, solution = course.root / "assignments" / name, course.root / "solutions" / name
    if name in course.assignments or source.exists() or solution.exists():
        raise CourseError(f"{name} exists already (in {course.path} or as {source} or {solution}); pick another "
                          "name, or remove the old one first")
    written = [_template("stub.py", source / f"{module}.py", name, module),
               _template("public_checks.py", source / PUBLIC_FILE, name, module),
               _template("reference.py", solution / REFERENCE_FILE, name, module),
               _template("hidden_checks.py", solution / HIDDEN_FILE, name, module),
               _template("misconceptions.py", solution / MISCONCEPTIONS_FILE, name, module)]
    notebook = source / f"{module}.ipynb"
    nbformat.write(_notebook(name), notebook)
    _add_entry(course.path, name, module)
    course = load_course(course.path)
    written += [notebook, course.path]
    written += [p for p in build_source(course, load_suite(course, name), write=True) if p not in written]
    return written


def _template(template: str, path: Path, name: str, module: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (TEMPLATES / template).read_text().replace("@NAME@", name).replace("@MODULE@", module)
    path.write_text(text)
    return path


def _notebook(name: str):
    """The source notebook's cells; the generated ones (imports, answer_, test_) are filled by build_source."""
    notebook = nbformat.v4.new_notebook()

    def cell(kind: str, grade_id: str, source: str, solution: bool = False, grade: bool = False):
        return nbgrader_cell(notebook, kind, grade_id, source, solution, grade)
    notebook.cells = [
        cell("markdown", "intro", f"# {name}\n\nWrite what students should learn here; the graded cells below "
                                  "are generated from the stub, the reference and course.yaml."),
        cell("code", "imports", ""),
        cell("markdown", "task_double", "## double\n\nImplement `double` as its docstring says, then run the "
                                        "test cell below it."),
        cell("code", "answer_double", "", solution=True),
        cell("code", "test_double", "", grade=True),
        cell("markdown", "task_signs", "## signs\n\nImplement `signs` as its docstring says: it returns a dict, "
                                       "not an array."),
        cell("code", "answer_signs", "", solution=True),
        cell("code", "test_signs", "", grade=True),
    ]
    notebook.metadata = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                        "name": "python3"}}
    return notebook


def _add_entry(course_file: Path, name: str, module: str) -> None:
    """Append the entry under `assignments:`, which must be course.yaml's last top-level key to keep its comments."""
    text = course_file.read_text()
    top_level = [line.split(":")[0] for line in text.splitlines() if line and not line[0].isspace()
                 and not line.startswith("#")]
    if not top_level or top_level[-1] != "assignments":
        raise CourseError(f"{course_file}: `assignments:` is not the file's last top-level key, so the new entry "
                          f"cannot simply be added at the end; move it last, or add this yourself:\n"
                          + ENTRY.replace("@NAME@", name).replace("@MODULE@", module))
    course_file.write_text(text.rstrip("\n") + "\n" + ENTRY.replace("@NAME@", name).replace("@MODULE@", module))
