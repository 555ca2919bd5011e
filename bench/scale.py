"""Cost per student as the class grows: grade, rerun unchanged, report, export.

Builds flat classes of each size (bench/make_class.py: mostly correct, ~15 %
with one bug), then for each runs, as a TA would:

    autograder grade w07_attention CLASS --jobs J --db DB     (grading)
    autograder grade w07_attention CLASS --jobs J --db DB     (again: every hand-in unchanged, all skipped)
    autograder report --db DB --out REPORT
    autograder export csv --db DB --out grades.csv

and prints each step's seconds per student and peak memory (PSS of the whole
process tree), the ratio of the largest class's time per student to the
smallest's for each step (1.0 means linear; it must not grow with the
class), and the rerun's time as a share of grading (target <= 20 %).

    python bench/scale.py [--sizes 500,5000] [--jobs 2]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from make_class import write_class
from measure import run_measured

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "w07_attention"
STEPS = ("grade", "rerun", "report", "export csv")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,5000", help="class sizes, comma-separated (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        measured = {size: measure_class(work / str(size), size, args.jobs) for size in sizes}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    show(measured, args.jobs)


def measure_class(folder: Path, size: int, jobs: int) -> dict:
    """step -> (seconds per student, peak PSS in MiB) for one class of `size` hand-ins."""
    write_class(folder / "class", size, "flat", (), 0)
    db = folder / "grades.db"
    grade = ["grade", ASSIGNMENT, str(folder / "class"), "--jobs", str(jobs), "--db", str(db)]
    commands = {"grade": grade, "rerun": grade,
                "report": ["report", "--db", str(db), "--out", str(folder / "report")],
                "export csv": ["export", "csv", "--db", str(db), "--out", str(folder / "grades.csv")]}
    found = {}
    for step in STEPS:
        done = run_measured([sys.executable, "-m", "autograder", *commands[step]], cwd=ROOT)
        if done.returncode != 0:
            sys.exit(f"`autograder {' '.join(commands[step])}` failed:\n{done.stderr[-3000:]}")
        found[step] = (done.seconds / size, done.peak_pss_mib)
    return found


def show(measured: dict, jobs: int) -> None:
    sizes = sorted(measured)
    print(f"--jobs {jobs}, full hidden suite, flat classes (mostly correct, ~15 % with one bug)")
    print(f"{'step':<11}" + "".join(f"{f'{size} students: ms/student, MiB':>34}" for size in sizes)
          + f"{'largest/smallest per student':>32}")
    for step in STEPS:
        cells = "".join(f"{measured[size][step][0] * 1000:>24.2f}{measured[size][step][1]:>10.0f}" for size in sizes)
        growth = measured[sizes[-1]][step][0] / measured[sizes[0]][step][0]
        print(f"{step:<11}{cells}{growth:>32.2f}")
    for size in sizes:
        share = measured[size]["rerun"][0] / measured[size]["grade"][0]
        print(f"rerun of {size} unchanged hand-ins: {share:.1%} of grading them   target <= 20 %")


if __name__ == "__main__":
    main()
