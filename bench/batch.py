"""Batch grading throughput, in one run: a plain class, one with hanging students, the in-process limit, nbgrader.

Builds a class of N notebooks in nbgrader's layout (the released week-7
notebook with each student's code in its answer cells; correct variants and
~15 % with one bug) and grades it with `autograder grade --jobs J` (full
hidden suite, calibrated time limits, the sandbox on). Then the same class
with H % of the students replaced by ones whose function hangs (an endless
loop, a long sleep). Then the same plain class graded in-process, without a
sandbox, one Grader kept per process (bench/inprocess.py: the limit). Then
a sample of the same notebooks with nbgrader's own `autograde` (which runs
student code unsandboxed in its kernel). It prints each rate (for the whole
command, and once the suite is loaded), the ratios the
targets are stated in, and the peak memory (PSS) of each grader's whole
process tree.

    python bench/batch.py [--students 200] [--hanging-percent 5] [--nbgrader-sample 8] [--jobs 2]
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder.nbgrader.release import nbgrader_env
from autograder.nbgrader.source import fill_answers

from make_class import write_class
from measure import run_measured

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "w07_attention"
FUNCTIONS = ("score", "additive_score", "causal_mask", "padding_mask", "apply_mask", "softmax", "context",
             "attention", "attention_torch")
HANGING = ("infinite_loop_in_function", "sleep_in_function")


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
    parser.add_argument("--hanging-percent", type=int, default=5)
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


def grade(course: Path, jobs: int, db: Path):
    done = run_measured([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(course), "--jobs", str(jobs),
                         "--db", str(db), "--force"], cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"autograder grade failed:\n{done.stderr[-3000:]}")
    return done


def run(args, work: Path) -> None:
    released = nbformat.read(make_course(work / "plain"), as_version=4)

    def to_notebook(code: str):
        return fill_answers(released, code, FUNCTIONS)

    roster = write_class(work / "plain", args.students, "nbgrader", (), 0, to_notebook)
    hanging = tuple(HANGING[i % len(HANGING)] for i in range(args.students * args.hanging_percent // 100))
    make_course(work / "hanging")
    write_class(work / "hanging", args.students, "nbgrader", hanging, 0, to_notebook)
    sample = [student for student, _, _ in roster][:args.nbgrader_sample]
    make_course(work / "theirs")
    for student in sample:
        shutil.copytree(work / "plain" / "submitted" / student, work / "theirs" / "submitted" / student)

    plain = grade(work / "plain", args.jobs, work / "plain.db")
    hung = grade(work / "hanging", args.jobs, work / "hanging.db")
    inprocess = run_measured([sys.executable, str(ROOT / "bench" / "inprocess.py"), str(work / "plain" / "submitted"),
                              "--jobs", str(args.jobs)], cwd=ROOT)
    if inprocess.returncode != 0:
        sys.exit(f"the in-process run failed:\n{inprocess.stderr[-3000:]}")
    theirs = run_measured([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--force"],
                          cwd=work / "theirs", env=nbgrader_env())
    if theirs.returncode != 0:
        sys.exit(f"nbgrader autograde failed:\n{theirs.stderr[-2000:]}")

    count, loaded_seconds = inprocess.stdout.split()
    whole = {"plain": len(roster) / plain.seconds, "hanging": len(roster) / hung.seconds,
             "inprocess": int(count) / inprocess.seconds, "nbgrader": len(sample) / theirs.seconds}
    loaded = {"plain": len(roster) / graded_seconds(plain), "hanging": len(roster) / graded_seconds(hung),
              "inprocess": int(count) / float(loaded_seconds)}
    kinds = [kind for _, kind, _ in roster]
    print(f"class: {len(roster)} notebooks ({kinds.count('correct')} correct, {kinds.count('buggy')} with one bug); "
          f"--jobs {args.jobs}, full hidden suite, calibrated limits, sandbox as `autograder doctor` shows")
    print("rates in submissions/s: the whole command (start-up included) / once the suite is loaded")
    print(f"plain class, sandboxed:     {_pair(whole, loaded, 'plain')}   peak memory {plain.peak_pss_mib:.0f} MiB "
          "(PSS, all grader processes)   target >= 25/s, < 1536 MiB")
    print(f"{len(hanging)} hanging ({args.hanging_percent} %), sandboxed: {_pair(whole, loaded, 'hanging')}   "
          f"= {whole['hanging'] / whole['plain']:.0%} / {loaded['hanging'] / loaded['plain']:.0%} of the plain rate"
          "   target >= 80 %")
    print(f"in-process, no sandbox:     {_pair(whole, loaded, 'inprocess')}   ({args.jobs} processes, one Grader "
          f"each); sandboxed/in-process = {whole['plain'] / whole['inprocess']:.2f} / "
          f"{loaded['plain'] / loaded['inprocess']:.2f}   target >= 0.8")
    print(f"nbgrader autograde:         {whole['nbgrader']:6.3f}   ({len(sample)} of the notebooks), peak memory "
          f"{theirs.peak_pss_mib:.0f} MiB; ours/nbgrader = {whole['plain'] / whole['nbgrader']:.0f}x   target >= 100x")


def graded_seconds(run) -> float:
    """The grading time `autograder grade` reports itself ("graded N submissions in S s"): after loading."""
    found = re.search(r"graded \d+ submissions in ([0-9.]+) s", run.stderr + run.stdout)
    if not found:
        sys.exit(f"no 'graded N submissions in S s' line in autograder grade's output:\n{run.stderr[-2000:]}")
    return float(found.group(1))


def _pair(whole: dict, loaded: dict, kind: str) -> str:
    return f"{whole[kind]:6.1f} / {loaded[kind]:6.1f}"


if __name__ == "__main__":
    main()
