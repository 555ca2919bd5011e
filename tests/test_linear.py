"""Every command's cost stays linear in the class: what it asks of the store does not grow with the class.

Each command runs on a real store (bench/synthetic.py: real results saved by
`Store.save`, current for a real class folder) of 10 students and of 100, and
every SQL statement SQLite runs for it is counted, through sqlite3's trace
callback on each connection the command opens. A command that asked once per
student, or looked each student up in a loop, would run 90 more on the
larger class; one that reads the class once runs the same number on both.
Timing would say the same less reliably; the count is exact. The statements
that touch a table are also made to use an index and no sort of their own
(EXPLAIN QUERY PLAN): a statement that walked the whole table would make a
command run for one student cost as much as one for the class.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from autograder.cli import main
from autograder.grading.course import load_course
from autograder.grading.history import attempts
from autograder.grading.regrade import hand_ins
from autograder.grading.store import Store
from autograder.grading.suite import load_suite

from conftest import FIXTURES, ROOT, TINY_COURSE

sys.path.insert(0, str(ROOT / "bench"))
from synthetic import fill_store  # noqa: E402

SIZES = (10, 100)


@dataclasses.dataclass(frozen=True)
class Class:
    """One class on disk: its course, hand-ins, store and roster."""

    size: int
    course: Path
    folder: Path
    db: Path
    roster: Path


def _write_class(root: Path, size: int) -> Class:
    for part in ("assignments", "solutions"):
        shutil.copytree(FIXTURES / "tiny" / part / "tiny", root / part / "tiny")
    (root / "course.yaml").write_text(TINY_COURSE)
    folder = root / "class"
    folder.mkdir()
    lines = ["student,name,email,lms_id"]
    for number in range(size):
        student = f"s{number:04d}"
        path = folder / f"{student}.py"
        path.write_text(f"def double(x):\n    return 2 * x  # {student}\n")
        os.utime(path, (1_800_000_000 + number, 1_800_000_000 + number))  # when handed in
        lines.append(f"{student},Student {number},{student}@uni.edu,{1000 + number}")
    (root / "roster.csv").write_text("\n".join(lines) + "\n")
    course = load_course(root / "course.yaml")
    fill_store(root / "grades.db", load_suite(course, "tiny"), [folder])
    return Class(size, root / "course.yaml", folder, root / "grades.db", root / "roster.csv")


@pytest.fixture(scope="module")
def classes(tmp_path_factory) -> dict[int, Class]:
    return {size: _write_class(tmp_path_factory.mktemp(f"class{size}"), size) for size in SIZES}


@dataclasses.dataclass
class Trace:
    """What SQLite did on the connections opened inside `traced()`: each statement run, in order, and its work,
    in tens of virtual machine instructions (deterministic, unlike time)."""

    statements: list[str] = dataclasses.field(default_factory=list)
    work: int = 0

    def step(self) -> int:
        self.work += 1
        return 0  # go on


@contextlib.contextmanager
def traced():
    """A Trace of every connection opened inside the block (it fills as statements run)."""
    trace = Trace()
    connect = sqlite3.connect

    def connect_traced(*args, **kwargs):
        db = connect(*args, **kwargs)
        db.set_trace_callback(trace.statements.append)
        db.set_progress_handler(trace.step, 10)
        return db
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite3, "connect", connect_traced)
        yield trace


def _command(group: Class, out: Path, name: str) -> list[str]:
    """The command line of `name`, run on `group`'s store."""
    where = ["--db", str(group.db), "--course", str(group.course)]
    return {"report": ["report", "--out", str(out / "report"), *where],
            "export csv": ["export", "csv", "--out", str(out / "grades.csv"), *where],
            "export canvas": ["export", "canvas", "--roster", str(group.roster), "--out", str(out / "canvas.csv"),
                              *where],
            "history": ["history", "tiny", "s0003", *where],
            "rerun": ["grade", "tiny", str(group.folder), "--jobs", "1", *where]}[name]


def _history_rows(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db)) as connection:
        return connection.execute("SELECT COUNT(*) FROM history").fetchone()[0]


# How a command's SQL work may grow from 10 students to 100: the history of one student not at all, the others with
# the class (ten times the students: at most ten times the work, far from the hundred times of a quadratic).
GROWTH = {"report": 10, "export csv": 10, "export canvas": 10, "history": 1.2, "rerun": 10}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name == "rerun" else name
                                  for name in GROWTH])  # the rerun probes the sandbox: a process of its own
def test_a_command_asks_the_store_as_often_for_100_students_as_for_10(classes, name, tmp_path, capsys):
    done = {}
    for size, group in classes.items():
        kept = _history_rows(group.db)
        with traced() as trace:
            status = main(_command(group, tmp_path / str(size), name))
        said = capsys.readouterr()
        assert status == 0, said.err
        assert _history_rows(group.db) == kept  # the rerun graded nothing: every hand-in was current
        done[size] = trace
    small, large = done[10], done[100]
    assert len(small.statements) == len(large.statements), \
        f"{name}: {len(small.statements)} statements for 10 students, {len(large.statements)} for 100"
    assert len(large.statements) < 70  # a few dozen at most (opening the store, its columns), not a few per student
    assert large.work <= GROWTH[name] * max(small.work, 1), f"{name}: SQL work {small.work} -> {large.work}"


def test_saving_one_result_and_opening_the_store_do_not_grow_with_the_class(classes, tmp_path):
    counts = {}
    for size, group in classes.items():
        db = tmp_path / f"{size}.db"
        shutil.copy(group.db, db)
        with Store(db) as store:
            late = dataclasses.replace(store.results("tiny")[3], score=0.5, graded_at="2026-12-01T00:00:00+00:00")
        with traced() as trace, Store(db) as store:
            store.save(late)  # a new result of a stored hand-in: its row replaced, its history grown
        counts[size] = len(trace.statements)
    assert counts[10] == counts[100], counts


def test_regrade_reads_every_kept_hand_in_in_one_query(classes, tmp_path):
    counts = {}
    for size, group in classes.items():
        with traced() as trace, Store(group.db) as store:
            opened = len(trace.statements)
            todo, lost = hand_ins(store, attempts(store.history("tiny")), tmp_path / str(size), "tiny", {})
            counts[size] = len(trace.statements) - opened
        assert len(todo) == size and not lost
        assert todo[0].found.path.read_bytes() == (group.folder / "s0000.py").read_bytes()
    assert counts[10] == counts[100], counts


def test_every_statement_that_reads_a_table_finds_its_rows_by_an_index(classes, tmp_path, capsys):
    group = classes[100]
    shutil.copy(group.db, tmp_path / "saved.db")
    with traced() as trace:
        with Store(tmp_path / "saved.db") as store:  # a copy: the class's store stays as the other tests expect it
            store.save(dataclasses.replace(store.results("tiny")[3], graded_at="2026-12-01T00:00:00+00:00"))
        for name in ("report", "export canvas", "history"):
            assert main(_command(group, tmp_path, name)) == 0
        with Store(group.db) as store:
            assert len(store.grading_keys("tiny")) == group.size and not store.is_current("tiny", "s0003", "", "")
            hand_ins(store, attempts(store.history("tiny", ["s0003"])), tmp_path / "handins", "tiny", {})
    capsys.readouterr()
    with contextlib.closing(sqlite3.connect(group.db)) as connection:
        scans = {statement: plan for statement in set(trace.statements) if _reads_rows(statement)
                 for plan in [_plan(connection, statement)] if _scans(plan)}
    assert not scans, scans


# Statements that may walk an index: the list of a store's assignments reads the index of (assignment, student)
# from end to end, once per command (a few milliseconds for 20,000 results).
MAY_WALK = ("SELECT DISTINCT assignment FROM submissions ORDER BY 1",)


def _reads_rows(statement: str) -> bool:
    """A statement that finds rows of a table: not a transaction, a pragma or the schema's creation."""
    first = statement.split(None, 1)[0].upper()
    return (first in ("SELECT", "UPDATE", "DELETE") and statement not in MAY_WALK
            and "LIMIT 1" not in statement  # LIMIT 1: it stops at the first row
            and "sqlite_master" not in statement)  # the schema's own list of tables: as many rows as tables


def _plan(connection: sqlite3.Connection, statement: str) -> list[str]:
    return [row[3] for row in connection.execute("EXPLAIN QUERY PLAN " + statement)]


def _scans(plan: list[str]) -> bool:
    """Whether the plan walks a whole table or index (a list of values given as JSON is walked, and is no table),
    or sorts what it found in a temporary table (every check, or every result's JSON, of the class)."""
    return any(step.startswith("SCAN") and "json_each" not in step or "TEMP B-TREE" in step for step in plan)


def test_a_database_from_before_the_indices_gets_them_when_opened(classes, tmp_path):
    db = tmp_path / "old.db"
    shutil.copy(classes[10].db, db)
    with contextlib.closing(sqlite3.connect(db)) as connection:
        connection.execute("DROP INDEX checks_in_order")
        connection.execute("DROP INDEX history_by_student")
        connection.commit()
    with Store(db) as store:
        assert len(store.history("tiny", ["s0003"])) == 1
    with contextlib.closing(sqlite3.connect(db)) as connection:
        indices = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"checks_in_order", "history_by_student"} <= indices
