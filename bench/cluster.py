"""Grading on a Dask cluster against grading with --jobs, on the same machine, in one run.

Builds a class of N notebooks in nbgrader's layout (correct variants and ~15 %
with one bug), grades it with `autograder grade --jobs J`, then starts a
`dask scheduler` and J `dask worker --nthreads 1` processes on 127.0.0.1 and
grades the same class with `--cluster` (each into its own database, so both
time the reference and grade everything). It prints both rates (the whole
command, and once the suite is loaded), their ratio (target >= 0.85), and the
driver's overhead per task: the driver's processor time for the class, less
that for a class of one, per extra submission.

    python bench/cluster.py [--students 200] [--jobs 2]
"""
from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
from pathlib import Path

from batch import graded_seconds
from dask_processes import DaskProcesses
from make_class import write_class
from measure import run_measured

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "w07_attention"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2, help="local jobs, and Dask workers (one thread each)")
    parser.add_argument("--saturation", default="1.0", help="the scheduler's worker-saturation (README: 1.0)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    dask = DaskProcesses(work / "dask-logs")
    try:
        run(args, work, dask)
    finally:
        dask.stop()
        shutil.rmtree(work, ignore_errors=True)


def grade(course: Path, db: Path, *where: str):
    """`autograder grade` of the whole class, and the processor time of the command itself (the driver)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = run_measured([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(course), "--db", str(db),
                         "--force", *where], cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"autograder grade {' '.join(where)} failed:\n{done.stderr[-3000:]}")
    return done, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def run(args, work: Path, dask: DaskProcesses) -> None:
    roster = write_class(work / "class", args.students, "nbgrader", (), 0)
    write_class(work / "one", 1, "nbgrader", (), 0)
    local, _ = grade(work / "class", work / "local.db", "--jobs", str(args.jobs))

    # Workers as a TA would start them (README, Grading on a cluster): one thread each, the grader imported
    # when they start, the scheduler's worker-saturation at 1.0 so that a worker holds only the task it grades.
    address = dask.scheduler(worker_saturation=args.saturation)
    for _ in range(args.jobs):
        dask.worker(address)
    dask.wait_for_workers(address, args.jobs)  # a cluster that is up, as a TA's would be
    clustered, driver_all = grade(work / "class", work / "cluster.db", "--cluster", address)
    _, driver_one = grade(work / "one", work / "one.db", "--cluster", address)

    n = len(roster)
    whole = {"local": n / local.seconds, "cluster": n / clustered.seconds}
    loaded = {"local": n / graded_seconds(local), "cluster": n / graded_seconds(clustered)}
    print(f"class: {n} notebooks; full hidden suite, calibrated limits, sandbox as `autograder doctor` shows")
    print("rates in submissions/s: the whole command (start-up included) / once the suite is loaded")
    print(f"--jobs {args.jobs}:                  {whole['local']:6.1f} / {loaded['local']:6.1f}")
    print(f"--cluster, {args.jobs} Dask workers:   {whole['cluster']:6.1f} / {loaded['cluster']:6.1f}   "
          f"cluster/jobs = {whole['cluster'] / whole['local']:.2f} / {loaded['cluster'] / loaded['local']:.2f}"
          "   target >= 0.85")
    per_task = (driver_all - driver_one) / (n - 1) * 1000
    print(f"driver's processor time: {driver_all:.1f} s for the class, {driver_one:.1f} s for one submission: "
          f"{per_task:.1f} ms per task (read, send, receive, check, store)")


if __name__ == "__main__":
    main()
