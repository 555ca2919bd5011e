"""Build a class of week-7 submissions from the test fixtures.

Used for the bundled example class (examples/w07_class) and for the batch
benchmark's classes. By default most students are correct (the correct
variants in turn) and 15 % have one bug (a buggy/ fixture appended to
correct/plain.py); --buggy-percent sets that share of the honest students
(70 for a class before its deadline, 0 or 100 for a class of one kind).
A few may attack the grader (--attacks), hand in a broken notebook
(--broken), or be slow (--slow-percent: a call that never returns, from
attacks/, every function a Python loop over every entry, from slow/, or a
right file whose own code costs half a second, from correct/, in turn).
Deterministic: the same arguments give the same students.

    python bench/make_class.py OUT --students 12 [--layout nbgrader|flat] [--attacks name,name]
        [--buggy-percent 15] [--slow-percent 0]
"""
from __future__ import annotations

import argparse
import datetime
import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = ROOT / "tests" / "fixtures" / "submissions"
ASSIGNMENT = "w07_attention"
# Attacks that finish quickly; the slow ones (sleeping, hanging) belong in the sandbox tests.
QUICK_ATTACKS = ("patch_allclose", "lying_subclass", "object_array", "import_reference", "read_neighbours",
                 "fake_results_print", "write_results_files", "exit_in_function", "sys_exit_in_function",
                 "allocate_huge", "return_huge_broadcast", "network")
# Slow students, in turn: a function that hangs (attacks/), and whole submissions whose every function loops in
# Python over every entry (slow/): right, and stopped only by the scale checks.
HANGING = ("infinite_loop_in_function", "sleep_in_function")
LOOPING = ("loops_python_lists", "loops_numpy_indexing")
# Right files whose own code costs far more than grading an ordinary one (first_call_import builds a table for
# 0.5 s of processor time on its first call, issue 21's one-time cost): slow students, not among the correct.
COSTLY = ("first_call_import",)
SLOW_MIX = (("hanging", HANGING[0]), ("slow", LOOPING[0]), ("costly", COSTLY[0]), ("hanging", HANGING[1]),
            ("slow", LOOPING[1]))
FOLDERS = {"buggy": "buggy", "attack": "attacks", "hanging": "attacks", "slow": "slow"}  # kind -> its fixtures
WHOLE = ("correct", "costly")  # kinds whose file from correct/ is the whole submission
BROKEN = {
    "not_json": b'{"cells": [ {"cell_type": "code", "source": "def score(',
    "empty": b"",
    "binary": bytes(range(256)) * 4,
}


def notebook_from_code(code: str) -> nbformat.NotebookNode:
    """Split a module at its top-level functions into code cells, as a student's notebook would be."""
    chunks, current = [], []
    for line in code.splitlines():
        if line.startswith("def ") and current:
            chunks.append("\n".join(current).strip("\n"))
            current = []
        current.append(line)
    chunks.append("\n".join(current).strip("\n"))
    cells = [nbformat.v4.new_markdown_cell("# Week 7: attention")]
    cells += [nbformat.v4.new_code_cell(chunk) for chunk in chunks if chunk]
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                          "language": "python"}})


@dataclass(frozen=True)
class Mix:
    """Who the honest students are: `buggy_percent` of them have one bug (at least one student unless 0);
    `slow_percent` of the whole class are slow students (SLOW_MIX in turn) instead."""

    buggy_percent: int = 15
    slow_percent: int = 0


def plan(students: int, attacks: tuple[str, ...], broken: int, mix: Mix = Mix()) -> list[tuple[str, str, str]]:
    """(student id, kind, fixture name) for every student, shuffled the same way for the same arguments.

    kind: correct, buggy, attack, broken, hanging, slow or costly.
    """
    correct = sorted(p.stem for p in (SUBMISSIONS / "correct").glob("*.py") if p.stem not in COSTLY)
    buggy = sorted(p.stem for p in (SUBMISSIONS / "buggy").glob("*.py"))
    rows = [("attack", name) for name in attacks] + [("broken", name) for name in list(BROKEN)[:broken]]
    rows += [SLOW_MIX[i % len(SLOW_MIX)] for i in range(students * mix.slow_percent // 100)]
    honest = students - len(rows)
    n_buggy = max(1, honest * mix.buggy_percent // 100) if mix.buggy_percent else 0
    rows += [("buggy", buggy[i % len(buggy)]) for i in range(n_buggy)]
    rows += [("correct", correct[i % len(correct)]) for i in range(honest - n_buggy)]
    random.Random(7).shuffle(rows)
    return [(f"s{index:04d}", kind, name) for index, (kind, name) in enumerate(rows[:students], start=1)]


def code_for(kind: str, name: str) -> str:
    """A student's code: a correct variant, or plain.py with the fixture appended, as the tests compose them."""
    if kind in WHOLE:
        return (SUBMISSIONS / "correct" / f"{name}.py").read_text()
    plain = (SUBMISSIONS / "correct" / "plain.py").read_text()
    return plain + "\n\n" + (SUBMISSIONS / FOLDERS[kind] / f"{name}.py").read_text()


def handed_in(number: int) -> str:
    """nbgrader's timestamp.txt for the `number`th student: a fixed evening, 37 minutes apart."""
    moment = datetime.datetime(2026, 11, 20, 18, 0, tzinfo=datetime.UTC) + datetime.timedelta(minutes=37 * number)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def write_class(out: Path, students: int, layout: str, attacks: tuple[str, ...], broken: int,
                to_notebook=notebook_from_code, mix: Mix = Mix()) -> list:
    """Write the class under `out` (replacing what is there); returns the plan so callers know who is who.

    to_notebook: turns a student's code into their notebook (default: one cell per function).
    """
    if out.exists():
        shutil.rmtree(out)
    rows = plan(students, attacks, broken, mix)
    for number, (student, kind, name) in enumerate(rows):
        folder = out / "submitted" / student / ASSIGNMENT if layout == "nbgrader" else out
        folder.mkdir(parents=True, exist_ok=True)
        if layout == "nbgrader":  # as `nbgrader collect` leaves it: when the student handed it in
            (folder / "timestamp.txt").write_text(handed_in(number))
        stem = "attention" if layout == "nbgrader" else student
        if kind == "broken":
            (folder / f"{stem}.ipynb").write_bytes(BROKEN[name])
        elif layout == "flat" and number % 4 == 0:
            (folder / f"{stem}.py").write_text(code_for(kind, name))
        else:
            nbformat.write(to_notebook(code_for(kind, name)), folder / f"{stem}.ipynb")
    (out / "roster.json").write_text(json.dumps([{"student": s, "kind": k, "fixture": n} for s, k, n in rows],
                                                indent=1) + "\n")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--layout", choices=("nbgrader", "flat"), default="nbgrader")
    parser.add_argument("--attacks", default="", help="comma-separated attack fixtures to include")
    parser.add_argument("--broken", type=int, default=1, help="broken notebooks to include (at most 3)")
    parser.add_argument("--buggy-percent", type=int, default=15,
                        help="share of the honest students with one bug (default 15; 70: before a deadline)")
    parser.add_argument("--slow-percent", type=int, default=0,
                        help="share of the class that hangs or loops in Python over every entry (default 0)")
    args = parser.parse_args()
    for name in ("buggy_percent", "slow_percent"):
        if not 0 <= getattr(args, name) <= 100:
            parser.error(f"--{name.replace('_', '-')} is a percentage: give a number from 0 to 100")
    attacks = tuple(a for a in args.attacks.split(",") if a)
    rows = write_class(args.out, args.students, args.layout, attacks, args.broken,
                       mix=Mix(args.buggy_percent, args.slow_percent))
    print(f"wrote {len(rows)} submissions to {args.out}")


if __name__ == "__main__":
    main()
