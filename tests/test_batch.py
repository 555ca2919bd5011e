"""Issue 4: class folders in every layout, broken notebooks, resume after kill -9, regrades, shared databases."""
from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.grading.discover import find_submissions
from autograder.grading.store import Store
from autograder.outputs.progress import Progress
from autograder.sandbox import processes

from conftest import PLAIN, ROOT, SUBMISSIONS, compose, repository_env, run_cli

sys.path.insert(0, str(ROOT / "bench"))
from make_class import notebook_from_code, write_class  # noqa: E402

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`

def _grade(*paths, db, extra=()):
    done = run_cli("grade", "w07_attention", *paths, "--json", "--db", db, "--jobs", "2", *extra)
    assert done.returncode == 0, done.stderr
    return {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}, done


def _rows(db) -> tuple[int, int, list]:
    with sqlite3.connect(db) as connection:
        submissions = connection.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]
        checks = connection.execute("SELECT COUNT(*) FROM checks").fetchone()[0]
        students = [r[0] for r in connection.execute("SELECT student FROM submissions ORDER BY student")]
    return submissions, checks, students


def _committed(db) -> int:
    try:
        return _rows(db)[0]
    except sqlite3.OperationalError:  # the grader has not created its tables yet
        return 0


def _notebook(path, code):
    nbformat.write(notebook_from_code(code), path)


@pytest.fixture(scope="module")
def flat_class(tmp_path_factory):
    """A flat folder: a .py, a .ipynb, and a student folder holding a notebook."""
    folder = tmp_path_factory.mktemp("flat")
    shutil.copy(PLAIN, folder / "ann.py")
    _notebook(folder / "ben.ipynb", PLAIN.read_text())
    (folder / "cat").mkdir()
    _notebook(folder / "cat" / "attention.ipynb",
              PLAIN.read_text() + "\n\n" + (SUBMISSIONS / "buggy" / "padding_off_by_one.py").read_text())
    return folder


def test_flat_folder_of_files_and_student_folders(flat_class, tmp_path):
    results, _ = _grade(flat_class, db=tmp_path / "g.db")
    assert sorted(results) == ["ann", "ben", "cat"]
    assert results["ann"]["score"] == results["ben"]["score"] == 100, _lost(results)
    assert results["cat"]["score"] < 100


def _lost(results: dict) -> dict:
    """Each student's checks that lost points, with their messages: what a failed assertion needs to be read."""
    return {student: [(t["name"], t["status"], t["message"]) for t in result["tests"] if t["score"] < t["max_score"]]
            for student, result in results.items()}


def test_a_flat_folders_folder_without_a_hand_in_is_named_not_graded(tmp_path):
    # In a flat folder a folder may be anything (notes, last term's output), so it is not a student with a
    # result; but one that is a student's, with a PDF in it, must not go unnoticed.
    shutil.copy(PLAIN, tmp_path / "ann.py")
    (tmp_path / "dan").mkdir()
    (tmp_path / "dan" / "attention.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / "eve").mkdir()
    results, done = _grade(tmp_path, db=tmp_path / "g.db")
    assert sorted(results) == ["ann"]
    assert ("not graded: 2 folders with no .py or .ipynb in them: dan/ (holds attention.pdf), eve/ (empty). If one "
            "is a student's, their hand-in is missing or saved as something else") in done.stderr
    assert "put their attention.ipynb or attention.py in it, and grade again" in done.stderr
    _, alone = _grade(tmp_path / "ann.py", db=tmp_path / "g.db")
    assert "not graded" not in alone.stderr


def test_a_students_work_is_graded_over_an_empty_or_scratch_notebook_saved_after_it(tmp_path):
    """Several files in a student's folder, none named after the assignment: the one defining the most functions,
    not the newest (an Untitled.ipynb or scratch notebook created after the work). The named file comes first where
    it writes a function; an empty one (or the released notebook, untouched) is not graded over the work."""
    work, scratch = tmp_path / "ann" / "w07_ann.ipynb", tmp_path / "ann" / "Untitled.ipynb"
    work.parent.mkdir()
    _notebook(work, PLAIN.read_text())
    _notebook(scratch, "import numpy as np\nx = np.ones(3)\ndef helper(x):\n    return x")
    os.utime(work, (time.time() - 60, time.time() - 60))
    (found,) = find_submissions([tmp_path], "w07_attention", "attention", tmp_path / "work")
    assert found.path == work and "not Untitled.ipynb" in found.note
    _notebook(tmp_path / "ann" / "attention.ipynb", "")
    (found,) = find_submissions([tmp_path], "w07_attention", "attention", tmp_path / "work")
    assert found.path == work and "not Untitled.ipynb, attention.ipynb" in found.note, found.note
    _notebook(tmp_path / "ann" / "attention.ipynb", "def score(Q, K, scale=None):\n    return Q @ K.T")
    (found,) = find_submissions([tmp_path], "w07_attention", "attention", tmp_path / "work")
    assert found.path.name == "attention.ipynb"  # the released name, as nbgrader grades it


def test_the_released_name_in_another_case_or_as_a_second_download_is_the_released_name(tmp_path):
    # Attention.ipynb (a Mac keeps the case it was saved in) lost to an older draft defining more helpers, and a
    # browser's second download, attention (1).ipynb, to the older attention.ipynb: 59 where the work scored 100.
    ann, bob = tmp_path / "ann", tmp_path / "bob"
    ann.mkdir(), bob.mkdir()
    _notebook(ann / "Attention.ipynb", PLAIN.read_text())
    _notebook(ann / "attention_v1.ipynb", PLAIN.read_text() + "\ndef helper_a():\n    pass\ndef helper_b():\n    pass")
    _notebook(bob / "attention.ipynb", PLAIN.read_text())
    _notebook(bob / "attention (1).ipynb", PLAIN.read_text())
    os.utime(bob / "attention.ipynb", (time.time() - 60, time.time() - 60))
    found = {f.student: f for f in find_submissions([tmp_path], "w07_attention", "attention", tmp_path / "work")}
    assert found["ann"].path.name == "Attention.ipynb" and "(the file named after the assignment)" in \
        found["ann"].note, found["ann"].note
    assert found["bob"].path.name == "attention (1).ipynb" and "(the newest of files alike" in found["bob"].note


def test_a_flat_folders_files_that_are_not_hand_ins_are_named_not_graded(tmp_path):
    """A PDF, a zip, `.py.txt` or `.PY` handed in instead of the file: not graded, but named, so the TA sees
    whose hand-in is missing. What an operating system leaves in a folder is not named."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(PLAIN, folder / "ann.py")
    for name in ("frank.pdf", "erin.zip", "ivan.py.txt", "jill.PY", "Thumbs.db"):
        (folder / name).write_bytes(b"x")
    results, done = _grade(folder, db=tmp_path / "g.db")
    assert sorted(results) == ["ann"]
    assert ("not graded: 4 files that are not a .py or .ipynb: erin.zip, frank.pdf, ivan.py.txt, jill.PY. If one "
            "is a student's hand-in, save it as STUDENT.ipynb or STUDENT.py (extract a zip; rename a .PY or a "
            ".py.txt; in an LMS's download, keep the name the LMS gave it and change only its ending, as the LMS's "
            "name says who the student is) and grade again") in done.stderr
    assert "Thumbs.db" not in done.stderr
    # A hidden hand-in, and a student's folder whose hand-in is one folder too deep, are named with what to do.
    shutil.copy(PLAIN, folder / ".ben.py")
    (folder / "dave" / "sub").mkdir(parents=True)
    shutil.copy(PLAIN, folder / "dave" / "sub" / "attention.py")
    _, deeper = _grade(folder, db=tmp_path / "g.db")
    assert ("not graded: 1 hidden file (a name starting with a dot, which file browsers hide): .ben.py. If it is a "
            "student's hand-in, rename it without the dot") in deeper.stderr
    assert ("not graded: 1 folder whose .py or .ipynb is in a folder inside it: dave/. Move the hand-in up into "
            "the student's folder") in deeper.stderr
    (folder / ".ben.py").unlink()
    shutil.rmtree(folder / "dave")
    # The results database kept in the class's folder, with SQLite's files beside it, is not named.
    (folder / "grades.db-wal").write_bytes(b"x")
    _, again = _grade(folder, db=folder / "grades.db")
    named = [line for line in again.stderr.splitlines() if line.startswith("not graded: ")]
    assert len(named) == 1 and named[0].startswith("not graded: 4 files") and "grades.db" not in named[0], named


def test_nbgrader_submitted_tree_and_zips(tmp_path):
    roster = write_class(tmp_path / "course", 6, "nbgrader", attacks=(), broken=0)
    students = sorted(student for student, _, _ in roster)
    for target in (tmp_path / "course", tmp_path / "course" / "submitted"):
        results, _ = _grade(target, db=tmp_path / f"{target.name}.db")
        assert sorted(results) == students
    archive = tmp_path / "course.zip"
    shutil.make_archive(str(archive.with_suffix("")), "zip", tmp_path, "course")
    results, _ = _grade(archive, db=tmp_path / "zip.db")
    assert sorted(results) == students
    flat_zip = tmp_path / "flat.zip"
    with zipfile.ZipFile(flat_zip, "w") as bundle:
        bundle.write(PLAIN, "dee.py")
        bundle.writestr("../escape.py", "print('outside')")  # a hostile member is skipped
    results, _ = _grade(flat_zip, db=tmp_path / "flat.db")
    assert sorted(results) == ["dee"] and results["dee"]["score"] == 100
    assert not (tmp_path.parent / "escape.py").exists()


def _zipped(tmp_path, members: dict) -> tuple[list[str], list[str]]:
    """The students found in a zip of `members` (name -> text), and the folders named as holding no hand-in."""
    tmp_path.mkdir()
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for name, text in members.items():
            bundle.writestr(name, text)
    skipped: list = []
    workdir = tmp_path / "work"
    workdir.mkdir()
    found = find_submissions([archive], "w07_attention", "attention", workdir, skipped)
    return [item.student for item in found], [folder.name for folder in skipped]


def test_an_assignment_folder_named_in_another_case_is_named_for_the_ta(tmp_path):
    """submitted/s0007/W07_Attention/ left s0007 out without a word; a student with no folder for this assignment
    at all (another week's hand-in only) is still no one's concern."""
    for student, folder in (("s0001", "w07_attention"), ("s0007", "W07_Attention"), ("s0022", "w06_other")):
        (tmp_path / "submitted" / student / folder).mkdir(parents=True)
        shutil.copy(PLAIN, tmp_path / "submitted" / student / folder / "attention.py")
    found = {item.student: item for item in find_submissions([tmp_path], "w07_attention", "attention",
                                                             tmp_path / "work")}
    assert sorted(found) == ["s0001", "s0007"] and found["s0001"].stored and not found["s0007"].stored
    assert "s0007/W07_Attention/ is not named w07_attention/" in found["s0007"].problem
    assert "rename it to w07_attention and grade again" in found["s0007"].problem


def test_a_flat_class_zipped_with_its_folder_is_that_folders_class(tmp_path):
    # `zip -r class.zip class/` puts every hand-in under one folder; that folder is not a student.
    code = PLAIN.read_text()
    members = {"class/ann.py": code, "class/ben.ipynb": "{}", "class/cat/attention.ipynb": "{}",
               "class/dan/attention.pdf": "%PDF", "__MACOSX/class/._ann.py": "x"}
    assert _zipped(tmp_path / "a", members) == (["ann", "ben", "cat"], ["dan"])
    # One student's folder holds the module's own file: it stays that student's, as in a flat folder.
    assert _zipped(tmp_path / "b", {"ann/attention.ipynb": "{}", "ann/draft.py": code, "ann/notes.txt": "hi"}) \
        == (["ann"], [])
    assert _zipped(tmp_path / "c", {"ann/attention.py": code, "ben/attention.py": code}) == (["ann", "ben"], [])
    assert _zipped(tmp_path / "d", {"ann.py": code, "ben.py": code}) == (["ann", "ben"], [])


def test_a_hand_in_folder_without_a_notebook_is_listed_with_what_it_holds(tmp_path):
    """nbgrader collected a folder for the student (a PDF, work in a subfolder, only the timestamp): they handed
    in, so they get a result that says why nothing was graded, instead of vanishing from the class."""
    submitted = tmp_path / "course" / "submitted"
    for student in ("ann", "bea", "cy"):
        (submitted / student / "w07_attention").mkdir(parents=True)
        (submitted / student / "w07_attention" / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    shutil.copy(PLAIN, submitted / "ann" / "w07_attention" / "attention.py")
    (submitted / "bea" / "w07_attention" / "attention.pdf").write_bytes(b"%PDF-1.4")
    (submitted / "bea" / "w07_attention" / "work").mkdir()
    _notebook(submitted / "bea" / "w07_attention" / "work" / "attention.ipynb", PLAIN.read_text())
    results, _ = _grade(tmp_path / "course", db=tmp_path / "g.db")
    assert sorted(results) == ["ann", "bea", "cy"] and results["ann"]["score"] == 100
    assert results["bea"]["problem"].endswith("nothing to grade: work/attention.ipynb is in a subfolder, and only "
                                              "files at the top of a hand-in are graded. Hand in your notebook itself "
                                              "(attention.ipynb, as saved by Jupyter) or your .py file, not a folder "
                                              "that holds it")
    assert "nothing to grade: this hand-in is empty" in results["cy"]["problem"]
    assert results["bea"]["score"] == results["cy"]["score"] == 0




def _handed_in(top: Path, student: str) -> Path:
    folder = top / "submitted" / student / "w07_attention"
    folder.mkdir(parents=True)
    (folder / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    return folder


def test_a_file_in_a_subfolder_is_explained_to_the_student_and_the_tas_step_is_said_to_the_ta_alone(tmp_path):
    """"move it up (or hand in the file itself) and grade again" was the stored reason, so a student read a TA's step
    in their feedback page, on Gradescope and in the LMS's feedback column; and Gradescope headed it
    "attention.ipynb: 0 / 100" for a student who had handed in attention.py. Now the student reads what happened and
    what to hand in; `grade` tells the TA what they may do; Gradescope names no file, as none was graded."""
    top = tmp_path / "class"
    (_handed_in(top, "s02") / "work" / "sub").mkdir(parents=True)
    shutil.copy(PLAIN, top / "submitted" / "s02" / "w07_attention" / "work" / "sub" / "attention.py")
    db = tmp_path / "g.db"
    results, done = _grade(top, db=db)
    student_said = ("nothing to grade: work/sub/attention.py is in a subfolder, and only files at the top of a hand-in "
                    "are graded. Hand in your notebook itself (attention.ipynb, as saved by Jupyter) or your .py "
                    "file, not a folder that holds it")
    assert results["s02"]["problem"].endswith(student_said), results["s02"]["problem"]
    assert f"s02: not loaded: {student_said} (the student was told this). To grade the file as it was handed in " \
        "instead, move it up to the top of the student's hand-in folder and grade again" in done.stderr, done.stderr
    assert run_cli("report", "w07_attention", "--db", db, "--out", tmp_path / "report").returncode == 0
    feedback = (tmp_path / "report" / "feedback" / "s02.md").read_text()
    assert student_said in feedback and "grade again" not in feedback
    assert run_cli("export", "gradescope", "w07_attention", "--db", db, "--out", tmp_path / "gs").returncode == 0
    output = json.loads((tmp_path / "gs" / "s02" / "results.json").read_text())["output"]
    assert output.startswith("No file was graded: 0 / 100 points") and student_said in output, output
    assert "grade again" not in output and "attention.ipynb:" not in output


def test_a_hand_in_of_only_macos_metadata_a_zip_inside_or_a_file_too_deep_says_what_it_holds(tmp_path):
    """Hand-ins that hold something were described wrongly: only __MACOSX/ as "empty"; a zip in a subfolder, and a
    file four folders down, as a folder "with no .py or .ipynb file in it", naming neither."""
    top = tmp_path / "class"
    (_handed_in(top, "s03") / "a" / "b" / "c" / "d").mkdir(parents=True)
    shutil.copy(PLAIN, top / "submitted" / "s03" / "w07_attention" / "a" / "b" / "c" / "d" / "attention.py")
    (_handed_in(top, "s05") / "sub").mkdir()
    with zipfile.ZipFile(top / "submitted" / "s05" / "w07_attention" / "sub" / "hw.zip", "w") as archive:
        archive.write(PLAIN, "attention.py")
    (_handed_in(top, "s06") / "__MACOSX").mkdir()
    (top / "submitted" / "s06" / "w07_attention" / "__MACOSX" / "attention.ipynb").write_text("{}")
    results, _ = _grade(top, db=tmp_path / "g.db")
    said = {student: result["problem"] for student, result in results.items()}
    assert "this hand-in holds only a/, with no .py or .ipynb file in it; a/ holds folders more than 3 folders " \
        "down, which were not looked in. Hand in your notebook itself" in said["s03"], said["s03"]
    assert "sub/hw.zip is a zip, and a zip inside a hand-in is not opened. Hand in your notebook itself" in \
        said["s05"], said["s05"]
    assert "this hand-in holds only __MACOSX/, a zip tool's folder of file metadata (not your files), which is not " \
        "graded, with no .py or .ipynb file in it" in said["s06"] and "empty" not in said["s06"], said["s06"]

@pytest.mark.parametrize("layout", ["nbgrader", "moodle"])
def test_a_hand_in_one_folder_down_is_named_with_how_to_grade_it_not_said_to_hold_no_py(tmp_path, layout):
    """Ann's attention.py was in work/ (Moodle) or attention_project/ (nbgrader): she got "this hand-in holds only
    work/, with no .py or .ipynb file in it", which a TA reads as nothing handed in. Her file is named, with the
    fix; her Jupyter checkpoints folder beside it is named as not graded; a PDF alone still says what it holds."""
    top = tmp_path / "class"
    if layout == "nbgrader":
        ann, eve = top / "submitted" / "ann" / "w07_attention", top / "submitted" / "eve" / "w07_attention"
        kim = top / "submitted" / "kim" / "w07_attention" / "attention.py"
        for folder in (ann, eve):
            folder.mkdir(parents=True)
            (folder / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    else:
        ann, eve = top / "Ann Lee_200003_assignsubmission_file_", top / "Eve Ng_200004_assignsubmission_file_"
        kim = top / "Kim Park_300002_assignsubmission_file_attention.py"
    (ann / "work" / ".ipynb_checkpoints").mkdir(parents=True)
    shutil.copy(PLAIN, ann / "work" / "attention.py")
    shutil.copy(PLAIN, ann / "work" / ".ipynb_checkpoints" / "attention-checkpoint.py")  # an autosave: not named
    (ann / ".ipynb_checkpoints").mkdir()
    (eve / ".ipynb_checkpoints").mkdir(parents=True)
    (eve / "attention.pdf").write_bytes(b"%PDF-1.4")
    kim.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(PLAIN, kim)
    results, _ = _grade(top, db=tmp_path / "g.db")
    (ann_result,) = [r for student, r in results.items() if student.lower().startswith("ann")]
    (eve_result,) = [r for student, r in results.items() if student.lower().startswith("eve")]
    assert ann_result["score"] == 0 and ann_result["problem"].endswith(
        "nothing to grade: work/attention.py is in a subfolder (.ipynb_checkpoints/, Jupyter's hidden folder of "
        "autosaved copies, which is not graded), and only files at the top of a hand-in are graded. Hand in your "
        "notebook itself (attention.ipynb, as saved by Jupyter) or your .py file, not a folder that holds it"), \
        ann_result["problem"]
    assert eve_result["problem"].endswith(
        "nothing to grade: this hand-in holds only attention.pdf, with no .py or .ipynb file in it (its "
        ".ipynb_checkpoints/, Jupyter's hidden folder of autosaved copies, which is not graded). Hand in your "
        "notebook itself (attention.ipynb, as saved by Jupyter) or your .py file"), eve_result["problem"]

BROKEN = {
    "not_json": (b'{"cells": [', "is not a valid notebook: its JSON is broken"),
    "empty": (b"", "is empty"),
    "binary": (bytes(range(256)) * 8, "is a binary file"),
    "utf16": ('{"cells": []}'.encode("utf-16"), "is saved as UTF-16 text, which neither Python nor Jupyter reads"),
    "not_a_notebook": (b'{"hello": "world"}', "is JSON but not a Jupyter notebook"),
    "no_code": (nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("hi")])).encode(),
                "has no code cells with code in them"),
}


def test_broken_notebooks_get_clear_errors_and_the_batch_goes_on(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    for student, (data, _) in BROKEN.items():
        (folder / f"{student}.ipynb").write_bytes(data)
    _notebook(folder / "only_score.ipynb", "import numpy as np\n\ndef score(Q, K, scale=None):\n"
                                            "    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n")
    shutil.copy(PLAIN, folder / "good.py")
    results, _ = _grade(folder, db=tmp_path / "g.db")
    for student, (_, words) in BROKEN.items():
        assert words in results[student]["problem"], student
        assert results[student]["score"] == 0
    partial = results["only_score"]
    assert 0 < partial["score"] < 100 and not partial["problem"]
    missing = [t["message"] for t in partial["tests"] if t["function"] == "softmax"]
    assert missing and all("your file does not define softmax()" in m for m in missing)
    assert results["good"]["score"] == 100


def test_a_path_that_does_not_exist_is_named_and_leaves_no_database(tmp_path):
    done = run_cli("grade", "w07_attention", tmp_path / "no_such_folder", "--db", tmp_path / "g.db")
    assert done.returncode == 2
    assert "no_such_folder does not exist" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "g.db").exists()


def test_kill_9_mid_batch_loses_nothing_and_the_rerun_finishes(tmp_path):
    roster = write_class(tmp_path / "course", 14, "nbgrader", attacks=(), broken=0)
    db = tmp_path / "g.db"
    command = [sys.executable, "-m", "autograder", "grade", "w07_attention", str(tmp_path / "course"),
               "--db", str(db), "--jobs", "2"]
    grader = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _committed(db) < 3:
        time.sleep(0.05)
    grader.send_signal(signal.SIGKILL)
    grader.wait()
    before, _, graded_first = _rows(db)
    assert 3 <= before < 14, "the batch was not interrupted mid-way"
    with Store(db) as store:
        kept = {r.student: (r.graded_at, r.score, r.sha256) for r in store.results("w07_attention")}
    time.sleep(1)
    assert not [p for p in processes.descendants(grader.pid)], "grader processes outlived kill -9"
    results, done = _grade(tmp_path / "course", db=db)
    assert f"{before} submissions already graded" in done.stderr
    after, checks, students = _rows(db)
    assert after == 14 and students == sorted(s for s, _, _ in roster)
    assert checks == 14 * len(results[students[0]]["tests"])  # no lost or duplicated check rows
    with Store(db) as store:
        now = {r.student: (r.graded_at, r.score, r.sha256) for r in store.results("w07_attention")}
    assert {student: now[student] for student in graded_first} == kept  # what was committed stayed as it was


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_stopped_or_killed_grade_leaves_no_extracted_hand_ins_behind(tmp_path, how):
    write_class(tmp_path / "class", 14, "flat", attacks=(), broken=0)
    bundle = tmp_path / "class.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        for path in sorted((tmp_path / "class").iterdir()):
            archive.write(path, path.name)
    scratch, db = tmp_path / "tmp", tmp_path / "g.db"
    scratch.mkdir()
    grader = subprocess.Popen([sys.executable, "-m", "autograder", "grade", "w07_attention", str(bundle), "--db",
                               str(db), "--jobs", "2"], cwd=ROOT, env=repository_env(TMPDIR=str(scratch)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _committed(db) < 2:
        time.sleep(0.05)
    assert [p.name for p in scratch.glob("autograder-zip-*")], "the zip was not extracted into TMPDIR"
    # SIGTERM to the whole process group, as Slurm's scancel, systemd and a closed terminal (SIGHUP) send theirs.
    (os.killpg if how == "SIGTERM" else os.kill)(grader.pid, getattr(signal, how))
    _, stderr = grader.communicate(timeout=120)
    stopped = _committed(db)
    assert 2 <= stopped < 14, "the batch was not stopped mid-way"
    left = list(scratch.glob("autograder-zip-*"))
    if how == "SIGTERM":  # unwound as Ctrl-C is: every folder and process it made goes
        assert grader.returncode == 128 + signal.SIGTERM, stderr
        assert "stopped by SIGTERM; results already stored are kept" in stderr and "Traceback" not in stderr
        assert left == []
        with Store(db) as store:  # no student was in a grading process that the signal ended first
            assert not [r.student for r in store.results("w07_attention") if r.internal_error or r.problem]
    else:  # kill -9 leaves its folder, hand-ins and all: the next command removes it
        assert len(left) == 1
    time.sleep(1)
    assert not processes.descendants(grader.pid), "grader processes outlived the command"
    done = run_cli("grade", "w07_attention", bundle, "--db", db, "--jobs", "2", env={"TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stderr
    assert f"{stopped} submissions already graded" in done.stderr and _committed(db) == 14
    assert list(scratch.glob("autograder-zip-*")) == []


def test_rerun_skips_unchanged_and_regrades_changed_files_and_suites(tmp_path):
    course = tmp_path / "repo"
    for folder in ("assignments", "solutions"):
        shutil.copytree(ROOT / folder, course / folder)
    shutil.copy(ROOT / "course.yaml", course / "course.yaml")
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(PLAIN, klass / "ann.py")
    shutil.copy(PLAIN, klass / "bob.py")
    db, args = tmp_path / "g.db", ("--course", course / "course.yaml")
    first, _ = _grade(klass, db=db, extra=args)
    _, done = _grade(klass, db=db, extra=args)
    assert "2 submissions already graded" in done.stderr
    compose(klass, "bob", SUBMISSIONS / "buggy" / "causal_hides_diagonal.py")
    second, done = _grade(klass, db=db, extra=args)
    assert "1 submission already graded" in done.stderr and second["bob"]["score"] < 100
    text = (course / "course.yaml").read_text().replace("softmax.input_unchanged: 1", "softmax.input_unchanged: 2")
    (course / "course.yaml").write_text(text)
    third, done = _grade(klass, db=db, extra=args)  # a changed suite: said, and left to `regrade` (README)
    assert third == {} and "regrade w07_attention --preview" in done.stderr and "2 unchanged hand-ins" in done.stderr
    assert "no hand-in in what was passed" not in done.stderr  # held for `regrade`, not gone from the folder
    forced, done = _grade(klass, db=db, extra=(*args, "--force"))
    assert "already graded" not in done.stderr
    assert forced["ann"]["suite_version"] != first["ann"]["suite_version"]
    assert forced["ann"]["max_score"] == 101


def test_two_graders_on_one_database_grade_each_hand_in_once(tmp_path):
    write_class(tmp_path / "course", 8, "nbgrader", attacks=(), broken=0)
    db = tmp_path / "g.db"
    command = [sys.executable, "-m", "autograder", "grade", "w07_attention", str(tmp_path / "course"),
               "--db", str(db), "--jobs", "1"]
    runs = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    for run in runs:
        _, stderr = run.communicate(timeout=600)
        assert run.returncode == 0, stderr
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        graded = connection.execute("SELECT COUNT(*) FROM history").fetchone()[0]
    submissions, checks, students = _rows(db)
    assert submissions == 8 and len(set(students)) == 8
    assert graded == 8  # the later run planned from what the first stored: no hand-in graded twice
    assert checks == 8 * checks // submissions


def test_a_grade_waits_for_the_command_writing_to_its_database_then_grades_what_is_left(tmp_path):
    write_class(tmp_path / "course", 4, "nbgrader", attacks=(), broken=0)
    db = tmp_path / "g.db"
    _grade(tmp_path / "course", db=db)
    changed = sorted((tmp_path / "course").rglob("*.ipynb"))[0]
    changed.write_text(changed.read_text().replace("return", "return  ", 1))
    with open(tmp_path / "g.db.lock", "w") as held:  # as another grade or regrade holds it while it runs
        held.write("`autograder grade`, process 4242, started 07:00:00")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = subprocess.Popen([sys.executable, "-m", "autograder", "grade", "w07_attention",
                                    str(tmp_path / "course"), "--db", str(db), "--jobs", "1"], cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        said = ""
        while "waiting for it to finish" not in said and waiting.poll() is None:
            said += waiting.stderr.readline()
        assert f"another command is writing to {db} (`autograder grade`, process 4242" in said, said
        time.sleep(1.0)
        assert waiting.poll() is None and _graded_count(db) == 4  # nothing graded or stored while it waits
    _, stderr = waiting.communicate(timeout=600)
    assert waiting.returncode == 0, stderr
    assert _graded_count(db) == 5  # the changed hand-in alone, once the lock was free


def _graded_count(db) -> int:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT COUNT(*) FROM history").fetchone()[0]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _fake_result(student, score):
    from autograder.grading.results import CheckResult, SubmissionResult
    test = CheckResult("softmax.x", "softmax", "hidden", "passed" if score else "timeout", score, 1.0)
    return SubmissionResult(student, "w07", "f.py", "0", "v", 1, "bwrap", (test,))


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere():
    terminal, log = _Terminal(), io.StringIO()
    for stream in (terminal, log):
        progress = Progress(2, stream=stream, skipped=1)
        progress.update(_fake_result("ann", 1.0))
        progress.update(_fake_result("bob", 0.0))
        progress.finish()
    assert "\r[" in terminal.getvalue() and "ETA" in terminal.getvalue()
    assert "full marks 1" in terminal.getvalue() and "timeouts 1" in terminal.getvalue()
    assert log.getvalue().splitlines()[1:3] == ["[1/2] ann: 1/1", "[2/2] bob: 0/1"]
    assert "\r" not in log.getvalue()
    assert "1 submission already graded" in log.getvalue()


def test_replay_shows_inputs_expected_and_returned_values(tmp_path):
    path = compose(tmp_path, "eve", SUBMISSIONS / "buggy" / "softmax_over_queries.py")
    results, _ = _grade(path, db=tmp_path / "g.db")
    stored = {t["name"]: t for t in results["eve"]["tests"]}
    assert stored["softmax.last_axis"]["status"] == "failed"
    done = run_cli("replay", "eve", "softmax.last_axis", "--db", tmp_path / "g.db")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"replay of softmax.last_axis for eve (seed {results['eve']['seed']}): failed"
    assert "call 1: softmax(arg 0)" in lines and "array of shape (2, 3, 5, 7), dtype float64:" in done.stdout
    check = stored['softmax.last_axis']  # replay is the instructor's: a hidden check's message in full
    assert f"verdict: {check.get('withheld') or check['message']}" in lines
    assert "expected:" in lines and "got:" in lines and "  returned:" in lines
    unknown = run_cli("replay", "nobody", "softmax.last_axis", "--db", tmp_path / "g.db")
    assert unknown.returncode == 2 and "no stored result for student 'nobody'" in unknown.stderr
    mistyped = run_cli("replay", "eve", "softmax.lastaxis", "--db", tmp_path / "g.db")
    assert mistyped.returncode == 2 and "has no check 'softmax.lastaxis'" in mistyped.stderr
    assert "Traceback" not in mistyped.stderr
    path.rename(tmp_path / "moved.py")  # the file graded is gone (a zip's temporary folder): the kept bytes replay
    again = run_cli("replay", "eve", "softmax.last_axis", "--db", tmp_path / "g.db")
    assert again.returncode == 0 and again.stdout == done.stdout, again.stderr
    assert run_cli("replay", "EVE", "softmax.last_axis", "--db", tmp_path / "g.db").stdout == done.stdout  # case folded


@pytest.mark.slow  # two runs of the whole command
def test_a_student_no_longer_in_the_class_folder_is_named_and_kept(tmp_path):
    """A TA took b's file out of the folder: the stored result stays (reports and exports show it), and grade says
    so, instead of a table one student short without a word."""
    folder = tmp_path / "class"
    folder.mkdir()
    for student in ("a", "b"):
        shutil.copy(PLAIN, folder / f"{student}.py")
    db = tmp_path / "g.db"
    assert run_cli("grade", "w07_attention", folder, "--db", db, "--jobs", "1").returncode == 0
    (folder / "b.py").unlink()
    done = run_cli("grade", "w07_attention", folder, "--db", db, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert "1 student stored from earlier runs has no hand-in in what was passed now: b;" in done.stderr
    with Store(db) as store:
        assert {r.student for r in store.results("w07_attention")} == {"a", "b"}
    alone = run_cli("grade", "w07_attention", folder / "a.py", "--db", db, "--jobs", "1")
    assert "stored from earlier runs" not in alone.stderr  # one file named: the rest of the class is not missing
    (folder / "c").mkdir()
    shutil.copy(PLAIN, folder / "c" / "attention.py")
    alone = run_cli("grade", "w07_attention", folder / "c", "--db", db, "--jobs", "1")
    assert alone.returncode == 0 and "stored from earlier runs" not in alone.stderr, alone.stderr  # c's folder
    with Store(db) as store:
        assert {r.student for r in store.results("w07_attention")} == {"a", "b", "c"}


def test_a_file_renamed_only_in_case_is_the_same_student(tmp_path):
    """s0001.py renamed S0001.py between runs was a second student in every export, graded on other inputs."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(PLAIN, folder / "s0001.py")
    db = tmp_path / "g.db"
    assert run_cli("grade", "w07_attention", folder, "--db", db, "--jobs", "1").returncode == 0
    (folder / "s0001.py").rename(folder / "S0001.py")
    done = run_cli("grade", "w07_attention", folder, "--db", db, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert "S0001.py is graded as s0001, the id stored from earlier runs" in done.stderr
    assert "stored from earlier runs has no hand-in" not in done.stderr
    with Store(db) as store:
        assert store.students("w07_attention") == {"s0001"}


@pytest.mark.slow  # the whole command
def test_a_class_folder_passed_as_a_link_is_graded(tmp_path):
    """A TA's class folder reached through a link (kept on another disk): the link is the TA's path, not a student's
    part of it, so every hand-in in it is graded; a student's own file or folder that is a link is not."""
    real = tmp_path / "real"
    real.mkdir()
    shutil.copy(PLAIN, real / "a.py")
    (tmp_path / "class").symlink_to(real, target_is_directory=True)
    done = run_cli("grade", "w07_attention", tmp_path / "class", "--db", tmp_path / "g.db", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    with Store(tmp_path / "g.db") as store:
        assert [(r.student, r.score) for r in store.results("w07_attention")] == [("a", 100.0)]


def test_a_stop_of_a_forced_grade_says_to_run_it_again_without_force():
    """After Ctrl-C on `grade --force`, "run the same command again to finish" would have graded everyone again."""
    import argparse

    from autograder.cli import _after_stop

    assert "again without --force to grade the rest" in _after_stop(argparse.Namespace(command="grade", force=True))
    assert _after_stop(argparse.Namespace(command="grade", force=False)).endswith("run the same command again to "
                                                                                  "finish")
