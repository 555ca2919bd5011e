"""One hand-in against the import floor: `grade` on a folder of one correct file, next to `import numpy, torch`.

The floor is what any command that grades this assignment pays before its
first line of work: `python -c "import numpy, torch"`. Both are measured in
this run, on this machine, in turns (floor, fresh database, --force on that
database; the order rotates each round), so a machine that is busier in one
minute than in the next loads every kind alike. The median of each is
compared with the target of 1.6 × the floor (issue 24).

- fresh db: `grade w07_attention DIR --jobs 1 --db NEW`, the reference's
  timings read from the user's cache folder (grading.suite_cache), as on any
  run after the first on this machine and suite version;
- --force: the same command again on that database, which regrades;
- with --cold, also a fresh db with an empty cache folder: the first run
  ever on this machine, which times the reference.

    python bench/one_handin.py [--rounds 5] [--cold] [--sandbox auto|bwrap|fallback]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANDIN = ROOT / "tests" / "fixtures" / "submissions" / "correct" / "plain.py"
TARGET = 1.6


def timed(command: list[str], env: dict) -> float:
    """Wall-clock seconds of `command`, which must succeed."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="also time a fresh db with an empty cache folder")
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    with tempfile.TemporaryDirectory(prefix="one-handin-") as work:
        work = Path(work)
        (work / "handins").mkdir()
        shutil.copy(HANDIN, work / "handins" / "s1.py")
        grade = [sys.executable, "-m", "autograder", "grade", "w07_attention", str(work / "handins"), "--jobs", "1",
                 "--sandbox", args.sandbox]
        floor = [sys.executable, "-c", "import numpy, torch"]
        database = work / "grades.db"

        def fresh() -> float:
            database.unlink(missing_ok=True)
            return timed([*grade, "--db", str(database)], env)

        def cold() -> float:
            database.unlink(missing_ok=True)
            empty = tempfile.mkdtemp(dir=work, prefix="cache-")
            return timed([*grade, "--db", str(database)], {**env, "XDG_CACHE_HOME": empty})

        kinds = {"floor": lambda: timed(floor, env), "fresh db": fresh,
                 "--force": lambda: timed([*grade, "--db", str(database), "--force"], env)}
        # Turns rotate each round; --force always follows the fresh db it regrades.
        units = [["floor"], ["fresh db", "--force"]]
        if args.cold:
            kinds["fresh db, cold cache"] = cold
            units.append(["fresh db, cold cache"])
        fresh()  # not counted: fills the page cache and, on a first run here, the cache folder
        times: dict[str, list[float]] = {name: [] for name in kinds}
        for round_ in range(args.rounds):
            shift = round_ % len(units)
            for unit in units[shift:] + units[:shift]:
                for name in unit:
                    times[name].append(kinds[name]())
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{args.rounds} rounds, medians (min-max), on {os.cpu_count()} cores; target {TARGET}x the floor")
    for name, values in times.items():
        ratio = "" if name == "floor" else f"  {median[name] / median['floor']:.2f}x the floor"
        verdict = "" if name == "floor" else ("  (within target)" if median[name] <= TARGET * median["floor"]
                                              else "  (over target)")
        print(f"  {name:<22} {median[name]:6.2f} s ({min(values):.2f}-{max(values):.2f}){ratio}{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
