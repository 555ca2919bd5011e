"""Batch grading throughput: `autograder grade --jobs 2` against `nbgrader autograde`, in one run.

Builds a class of N notebooks in nbgrader's layout — the released week-7
notebook with each student's code in its answer cells; mostly correct, ~15 %
with one bug, a few attacks and broken files — and grades all of them with
the full hidden suite and the sandbox on. In the same run it grades a sample
of the same honest notebooks with nbgrader's own `autograde` (which runs
student code unsandboxed, so no attacks go there), and prints both rates,
their ratio, and the peak memory (PSS) of each grader's whole process tree.

    python bench/batch.py [--students 200] [--nbgrader-sample 8] [--jobs 2]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder.nbgrader.release import nbgrader_env
from autograder.nbgrader.source import fill_answers

from make_class import QUICK_ATTACKS, write_class
from measure import run_measured

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "w07_attention"
FUNCTIONS = ("score", "additive_score", "causal_mask", "padding_mask", "apply_mask", "softmax", "context",
             "attention", "attention_torch")


def make_course(root: Path) -> Path:
    """An nbgrader course whose source folder is this repository's assignments/, released with our command."""
    root.mkdir(parents=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.source_directory = {str(ROOT / 'assignments')!r}\n"
        f"c.CourseDirectory.db_url = {'sqlite:///' + str(root / 'gradebook.db')!r}\n")
    done = run_measured([sys.executable, "-m", "autograder", "release", ASSIGNMENT, "--out", str(root / "release"),
                         "--gradebook", str(root / "gradebook.db")], cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"release failed:\n{done.stdout}\n{done.stderr}")
    return root / "release" / ASSIGNMENT / "attention.ipynb"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--nbgrader-sample", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the generated courses in this folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        run(args, work)
    finally:
        if args.keep:
            shutil.move(str(work), args.keep)
        else:
            shutil.rmtree(work, ignore_errors=True)


def run(args, work: Path) -> None:
    released = nbformat.read(make_course(work / "ours"), as_version=4)

    def to_notebook(code: str):
        return fill_answers(released, code, FUNCTIONS)

    roster = write_class(work / "ours", args.students, "nbgrader", QUICK_ATTACKS[:4], 2, to_notebook)
    honest = [student for student, kind, _ in roster if kind in ("correct", "buggy")][:args.nbgrader_sample]
    make_course(work / "theirs")
    for student in honest:
        shutil.copytree(work / "ours" / "submitted" / student, work / "theirs" / "submitted" / student)

    ours = run_measured([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(work / "ours"),
                         "--jobs", str(args.jobs), "--db", str(work / "grades.db"), "--force"], cwd=ROOT)
    if ours.returncode != 0:
        sys.exit(f"autograder grade failed:\n{ours.stderr}")
    theirs = run_measured([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--force"],
                          cwd=work / "theirs", env=nbgrader_env())
    if theirs.returncode != 0:
        sys.exit(f"nbgrader autograde failed:\n{theirs.stderr[-2000:]}")

    our_rate = len(roster) / ours.seconds
    their_rate = len(honest) / theirs.seconds
    print(f"class: {len(roster)} notebooks ({sum(k == 'correct' for _, k, _ in roster)} correct, "
          f"{sum(k == 'buggy' for _, k, _ in roster)} with one bug, {sum(k == 'attack' for _, k, _ in roster)} "
          f"attacks, {sum(k == 'broken' for _, k, _ in roster)} broken)")
    print(f"autograder grade --jobs {args.jobs}: {len(roster)} in {ours.seconds:.1f} s = {our_rate:.2f} "
          f"submissions/s, peak memory {ours.peak_pss_mib:.0f} MiB (PSS, all grader processes)")
    print(f"nbgrader autograde:       {len(honest)} in {theirs.seconds:.1f} s = {their_rate:.3f} submissions/s, "
          f"peak memory {theirs.peak_pss_mib:.0f} MiB")
    print(f"ratio: {our_rate / their_rate:.0f}x nbgrader's rate")


if __name__ == "__main__":
    main()
