"""Cost per student as the class grows: grade, rerun unchanged, report, export, history.

Builds flat classes of each size (bench/make_class.py: mostly correct, ~15 %
with one bug), then for each runs, as a TA would:

    autograder grade w07_attention CLASS --jobs J --db DB     (grading; --cluster ADDRESS instead of --jobs)
    autograder grade w07_attention CLASS --jobs J --db DB     (again: every hand-in unchanged, all skipped)
    autograder report --db DB --out REPORT
    autograder export csv --db DB --out grades.csv
    autograder export canvas --roster ROSTER --db DB --out canvas.csv
    autograder history w07_attention STUDENT --db DB          (one student: its time must not grow at all)

and prints each step's milliseconds per student and peak memory (PSS of the
whole process tree), the ratio of the largest class's time per student to
the smallest's (at most ~1.3 is flat: the cost is linear; history's ratio is
of its whole time, which must not grow with the class), the rerun's time as a
share of grading (target <= 20 %), and the rerun's time on the largest class.
Each time includes the command's start (Python, the grader's imports): a
constant that makes small classes look dearer per student, never cheaper.

With --synthetic nothing is graded: each store is filled directly with real
results, current for the class folder (bench/synthetic.py), so the rerun,
report, export and history steps can be measured at 5,000 or 20,000 students
in minutes rather than days.

    python bench/scale.py [--sizes 500,5000] [--jobs 2 | --cluster local:2] [--synthetic]
"""
from __future__ import annotations

import argparse
import csv
import json
import resource
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from make_class import write_class
from measure import run_measured

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "w07_attention"
STEPS = ("grade", "rerun", "report", "export csv", "export canvas", "history")
PER_COMMAND = {"history"}  # one student's: its whole time is compared, not a time per student of the class
REPEATS = 5  # runs of a PER_COMMAND step, of which the median counts
FLAT = 1.3  # the most the per-student time may grow from the smallest class to the largest and still be linear
RERUN_SHARE = 0.20


@dataclass(frozen=True)
class Step:
    """One step on one class: wall seconds, CPU seconds of its process tree (user + system: what a busy machine
    changes least), peak PSS of its process tree."""

    seconds: float
    cpu: float
    peak_mib: float


def run_step(command: list[str]) -> Step:
    """Run `command` to completion, measured; exits saying what failed if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = run_measured(command, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"`{' '.join(command)}` failed:\n{done.stderr[-3000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Step(done.seconds, cpu, done.peak_pss_mib)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,5000", help="class sizes, comma-separated (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cluster", help="grade with `--cluster ADDRESS` (local:2: two Dask workers here) instead "
                                          "of --jobs")
    parser.add_argument("--synthetic", action="store_true", help="fill each store with results directly instead of "
                                                                 "grading (bench/synthetic.py); no grade step")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    how = ["--cluster", args.cluster] if args.cluster else ["--jobs", str(args.jobs)]
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        measured = {size: measure_class(work / str(size), size, how, args.synthetic) for size in sizes}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    show(measured, " ".join(how), args.synthetic)


def measure_class(folder: Path, size: int, how: list[str], synthetic: bool) -> dict[str, Step]:
    """step -> what it cost on one class of `size` hand-ins."""
    rows = write_class(folder / "class", size, "flat", (), 0)
    roster = write_roster(folder / "roster.csv", [student for student, _, _ in rows])
    db = folder / "grades.db"
    grade = ["grade", ASSIGNMENT, str(folder / "class"), *how, "--db", str(db)]
    where = ["--db", str(db)]
    commands = {"grade": grade, "rerun": grade,
                "report": ["report", *where, "--out", str(folder / "report")],
                "export csv": ["export", "csv", *where, "--out", str(folder / "grades.csv")],
                "export canvas": ["export", "canvas", "--roster", str(roster), *where, "--out", str(folder / "c.csv")],
                "history": ["history", ASSIGNMENT, rows[size // 2][0], *where]}
    found = {}
    if synthetic:
        found["fill"] = fill(folder / "class", db)
    for step in STEPS:
        if synthetic and step == "grade":
            continue
        # A one-student command takes under a second: one run is mostly the machine's noise, so take the median.
        runs = [run_step([sys.executable, "-m", "autograder", *commands[step]])
                for _ in range(REPEATS if step in PER_COMMAND else 1)]
        found[step] = done = sorted(runs, key=lambda run: run.seconds)[len(runs) // 2]
        print(f"  {size} students, {step}: {done.seconds:.1f} s ({done.cpu:.1f} s CPU), {done.peak_mib:.0f} MiB",
              file=sys.stderr)
    return found


def write_roster(path: Path, students: list[str]) -> Path:
    """A Canvas roster of the class: each student's id, a name and an LMS id."""
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["student", "name", "email", "lms_id"])
        for number, student in enumerate(students):
            writer.writerow([student, f"Student {number}", f"{student}@uni.edu", str(10_000 + number)])
    return path


def fill(folder: Path, db: Path) -> Step:
    """Fill `db` with a current result per hand-in of `folder` (bench/synthetic.py), in a process of its own."""
    return run_step([sys.executable, str(ROOT / "bench" / "synthetic.py"), str(folder), str(db)])


def show(measured: dict[int, dict[str, Step]], how: str, synthetic: bool) -> None:
    sizes = sorted(measured)
    what = "results stored directly (bench/synthetic.py), nothing graded" if synthetic else \
        f"{how}, full hidden suite"
    print(f"{what}; flat classes (mostly correct, ~15 % with one bug)")
    print("per student: milliseconds of wall time and of CPU time (history: of the whole command), peak MiB; growth: "
          f"largest class / smallest, wall and CPU, at most {FLAT} is flat (linear)")
    print(f"{'step':<22}" + "".join(f"{f'{size}: wall    CPU   MiB':>26}" for size in sizes)
          + f"{'growth: wall   CPU':>22}  verdict (wall time)")
    for step in [s for s in ("fill", *STEPS) if s in measured[sizes[0]]]:
        cells = "".join(f"{_ms(measured[size][step].seconds, size, step):>12.2f}"
                        f"{_ms(measured[size][step].cpu, size, step):>8.2f}{measured[size][step].peak_mib:>6.0f}"
                        for size in sizes)
        wall, cpu = (getattr(measured[sizes[-1]][step], kind) / max(getattr(measured[sizes[0]][step], kind), 1e-9)
                     * (1 if step in PER_COMMAND else sizes[0] / sizes[-1]) for kind in ("seconds", "cpu"))
        print(f"{step + (' (whole command)' if step in PER_COMMAND else ''):<22}{cells}{wall:>16.2f}{cpu:>6.2f}  "
              f"{_verdict(wall)} (CPU: {_verdict(cpu)})")
    for small, large in zip(sizes, sizes[1:]):
        added = "; ".join(f"{step} {_added(measured, small, large, step):.2f}" for step in measured[small]
                          if step not in PER_COMMAND)
        print(f"CPU ms per student added from {small} to {large} (the commands' start left out): {added}")
    for size in sizes:
        rerun = measured[size]["rerun"]
        said = f"rerun of {size} unchanged hand-ins: {rerun.seconds:.1f} s ({rerun.cpu:.1f} s CPU)"
        if "grade" in measured[size]:
            share = rerun.seconds / measured[size]["grade"].seconds
            said += (f", {share:.1%} of grading them (target <= {RERUN_SHARE:.0%}): "
                     f"{'met' if share <= RERUN_SHARE else 'NOT MET'}")
        print(said)
    print(json.dumps({size: {step: [round(s.seconds, 3), round(s.cpu, 3), round(s.peak_mib)] for step, s in
                             steps.items()} for size, steps in measured.items()}))


def _verdict(growth: float) -> str:
    return "flat" if growth <= FLAT else f"GROWS (more than {FLAT} times)"


def _added(measured: dict[int, dict[str, Step]], small: int, large: int, step: str) -> float:
    return (measured[large][step].cpu - measured[small][step].cpu) * 1000 / (large - small)


def _ms(seconds: float, size: int, name: str) -> float:
    """Milliseconds per student of the class (in all, for a one-student command)."""
    return seconds * 1000 / (1 if name in PER_COMMAND else size)


if __name__ == "__main__":
    main()
