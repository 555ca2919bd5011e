"""A class with hanging students, graded by this checkout and by a peer checkout (e.g. the main branch) in one run.

The class is bench/batch.py's: N notebooks in nbgrader's layout, correct variants and ~15 % with one
bug, H % of them replaced by students whose function hangs (an endless loop, a long sleep). Both
checkouts grade the same files with `autograder grade --jobs J --force` (full hidden suite,
calibrated limits, the sandbox on), alternating, `--rounds` times each; each uses its own code and
its own course.yaml. Printed: each run's rate (whole command / once the suite is loaded) and the
ratio of the medians, ours over the peer's.

    git worktree add /tmp/peer main   # or any other checkout to compare with
    python bench/hanging_class.py --peer /tmp/peer [--students 100] [--hanging-percent 5] [--rounds 2]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder.nbgrader.source import fill_answers

from batch import ASSIGNMENT, FUNCTIONS, graded_seconds, make_course
from make_class import HANGING, write_class
from measure import run_measured

ROOT = Path(__file__).resolve().parents[1]


def grade(checkout: Path, course: Path, jobs: int, db: Path) -> tuple[float, float]:
    """(whole command, once loaded) seconds of `checkout`'s `autograder grade` on the class in `course`."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = run_measured([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(course), "--jobs", str(jobs),
                         "--db", str(db), "--force"], cwd=checkout, env=env)
    if done.returncode != 0:
        sys.exit(f"autograder grade in {checkout} failed:\n{done.stderr[-3000:]}")
    return done.seconds, graded_seconds(done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--hanging-percent", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-hanging-"))
    try:
        released = nbformat.read(make_course(work / "class"), as_version=4)
        hanging = tuple(HANGING[i % len(HANGING)] for i in range(args.students * args.hanging_percent // 100))
        write_class(work / "class", args.students, "nbgrader", hanging, 0,
                    lambda code: fill_answers(released, code, FUNCTIONS))
        runs: dict[str, list[tuple[float, float]]] = {"ours": [], "peer": []}
        for round_ in range(args.rounds):
            for name, checkout in (("ours", ROOT), ("peer", args.peer.resolve())):
                runs[name].append(grade(checkout, work / "class", args.jobs, work / f"{name}{round_}.db"))
                whole, loaded = runs[name][-1]
                print(f"round {round_ + 1} {name}: {args.students / whole:5.1f} / {args.students / loaded:5.1f} "
                      "submissions/s (whole command / once loaded)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {name: [statistics.median(run[i] for run in runs[name]) for i in (0, 1)] for name in runs}
    print(f"{len(hanging)} of {args.students} students hang; --jobs {args.jobs}; medians of {args.rounds} runs each")
    print(f"ours / peer rate: {medians['peer'][0] / medians['ours'][0]:.2f} (whole command), "
          f"{medians['peer'][1] / medians['ours'][1]:.2f} (once loaded)")


if __name__ == "__main__":
    main()
