"""What a hand-in is, whose it is, and what each output may show (issue 20), through the commands a TA runs.

One class holds every kind of bad hand-in beside honest ones. It is graded,
reported and exported in every format once; each test then reads what those
commands wrote: every honest student written correctly, each problem named
for the student it belongs to, nothing larger than the feedback budget.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import socket
import sqlite3
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.grading.discover import find_submissions
from autograder.grading.found import LayoutError
from autograder.grading.results import CHECK_BUDGET, SUBMISSION_BUDGET
from autograder.grading.store import Store

from conftest import PLAIN, REFERENCE, STUB, run_cli

ASSIGNMENT = "w07_attention"
HONEST = ["alice", "bob", "=SUM(A1)", "printer"]
# A correct submission that prints its arguments: during hidden checks, those are hidden inputs.
PRINTER = '''
_padding_mask = padding_mask


def padding_mask(lengths, n_k):
    print("ARGS-SEEN", repr(lengths), n_k)
    return _padding_mask(lengths, n_k)
'''
# A reply about as large as the wire allows: nested tuples of objects whose type names are 300 characters long.
# The wire refuses a value whose description is over sandbox.values.VALUE_SIZE (512 kB; each of these objects
# takes some 360 bytes of it), so 64 tuples of 20 arrive and are judged; 36 each (830 kB) would be refused
# before the grader builds any text of them, and the budget below would go untested.
HOSTILE = '''
_Big = type("B" * 300, (), {})


_REPLY = ((_Big(),) * 20,) * 64  # built once: the check's time limit is a multiple of the reference's


def softmax(S):
    return _REPLY


def context(A, V):
    raise ValueError("z" * 100000)
'''
PROBLEMS = {  # student -> words their message must hold
    "fifo": "named pipe", "sock": "socket", "dave": "folder", "oscar": "over the 50 MB limit",
}
# The class folder's to fix, not the student's: a link (a folder copied keeping links), two files giving one id,
# an id no output can hold. Named for the TA, and nothing is stored: no zero for a real student, no made-up id.
UNSTORED = {"mallory.py is a symbolic link": "mallory", "trudy": "trudy", "path separator": "Eve_Mallory_1",
            "control, format or invisible": "bad_[2Jname", "2 hand-ins give the student id 'Zed'": "Zed",
            "nl\\n[99] mallory": "nl\n[99] mallory: 100", "heidi.py is a hard link": "heidi"}


def _class(folder: Path, secret: Path) -> None:
    """Honest hand-ins beside every kind of object that is not one."""
    (folder / "bob").mkdir(parents=True)
    shutil.copy(PLAIN, folder / "alice.py")
    shutil.copy(PLAIN, folder / "bob" / "attention.py")
    shutil.copy(PLAIN, folder / "=SUM(A1).py")  # a formula, if a spreadsheet ran it
    (folder / "printer.py").write_text(PLAIN.read_text() + PRINTER)
    (folder / "hostile.py").write_text(PLAIN.read_text() + HOSTILE)
    (folder / "mallory.py").symlink_to(REFERENCE)  # scored 100/100 before
    (folder / "trudy").symlink_to(REFERENCE.parent, target_is_directory=True)  # a student folder that is a link
    shutil.copy(REFERENCE, secret)
    os.link(secret, folder / "heidi.py")  # a hard link to a course file
    os.mkfifo(folder / "fifo.py")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(folder / "sock.py"))
    (folder / "dave.py").mkdir()
    with open(folder / "oscar.py", "wb") as big:
        big.truncate(60 << 20)
    shutil.copy(PLAIN, folder / "Eve\\Mallory_1.py")  # an LMS's folder name built from a display name
    shutil.copy(PLAIN, folder / "bad\x1b[2Jname.py")
    shutil.copy(PLAIN, folder / "nl\n[99] mallory: 100.py")  # a name that, printed raw, starts a line of its own
    (folder / "empty\n[98] kim: 100").mkdir()  # and a folder holding no hand-in, named as such
    shutil.copy(PLAIN, folder / "Zed.py")
    shutil.copy(PLAIN, folder / "zed.py")


# The class through grade, report and every export is an end-to-end run of a whole class (five commands), so
# its tests are marked slow (left out of `make check`), as are the nbgrader round trip and a local Dask cluster.
@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """The class graded, reported and exported in every format by the real CLI: (place, {command: result})."""
    place = tmp_path_factory.mktemp("handins")
    _class(place / "class", place / "course_file.py")
    db = place / "grades.db"
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # nbgrader's alembic
    done = {"grade": run_cli("grade", ASSIGNMENT, place / "class", "--db", db, "--jobs", "2")}
    done["report"] = run_cli("report", "--db", db, "--out", place / "report")
    done["csv"] = run_cli("export", "csv", "--db", db, "--out", place / "grades.csv")
    done["gradescope"] = run_cli("export", "gradescope", "--db", db, "--out", place / "gradescope")
    done["nbgrader"] = run_cli("export", "nbgrader", "--db", db, "--gradebook", place / "gradebook.db",
                               "--root", place, env=env)
    return place, done


def _results(place: Path) -> dict:
    with Store(place / "grades.db") as store:
        return {r.student: r for r in store.results(ASSIGNMENT)}


@pytest.mark.slow
def test_only_regular_files_are_hand_ins_and_each_other_object_is_its_students_problem(outputs):
    place, done = outputs
    assert done["grade"].returncode == 0, done["grade"].stderr
    results = _results(place)
    for student, words in PROBLEMS.items():
        assert words in results[student].problem, (student, results[student].problem)
        assert results[student].score == 0
        assert f"\n{student}: not loaded: " in done["grade"].stderr  # listed at the end, for the TA
    for student in HONEST:
        assert results[student].score == 100 and not results[student].problem, student
    refused = [line for line in done["grade"].stderr.splitlines() if line.startswith("not graded, nothing stored: ")]
    assert len(refused) == 2 * len(UNSTORED), refused  # before grading and at the end; two colliding files: one line
    for words, student in UNSTORED.items():
        assert any(words in line for line in refused) and student not in results, (words, refused)
    assert not any(line.startswith(("[99]", "[98]")) for line in done["grade"].stderr.splitlines())
    assert "empty\\n[98] kim: 100/" in done["grade"].stderr


@pytest.mark.slow
def test_ids_are_settled_at_discovery_and_collisions_are_both_flagged_naming_both_files(outputs):
    place, done = outputs
    results = _results(place)
    assert set(results) == set(HONEST) | set(PROBLEMS) | {"hostile"}  # nothing merged, nothing overwritten
    collision = next(line for line in done["grade"].stderr.splitlines() if "give the student id" in line)
    assert "Zed.py and" in collision and "zed.py" in collision  # both files named, neither graded


@pytest.mark.slow
def test_every_output_writes_every_honest_student_and_each_problem_for_its_student(outputs):
    place, done = outputs
    for command in ("report", "csv", "gradescope", "nbgrader"):
        assert done[command].returncode == 0, (command, done[command].stderr)
    students = set(_results(place))
    with open(place / "grades.csv", newline="") as stream:
        rows = {row["student"]: row for row in csv.DictReader(stream)}
    assert set(rows) == students - {"=SUM(A1)"} | {"'=SUM(A1)"}  # a formula stays text
    for student in HONEST:
        row = rows["'" + student if student.startswith("=") else student]
        assert (row["total"], row["could_not_grade"]) == ("100", "0")
        results = json.loads((place / "gradescope" / student / "results.json").read_text())
        assert results["score"] == 100
    for student, words in PROBLEMS.items():
        assert words in rows[student]["problem"]
        assert words in json.loads((place / "gradescope" / student / "results.json").read_text())["output"]
    pages = {p.stem for p in (place / "report" / "feedback").glob("*.html")}
    assert len(pages) == len(students)
    with Gradebook(f"sqlite:///{place / 'gradebook.db'}") as book:
        assert {s.id for s in book.students} == students
        assert book.find_submission(ASSIGNMENT, "alice").score == 100


@pytest.mark.slow
def test_a_hostile_reply_cannot_make_any_output_larger_than_the_budget(outputs):
    place, _ = outputs
    hostile = _results(place)["hostile"]
    assert any("a tuple of 64 items" in t.message for t in hostile.tests)  # the reply arrived, and was judged
    assert all(len((t.message + t.example + t.hint + t.explanation).encode()) <= CHECK_BUDGET for t in hostile.tests)
    with sqlite3.connect(place / "grades.db") as db:
        stored = db.execute("SELECT SUM(LENGTH(checks.message) + LENGTH(example) + LENGTH(hint) + LENGTH(explanation)) "
                            "FROM checks JOIN submissions ON submissions.id = checks.submission_id "
                            "WHERE student = 'hostile'").fetchone()[0]
    assert stored <= SUBMISSION_BUDGET
    honest_page = (place / "report" / "feedback" / "alice.html").stat().st_size
    for output in (place / "report" / "feedback" / "hostile.html", place / "report" / "feedback" / "hostile.md",
                   place / "gradescope" / "hostile" / "results.json"):
        # Markup and escaping (&lt; for <) can at most double the text; before, this page was 18 MB.
        assert output.stat().st_size <= 2 * SUBMISSION_BUDGET + honest_page, output


@pytest.mark.slow
def test_printed_output_during_hidden_checks_is_the_instructors_only(outputs):
    place, _ = outputs
    printer = _results(place)["printer"]
    assert "ARGS-SEEN" in printer.printed  # stored, for the instructor
    for page in ("printer.html", "printer.md"):
        text = (place / "report" / "feedback" / page).read_text()
        assert "ARGS-SEEN" not in text and "kept for your instructor only" in text
    results = json.loads((place / "gradescope" / "printer" / "results.json").read_text())
    assert "ARGS-SEEN" in results["extra_data"]["student_output"]  # Gradescope shows extra_data to instructors
    visible = json.dumps({k: v for k, v in results.items() if k != "extra_data"})
    assert "ARGS-SEEN" not in visible


@pytest.mark.slow
def test_one_students_damaged_stored_result_costs_only_that_students_feedback(outputs, tmp_path):
    place, _ = outputs
    db = tmp_path / "grades.db"
    shutil.copy(place / "grades.db", db)
    unreadable = json.dumps({"calls": [{"function": "f", "args": {"x": {"shape": [2], "dtype": "float64",
                                                                       "values": ["a", "b"]}}}]})
    # A result stored by an older grader, its example unreadable. Both stored copies are damaged: the output
    # commands count results from the history (grading.history: the counted hand-in may be an earlier one),
    # while `submissions`/`checks` hold the latest, which a rerun of `grade` reads.
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE checks SET status = 'failed', visibility = 'public', example = ? WHERE "
                           "submission_id = (SELECT id FROM submissions WHERE student = 'alice')", (unreadable,))
        (row_id, text), = connection.execute("SELECT id, result FROM history WHERE student = 'alice'").fetchall()
        kept = json.loads(text)
        for check in kept["tests"]:
            check.update(status="failed", visibility="public", example=unreadable)
        connection.execute("UPDATE history SET result = ? WHERE id = ?", (json.dumps(kept), row_id))
    done = run_cli("report", "--db", db, "--out", tmp_path / "report")
    assert done.returncode == 1
    assert "no feedback: alice: " in done.stderr
    pages = {p.stem for p in (tmp_path / "report" / "feedback").glob("*.html")}
    assert "alice" not in pages and len(pages) == len(_results(place)) - 1
    assert (tmp_path / "report" / "index.html").is_file()


@pytest.mark.slow
def test_export_nbgrader_trusts_the_gradebook_and_restores_a_notebook_whose_cells_disagree(tmp_path, suite):
    import nbformat

    from nbgrader_course import ASSIGNMENT as RELEASED
    from nbgrader_course import make_course, release, with_code

    root = make_course(tmp_path / "course")
    released = release(root)
    for student in ("honest", "tamperer"):
        notebook = with_code(released, PLAIN.read_text(), suite.functions)
        if student == "tamperer":  # every nbgrader field the student can edit, edited
            cells = [c for c in notebook.cells
                     if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("test_")]
            cells[0].cell_type = "markdown"
            cells[0].pop("outputs", None)
            cells[0].pop("execution_count", None)
            cells[1].metadata.nbgrader["points"] = 1000
            cells[2].metadata.nbgrader["grade_id"] = cells[3].metadata.nbgrader["grade_id"]  # used twice
        folder = root / "submitted" / student / RELEASED
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / "attention.ipynb")
        (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
    db = tmp_path / "grades.db"
    assert run_cli("grade", RELEASED, root / "submitted", "--db", db, "--jobs", "2").returncode == 0
    done = run_cli("export", "nbgrader", "--db", db, "--root", root, "--gradebook", root / "gradebook.db",
                   env={"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert done.returncode == 0, done.stderr
    # Said neutrally: a notebook fetched before `release --rebuild` differs from the release as this one does.
    assert re.search(r"tamperer: attention\.ipynb differs from the current release \(test_\w+: cell type, flags or "
                     r"points differed from the release, restored\); graded as released\. A re-release after the "
                     r"student fetched it, or an edit of a test cell, does this: if there was no re-release since, "
                     r"have a look at this hand-in", done.stderr), done.stderr
    assert "disagreed with the release (" not in done.stderr
    assert "honest: " not in done.stderr.replace("wrote", "")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as book:
        for student in ("honest", "tamperer"):
            submission = book.find_submission(RELEASED, student)
            assert submission.max_score == book.find_notebook("attention", RELEASED).max_score  # the release's points
    for student in ("honest", "tamperer"):
        written = nbformat.read(root / "autograded" / student / RELEASED / "attention.ipynb", as_version=4)
        tests = [c for c in written.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("test_")]
        assert all(c.cell_type == "code" and c.outputs for c in tests), student
        assert len({c.metadata.nbgrader["grade_id"] for c in tests}) == len(tests)


def _linked_layouts(tmp_path: Path) -> tuple[Path, Path]:
    """An nbgrader tree whose student folder is a link, and a zip whose member is a link, each beside an honest one."""
    course = tmp_path / "course" / "submitted"
    (course / "nina" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(PLAIN, course / "nina" / ASSIGNMENT / "attention.py")
    outside = tmp_path / "elsewhere" / ASSIGNMENT
    outside.mkdir(parents=True)
    shutil.copy(REFERENCE, outside / "attention.py")
    (course / "linus").symlink_to(outside.parent, target_is_directory=True)
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.write(PLAIN, "zoe.py")
        link = zipfile.ZipInfo("zack.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        bundle.writestr(link, str(REFERENCE))
    return course, archive


def _as_unprivileged(function):
    """function()'s JSON-able answer, computed in a forked child as user nobody where this is root (which reads
    every folder whatever its permissions), else here."""
    if os.geteuid() != 0:
        return function()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, json.dumps(function()).encode())
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.mark.parametrize("layout", ["flat", "nbgrader"])
def test_a_student_folder_that_cannot_be_read_is_named_and_the_class_is_found(layout):
    top = Path(tempfile.mkdtemp(prefix="unreadable-"))  # not under pytest's folder, which only root may enter
    try:
        top.chmod(0o755)
        classroom = top / "class"
        below = "" if layout == "flat" else f"submitted/ann/{ASSIGNMENT}/"
        readable = classroom / (f"{below}attention.py" if below else "ann.py")
        closed = classroom / ("zed" if layout == "flat" else "submitted/zed")
        hidden = closed / ("attention.py" if layout == "flat" else f"{ASSIGNMENT}/attention.py")
        for file in (readable, hidden):
            file.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(PLAIN, file)
        for folder in [classroom, *classroom.rglob("*")]:
            folder.chmod(0o755 if folder.is_dir() else 0o644)
        closed.chmod(0)
        shut = classroom / (f"submitted/bo/{ASSIGNMENT}/attention.py" if below else "bo.py")  # a file, not a folder
        shut.parent.mkdir(parents=True, exist_ok=True)
        for folder in shut.relative_to(classroom).parents:
            (classroom / folder).chmod(0o755)
        shutil.copy(PLAIN, shut)
        shut.chmod(0)
        workdir = top / "work"
        workdir.mkdir(mode=0o777)
        workdir.chmod(0o777)
        found = _as_unprivileged(lambda: [(f.student, f.stored, f.problem) for f in find_submissions(
            [classroom], ASSIGNMENT, "attention", workdir)])
    finally:
        closed.chmod(0o755)
        shutil.rmtree(top)
    by_student = {student: (stored, problem) for student, stored, problem in found}
    assert by_student["ann"] == (True, "")
    stored, problem = by_student["zed"]
    assert not stored and "cannot be read (Permission denied)" in problem and "make it readable" in problem
    stored, problem = by_student["bo"]  # nothing stored: an export would have written the student's 0
    assert not stored and "could not be read (permission denied)" in problem and "chmod a+r" in problem


@pytest.mark.slow  # two command-line grades of real hand-ins, one on a local Dask cluster
@pytest.mark.parametrize("where", ["here", "cluster"])
def test_a_link_is_refused_with_a_message_in_every_layout(tmp_path, where):
    course, archive = _linked_layouts(tmp_path)
    db = tmp_path / "grades.db"
    extra = ("--cluster", "local:1") if where == "cluster" else ("--jobs", "1")
    done = run_cli("grade", ASSIGNMENT, course, archive, "--db", db, *extra)
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        results = {r.student: r for r in store.results(ASSIGNMENT)}
    assert results["nina"].score == results["zoe"].score == 100
    # A student's folder linked into submitted/ is the folder's to fix: named, nothing stored (it had been a 0).
    assert "linus" not in results
    assert "not graded, nothing stored: " in done.stderr and "linus" in done.stderr and "symbolic link" in done.stderr
    assert "symbolic link" in results["zack"].problem and results["zack"].score == 0


def test_gradescope_grades_the_real_file_and_refuses_a_lone_link_with_a_message(tmp_path):
    from autograder.grading.gradescope_export import pick_submission_file
    from autograder.grading.submission import read_submission

    folder = tmp_path / "submission"
    (folder / "src").mkdir(parents=True)
    shutil.copy(PLAIN, folder / "src" / "attention.py")
    (folder / "attention.py").symlink_to(REFERENCE)  # a repository's link to the reference
    picked = pick_submission_file(folder, "attention")
    assert picked.path == folder / "src" / "attention.py" and "not a regular file" in picked.note
    (folder / "src" / "attention.py").unlink()
    picked = pick_submission_file(folder, "attention")
    assert "symbolic link" in read_submission(picked.path, "s", root=folder).problem


def test_ids_compare_in_nfkc_case_folded_form_and_refuse_what_could_impersonate_another_line():
    from autograder.grading.ids import MAX_ID_CHARS, canonical, id_problem, shown_id

    assert canonical("ａｌｉｃｅ") == canonical("ALICE") == canonical("alice")  # full-width, case
    assert canonical("Straße") == canonical("STRASSE")
    for bad in ("eve\u202emallory", "eve\u200dmallory", "eve\u2028mallory", "eve\x1b[2J", "a/b", "a\\b", ".", "..",
                "", " alice", "x" * (MAX_ID_CHARS + 1), "\u0430lice", "b\u03bfb",  # Cyrillic а, Greek ο
                "b\u0585b",  # Armenian օ
                "bob\u3164", "bob\u034f", "b\u2800", "bob\ufe0f", "bob\u115f"):  # letters and marks that show nothing
        assert id_problem(bad), repr(bad)
        assert not id_problem(shown_id(bad)), (bad, shown_id(bad))  # what is stored in its place is an id
    assert not id_problem("Lastname, Firstname_123456_assignsubmission_file_")
    assert not id_problem("=SUM(A1)")  # a fine id: the CSV escapes it as a formula
    for fine in ("Дмитрий", "Ærøskøbing", "Αλέξανδρος", "山田たろう", "Արամ", "홍길동", "José", "Jose\u0301"):
        assert not id_problem(fine), fine


def test_one_students_py_and_notebook_under_ids_that_differ_in_case_are_their_two_formats(tmp_path):
    """`bob.py` beside `bob.ipynb`: the notebook is graded, with a note. `Alice.py` beside `alice.ipynb` were two
    hand-ins of one id and both refused. Two files of one format under such ids are still refused."""
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PLAIN.read_text())])
    for name in ("alice.ipynb", "bob.ipynb"):
        nbformat.write(notebook, tmp_path / name)
    for name in ("Alice.py", "bob.py", "Zed.py", "zed.py"):
        shutil.copy(PLAIN, tmp_path / name)
    found = {item.student: item for item in find_submissions([tmp_path], "w07_attention", "attention", tmp_path)}
    for student in ("alice", "bob"):
        assert found[student].path.name == f"{student}.ipynb" and not found[student].problem, found[student]
        assert "several files were handed in" in found[student].note
    assert "Alice" not in found
    zeds = [item for item in found.values() if item.path.name in ("Zed.py", "zed.py")]
    assert len(zeds) == 2 and all("2 hand-ins give the student id" in item.problem for item in zeds)


def test_a_module_handed_in_beside_the_work_and_imported_by_it_is_named_with_what_to_do(tmp_path):
    """nbgrader runs a notebook in a copy of its folder, where `from helpers import f` finds helpers.py; the grader
    has the graded file alone. The import's failure had said only that the grader has no such module."""
    erin = tmp_path / "class" / "erin"
    erin.mkdir(parents=True)
    (erin / "helpers.py").write_text("def stable_softmax(S):\n    return S\n")
    (erin / "notes.py").write_text("x = 1\n")  # handed in, not imported: not named
    (erin / "attention.py").write_text("from helpers import stable_softmax\n" + PLAIN.read_text())
    shutil.copy(PLAIN, tmp_path / "class" / "ben.py")
    found = {item.student: item for item in find_submissions([tmp_path / "class"], ASSIGNMENT, "attention", tmp_path)}
    assert found["erin"].path.name == "attention.py"
    assert found["erin"].note.endswith("; attention.py imports helpers.py, handed in beside it, which grading does not "
                                       "have: only attention.py is graded, so put the code of helpers.py into "
                                       "attention.py (and drop the import)"), found["erin"].note
    # What imports well without the file beside it is not named: a library (a stray numpy.py is not what `import
    # numpy` finds), an import with its own way out, a word in a docstring. `from . import` is named.
    (erin / "numpy.py").write_text("x = 1\n")
    (erin / "scratch.py").write_text("x = 1\n")
    (erin / "attention.py").write_text('"""Notes:\nimport scratch first."""\ntry:\n    import notes\n'
                                       "except ImportError:\n    pass\nfrom . import helpers\n" + PLAIN.read_text())
    found = {item.student: item for item in find_submissions([tmp_path / "class"], ASSIGNMENT, "attention", tmp_path)}
    note = found["erin"].note
    assert "imports helpers.py," in note and not any(f"{name}.py," in note.split("imports")[1]
                                                        for name in ("numpy", "scratch", "notes")), note


def test_a_hard_link_beside_a_students_file_is_named_as_a_link_not_as_a_file_writing_nothing(tmp_path):
    # Unreadable as a hand-in, the hard link had been counted as a file that writes no function, and the note said
    # the draft beside it was graded for that.
    fay = tmp_path / "class" / "fay"
    fay.mkdir(parents=True)
    shutil.copy(PLAIN, tmp_path / "backup.py")
    os.link(tmp_path / "backup.py", fay / "attention.py")
    (fay / "draft_v1.py").write_text("def score(Q, K, scale=None):\n    return Q @ K.T\n")
    shutil.copy(PLAIN, tmp_path / "class" / "ben.py")
    found = {item.student: item for item in find_submissions([tmp_path / "class"], ASSIGNMENT, "attention", tmp_path)}
    assert found["fay"].path.name == "draft_v1.py"
    assert found["fay"].note == ("several files were handed in; graded draft_v1.py, not attention.py (a link or not a "
                                 "regular file) (a regular file over one that is not)"), found["fay"].note


def test_a_flat_class_students_folder_passed_alone_is_that_student_and_holds_no_layout(tmp_path):
    """A TA regrading one student of a flat class names `class/ann/`: it had been stored as a new student named
    after the file (`attention`), and a submitted/ tree ann uploaded in it was read as an nbgrader course, which
    stored eve's 0 under eve's id. A class folder with the released notebook left in it is still a class."""
    from autograder.grading.discover import one_students_part

    ann = tmp_path / "class" / "ann"
    planted = ann / "submitted" / "eve" / ASSIGNMENT
    planted.mkdir(parents=True)
    shutil.copy(PLAIN, ann / "attention.py")
    (planted / "attention.py").write_text("def score(Q, K, scale=None):\n    return 0\n")
    shutil.copy(PLAIN, tmp_path / "class" / "ben.py")
    [found] = find_submissions([ann], ASSIGNMENT, "attention", tmp_path)
    assert (found.student, found.path) == ("ann", ann / "attention.py") and found.stored and not found.problem
    assert one_students_part(ann, ASSIGNMENT, "attention")
    assert not one_students_part(tmp_path / "class", ASSIGNMENT, "attention")
    (ann / "Untitled.ipynb").write_text("{}")  # a scratch notebook beside the work: still ann's folder
    [found] = find_submissions([ann], ASSIGNMENT, "attention", tmp_path)
    assert found.student == "ann" and "not Untitled.ipynb" in found.note, found
    for student in ("cat", "dan", "eve", "fay"):
        shutil.copy(PLAIN, tmp_path / "class" / f"{student}.py")
    shutil.copy(PLAIN, tmp_path / "class" / "attention.py")  # the released file, left in the class folder
    skipped: list = []
    assert {f.student for f in find_submissions([tmp_path / "class"], ASSIGNMENT, "attention", tmp_path,
                                                skipped)} == {"ann", "ben", "cat", "dan", "eve", "fay"}
    assert skipped == [tmp_path / "class" / "attention.py"]  # named as the assignment's file: no student "attention"
    assert not one_students_part(tmp_path / "class", ASSIGNMENT, "attention")


def test_a_small_class_folder_with_the_stub_left_in_it_stays_a_class(tmp_path):
    """bob.py beside the released attention.py: the folder was taken for one student's, graded as a student named
    after the folder from the stub (0), and bob's right answer was never graded."""
    from autograder.cli.not_graded import not_graded

    folder = tmp_path / "small"
    folder.mkdir()
    shutil.copy(PLAIN, folder / "bob.py")
    (folder / "attention.py").write_text("def score(Q, K, scale=None):\n    raise NotImplementedError\n")
    skipped: list = []
    assert [f.student for f in find_submissions([folder], ASSIGNMENT, "attention", tmp_path, skipped)] == ["bob"]
    [line] = not_graded(skipped, "attention")
    assert "attention.py, named as the assignment's own file, not after a student" in line, line
    (folder / "ann").mkdir()  # a class of folders with the stub at its top: no student "attention" either
    shutil.copy(PLAIN, folder / "ann" / "attention.py")
    skipped = []
    assert [f.student for f in find_submissions([folder], ASSIGNMENT, "attention", tmp_path, skipped)] == ["ann",
                                                                                                         "bob"]
    (folder / "bob.py").unlink()
    assert [f.student for f in find_submissions([folder], ASSIGNMENT, "attention", tmp_path)] == ["ann"]
    shutil.rmtree(folder / "ann")
    shutil.copy(PLAIN, folder / "bob.py")
    (folder / "bob.py").rename(folder / "attention_v2.py")  # a student's own draft beside the work: their folder
    [found] = find_submissions([folder], ASSIGNMENT, "attention", tmp_path)
    assert found.student == "small"


def test_an_empty_folder_named_as_a_student_with_a_file_is_no_missing_hand_in(tmp_path):
    # `dan/` (left by an unzip) beside `dan.py` was named as a student's folder with nothing in it, while dan was
    # graded from dan.py in the same run.
    folder = tmp_path / "class"
    (folder / "dan").mkdir(parents=True)
    (folder / "eve").mkdir()
    shutil.copy(PLAIN, folder / "dan.py")
    skipped: list = []
    found = find_submissions([folder], ASSIGNMENT, "attention", tmp_path, skipped)
    assert [f.student for f in found] == ["dan"] and skipped == [folder / "eve"], skipped


def test_the_course_folder_without_submitted_is_refused_not_graded_as_students(tmp_path):
    """`grade w07_attention .` in the course's folder before any hand-in was collected stored students named
    autograder, bench, nbgrader_config and tests, each with 0."""
    (tmp_path / "solutions" / ASSIGNMENT).mkdir(parents=True)
    (tmp_path / "course.yaml").write_text("course: {name: x}\n")
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test(): pass\n")
    with pytest.raises(LayoutError, match="is the course's folder .* has no submitted/ folder"):
        find_submissions([tmp_path], ASSIGNMENT, "attention", tmp_path)


def test_a_browsers_second_download_of_a_students_file_is_that_students(tmp_path):
    """`carl (1).py` beside `carl.py` in a flat class folder had been a student "carl (1)" of its own."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(PLAIN, folder / "carl.py")
    shutil.copy(PLAIN, folder / "carl (1).py")
    (folder / "carl (1).py").write_text(PLAIN.read_text() + "\n# the newer download\n")
    shutil.copy(PLAIN, folder / "dana (2).py")  # alone, it is whoever the TA named so
    found = {f.student: f for f in find_submissions([folder], ASSIGNMENT, "attention", tmp_path)}
    assert sorted(found) == ["carl", "dana (2)"], sorted(found)


def test_a_zip_that_holds_no_hand_in_is_named_as_the_zip_not_a_temporary_folder(tmp_path):
    """An empty zip, or one holding only another zip, was named by the folder it was extracted into, already gone."""
    import zipfile

    empty, outer = tmp_path / "empty.zip", tmp_path / "outer.zip"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("readme.txt", "nothing")
    with zipfile.ZipFile(outer, "w") as archive:
        archive.write(empty, "class.zip")
    with pytest.raises(LayoutError, match=rf"^{re.escape(str(empty))} \(once extracted\) holds no \.py"):
        find_submissions([empty], ASSIGNMENT, "attention", tmp_path)
    with pytest.raises(LayoutError, match=r"it holds class\.zip: pass that zip instead"):
        find_submissions([outer], ASSIGNMENT, "attention", tmp_path)


@pytest.mark.parametrize("layout", ["nbgrader", "flat"])
def test_the_released_notebook_handed_in_untouched_beside_the_worked_py_is_not_graded(tmp_path, layout):
    """`nbgrader submit` hands in the whole folder: the .py the student worked in, and the released notebook as it
    came. Both defined the same nine functions, and the notebook was graded: 0, with advice to delete the template's
    raise lines. A function that only raises NotImplementedError is not written: the .py is graded."""
    folder = tmp_path / "class" / ("submitted/ann/w07_attention" if layout == "nbgrader" else "ann")
    folder.mkdir(parents=True)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Attention"),
                                               nbformat.v4.new_code_cell("%matplotlib inline\n" + STUB.read_text())])
    nbformat.write(notebook, folder / "attention.ipynb")
    shutil.copy(PLAIN, folder / "attention.py")
    if layout == "nbgrader":
        (folder / "timestamp.txt").write_text("2026-11-20 18:00:00.000000 UTC\n")
    found = find_submissions([tmp_path / "class"], "w07_attention", "attention", tmp_path)
    assert [(f.student, f.path.name) for f in found] == [("ann", "attention.py")], found
    assert "graded attention.py, not attention.ipynb (a file that writes a function over one that writes none" \
        in found[0].note
    # Worked in a file of another name: the untouched notebook's name had won it the grading.
    (folder / "attention.py").rename(folder / "my_solution.py")
    found = find_submissions([tmp_path / "class"], "w07_attention", "attention", tmp_path)
    assert [(f.student, f.path.name) for f in found] == [("ann", "my_solution.py")], found
    assert "(a file that writes a function over one that writes none" in found[0].note


def test_a_file_over_the_size_limit_is_told_what_to_take_out_for_its_kind():
    """A 60 MB .py had been told to clear its notebook's outputs."""
    from autograder.grading.handin import over_size_limit

    assert "clear the notebook's outputs" in over_size_limit("ann.ipynb", 60_000_000)
    told = over_size_limit("ann.py", 60_000_000)
    assert told.startswith("ann.py is 60 MB, over the 50 MB limit; take out the data") and "notebook" not in told


def test_of_two_files_alike_within_two_seconds_the_browsers_later_download_is_graded_and_said_so(tmp_path):
    """`carl.py` and `carl (1).py` of one time: the nanoseconds a copy puts between them had decided, else the
    sort order, said as "the one nearest the top of the folder" of two files in one folder."""
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("carl.py", "carl (1).py", "dana.py"):
        shutil.copy(PLAIN, folder / name)
    (folder / "carl (1).py").write_text(PLAIN.read_text() + "\n# the second download\n")
    for newer, older in (("carl.py", "carl (1).py"), ("carl (1).py", "carl.py")):
        os.utime(folder / newer, ns=(1_750_000_001_500_000_000,) * 2)  # 1.5 seconds apart: equally new
        os.utime(folder / older, ns=(1_750_000_000_000_000_000,) * 2)
        (found, _) = find_submissions([folder], ASSIGNMENT, "attention", tmp_path)
        assert found.path.name == "carl (1).py", found
        assert "graded carl (1).py, not carl.py (a browser's later download of one name" in found.note, found.note
        assert "nearest the top" not in found.note and found.others == (folder / "carl.py",)
    os.utime(folder / "carl.py", ns=(1_750_000_004_000_000_000,) * 2)  # 2.5 seconds after the other: newer
    (found, _) = find_submissions([folder], ASSIGNMENT, "attention", tmp_path)
    assert found.path.name == "carl.py" and "(the newest of files alike by those rules" in found.note


def test_a_canvas_students_later_upload_is_graded_over_an_earlier_one_of_another_name(tmp_path):
    """Upload 90005 `attention (1).py` and upload 90006 `attention.py`, dated alike in the zip: the older upload
    was graded, by the sort order of the names. Canvas's file id tells which was uploaded later."""
    folder = tmp_path / "download"
    folder.mkdir()
    older, later = folder / "leeann_4104_90005_attention (1).py", folder / "leeann_4104_90006_attention.py"
    shutil.copy(PLAIN, later)
    older.write_text(PLAIN.read_text() + "\n# uploaded first\n")
    for path in (older, later):
        os.utime(path, (1.75e9, 1.75e9))
    os.utime(older, (1.75e9 + 60, 1.75e9 + 60))  # a zip's time says nothing of the order of uploads
    (found,) = find_submissions([folder], ASSIGNMENT, "attention", tmp_path)
    assert found.student == "leeann_4104" and found.path == later, found
    assert "(Canvas's later upload of files alike by those rules (a larger file id))" in found.note, found.note


@pytest.mark.parametrize("layout", ["nbgrader", "moodle"])
def test_a_hand_in_of_jupyters_checkpoint_folder_alone_says_so_not_that_it_is_empty(tmp_path, layout):
    """A hand-in holding only `.ipynb_checkpoints/attention-checkpoint.py` was "this hand-in is empty"."""
    folder = tmp_path / "class" / ("submitted/ann/w07_attention" if layout == "nbgrader" else
                                   "Ann Lee_123456_assignsubmission_file_")
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    shutil.copy(PLAIN, folder / ".ipynb_checkpoints" / "attention-checkpoint.py")
    if layout == "moodle":
        shutil.copy(PLAIN, tmp_path / "class" / "Bob Roe_123457_assignsubmission_file_attention.py")
    found = {f.student: f for f in find_submissions([tmp_path / "class"], ASSIGNMENT, "attention", tmp_path)}
    (ann,) = [f for student, f in found.items() if student.startswith(("ann", "Ann"))]
    assert "this hand-in holds only .ipynb_checkpoints/, Jupyter's hidden folder of autosaved copies, which is " \
        "not graded" in ann.problem, ann.problem
    assert "is empty" not in ann.problem and "Hand in your notebook itself (attention.ipynb" in ann.problem


def test_a_flat_class_folder_holding_only_jupyters_checkpoints_is_named_so_not_as_a_hand_in_one_folder_deep(tmp_path):
    """dan/ held only .ipynb_checkpoints/attention-checkpoint.ipynb: `grade` said his .py or .ipynb was in a folder
    inside dan/ and to move it up, which would grade an autosaved copy; the notebook itself is what is missing."""
    from autograder.cli.not_graded import not_graded

    folder = tmp_path / "class"
    (folder / "dan" / ".ipynb_checkpoints").mkdir(parents=True)
    shutil.copy(PLAIN, folder / "dan" / ".ipynb_checkpoints" / "attention-checkpoint.py")
    shutil.copy(PLAIN, folder / "ann.py")
    skipped: list = []
    assert [f.student for f in find_submissions([folder], ASSIGNMENT, "attention", tmp_path, skipped)] == ["ann"]
    [line] = not_graded(skipped, "attention")
    assert "1 folder with no .py or .ipynb in it: dan/ (holds only Jupyter's hidden .ipynb_checkpoints/, " \
        "autosaved copies, which are not graded: the notebook itself is missing)" in line, line
    assert "Move the hand-in up" not in line
