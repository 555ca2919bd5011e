"""Batch grading throughput, in one run: two classes, slow students, one hand-in, failing against correct.

Every class is N notebooks in nbgrader's layout (the released week-7
notebook with each student's code in its answer cells, bench/make_class.py),
graded with `autograder grade --jobs J` (full hidden suite, calibrated time
limits, the sandbox on). Printed, each target with its figure and whether it
is met:

1. for a mostly correct class (15 % of the students with one bug, as today)
   and a mostly buggy one (70 %, as before a deadline): the rate, for the
   whole command and once the suite is loaded (the command's own "graded N
   submissions in S s"), the peak memory (PSS) of the grader's process tree, and where its
   processor time went, per submission (measure.ProcessorTime: the grading processes, the
   submissions' own processes and their share in the kernel, the zygotes' forks, the command);
2. for each, the rate when 5 % of the students are slow instead (endless
   loops and sleeps from attacks/, whole submissions whose every function
   loops in Python over every entry, from slow/, and a right file whose own
   first call costs half a second, make_class.COSTLY), as a share of the
   plain rate. The plain class and the slow one are graded in turn,
   --rounds times (default 3); items 1 and 2 print the medians;
3. one hand-in (correct/plain.py) in a fresh database with --jobs 1, against
   the import floor `python -c "import numpy, torch"` timed in the same run;
   then the same file again with --force (the reference's times cached);
4. a class of only correct students against one of only failing (buggy)
   ones: seconds per submission, the ratio, and the shrinking budget the
   grader gives each failing submission (grading.shrink.ShrinkBudget);
5. for each class of 1., the in-process rate (bench/inprocess.py: no
   sandbox, one Grader kept per process) and the sandboxed rate's ratio to it;
6. for each class of 1., a rerun of the unchanged class (no --force) as a
   share of the time grading it took;
7. with --nbgrader-sample K > 0: K of the mostly correct notebooks with
   nbgrader's own `autograde` (which runs student code unsandboxed in its kernel);
8. a class that plots: the mostly buggy class with `import matplotlib.pyplot
   as plt` above the code of 3 students in 5, then of 1 in 20, graded as
   usual (the sandboxes import what the class imports, grading.class_imports)
   and with `preload_class_imports: false`, each as a share of the rate of
   the plain class graded just before it.

    python bench/batch.py [--students 200] [--jobs 2] [--rounds 3] [--slow-percent 5] [--nbgrader-sample 0]
                           [--keep DIR]
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import re
import shutil
import statistics
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml

from autograder.grading import calibration
from autograder.grading.course import load_course
from autograder.grading.shrink import MAX_SUBMISSION_SECONDS, SUBMISSION_SHARE, ShrinkBudget
from autograder.grading.store import Store
from autograder.grading.suite import load_suite
from autograder.nbgrader.release import nbgrader_env
from autograder.nbgrader.source import fill_answers

from make_class import Mix, write_class
from measure import Run, environment, run_measured

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "w07_attention"
PLAIN = ROOT / "tests" / "fixtures" / "submissions" / "correct" / "plain.py"
FUNCTIONS = ("score", "additive_score", "causal_mask", "padding_mask", "apply_mask", "softmax", "context",
             "attention", "attention_torch")
CLASSES = (("mostly correct", 15), ("mostly buggy", 70))  # (name, % of the honest students with one bug)
PLOTTING = ((3, 5), (1, 20))  # item 8: (students, of how many) who import matplotlib.pyplot
IMPORT_ROUNDS = 3  # the import floor is the median of these, so one slow start does not set it


@dataclass(frozen=True)
class Rates:
    """Submissions per second of one run: for the whole command, and once the suite is loaded."""

    whole: float
    loaded: float

    def __truediv__(self, other: Rates) -> Rates:
        return Rates(self.whole / other.whole, self.loaded / other.loaded)


def target(figures: tuple[float, ...], bound: float, at_most: bool = False, text: str = "") -> str:
    """'target >= 0.8: met' for `figures` (whole command, once loaded; or one figure) against `bound`."""
    met = [f <= bound if at_most else f >= bound for f in figures]
    if all(met) or not any(met):
        verdict = "met" if all(met) else "NOT met"
    elif met[0]:
        verdict = "met for the whole command, NOT once loaded"
    else:
        verdict = "met once loaded, NOT for the whole command"
    return f"target {'<=' if at_most else '>='} {text or f'{bound:g}'}: {verdict}"


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
    parser.add_argument("--slow-percent", "--hanging-percent", type=int, default=5,
                        help="share of each class replaced by slow or hanging students (default 5)")
    parser.add_argument("--nbgrader-sample", type=int, default=0,
                        help="also grade this many notebooks with nbgrader autograde (default 0: skipped)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3,
                        help="plain and slow classes graded in turn this many times; medians printed (default 3)")
    parser.add_argument("--keep", type=Path, help="keep the generated classes and databases in this folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        run(args, work)
    finally:
        if args.keep:
            shutil.move(str(work), args.keep)
        else:
            shutil.rmtree(work, ignore_errors=True)


def grade(course: Path, jobs: int, db: Path, force: bool = True, options: tuple[str, ...] = ()) -> Run:
    """`autograder grade` of the class in `course`, measured; exits with its output if it fails."""
    done = run_measured([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(course), "--jobs", str(jobs),
                         "--db", str(db), *(["--force"] if force else []), *options], cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"autograder grade {course} failed (rerun it by hand to see why):\n{done.stderr[-3000:]}")
    return done


def rates(run: Run, count: int) -> Rates:
    return Rates(count / run.seconds, count / graded_seconds(run))


def run(args, work: Path) -> None:
    released = nbformat.read(make_course(work / "released"), as_version=4)

    def to_notebook(code: str):
        return fill_answers(released, code, FUNCTIONS)

    print(f"bench/batch.py: {args.students} notebooks per class, --jobs {args.jobs}, full hidden suite, calibrated "
          "limits, sandbox as `autograder doctor` shows")
    print("rates in submissions/s: the whole command (start-up included) / once the suite is loaded")
    plain = {name: class_section(args, work, name, buggy_percent, to_notebook) for name, buggy_percent in CLASSES}
    plotting_section(args, work, to_notebook, work / CLASSES[1][0].replace(" ", "_") / "plain")
    import_floor_section(work)
    failing_section(args, work, to_notebook)
    if args.nbgrader_sample:
        nbgrader_section(args, work, plain[CLASSES[0][0]])


def class_section(args, work: Path, name: str, buggy_percent: int, to_notebook) -> Rates:
    """Items 1, 2, 5 and 6 for one class: plain, with slow students, in-process, and rerun unchanged.

    Returns the plain class's sandboxed rates.
    """
    folder = work / name.replace(" ", "_")
    roster = write_class(folder / "plain", args.students, "nbgrader", (), 0, to_notebook, Mix(buggy_percent))
    slow_roster = write_class(folder / "slow", args.students, "nbgrader", (), 0, to_notebook,
                              Mix(buggy_percent, args.slow_percent))
    count = len(roster)
    plain, plain_rates, slow_rates, share = paired(args, folder, count)
    rerun = grade(folder / "plain", args.jobs, folder / f"plain-{args.rounds - 1}.db", force=False)
    inprocess = inprocess_rates(folder / "plain" / "submitted", args.jobs)

    kinds = Counter(kind for _, kind, _ in roster)
    print(f"\n{name} class: {count} notebooks ({kinds['correct']} correct, {kinds['buggy']} with one bug)")
    print(f"  plain, sandboxed:       {_pair(plain_rates)}   peak memory {plain.peak_pss_mib:.0f} MiB (PSS, all grader "
          f"processes)   {target(_both(plain_rates), 25, text='25/s')}; "
          f"{target((plain.peak_pss_mib,), 1536, at_most=True, text='1536 MiB')}")
    print(f"  {_processor_split(plain.processor, count, plain.seconds)}")
    print(f"  {_slow_students(slow_roster)}, sandboxed: {_pair(slow_rates)}   = {_percent(share.whole)} / "
          f"{_percent(share.loaded)} of the plain rate (median of {args.rounds} pairs graded in turn)   "
          f"{target(_both(share), 0.8, text='80 %')}")
    ratio = plain_rates / inprocess
    print(f"  in-process, no sandbox: {_pair(inprocess)}   ({args.jobs} processes, one Grader each); sandboxed / "
          f"in-process = {ratio.whole:.2f} / {ratio.loaded:.2f}   {target(_both(ratio), 0.8)}")
    again = rerun.seconds / plain.seconds
    print(f"  rerun of the unchanged class: {rerun.seconds:.2f} s = {_percent(again)} of grading it "
          f"({plain.seconds:.2f} s, whole commands)   {target((again,), 0.2, at_most=True, text='20 %')}")
    return plain_rates


def paired(args, folder: Path, count: int) -> tuple[Run, Rates, Rates, Rates]:
    """The plain class and its slow variant graded in turn, `args.rounds` times.

    Returns the plain run whose whole-command rate is the median (with the highest peak memory of them all),
    the median plain rates, the median slow rates, and the median of each pair's slow / plain. In turn and
    paired because the host's speed drifts within minutes: a share taken from runs a minute apart measures
    the drift as much as the slow students (docs/performance.md, eighteenth pass)."""
    plain_runs, slow_runs = [], []
    for round_ in range(args.rounds):  # each in a fresh database, as a class is first graded: the reference timed
        plain_runs.append(grade(folder / "plain", args.jobs, folder / f"plain-{round_}.db"))
        slow_runs.append(grade(folder / "slow", args.jobs, folder / f"slow-{round_}.db"))
    plain_rates = [rates(run, count) for run in plain_runs]
    slow_rates = [rates(run, count) for run in slow_runs]
    middle = sorted(range(args.rounds), key=lambda i: plain_rates[i].whole)[(args.rounds - 1) // 2]
    plain = dataclasses.replace(plain_runs[middle], peak_pss_mib=max(run.peak_pss_mib for run in plain_runs))
    return (plain, _median(plain_rates), _median(slow_rates),
            _median([s / p for s, p in zip(slow_rates, plain_rates)]))


def _median(figures: list[Rates]) -> Rates:
    return Rates(statistics.median(f.whole for f in figures), statistics.median(f.loaded for f in figures))


def _processor_split(split, count: int, seconds: float) -> str:
    """Where the plain class's processor time went (measure.ProcessorTime), per submission."""
    per = lambda value: f"{1000 * value / count:.1f}"  # noqa: E731
    kernel = split.submissions_kernel / split.submissions if split.submissions else 0.0
    return (f"processor time per submission: grading processes {per(split.grading)} ms, submissions' processes "
            f"{per(split.submissions)} ms ({_percent(kernel)} in the kernel), zygotes "
            f"{per(split.zygotes - split.zygotes_start)} ms after their start (forks, cleaning), the command "
            f"{per(split.command)} ms; start of the zygotes {split.zygotes_start:.1f} s; in all {split.total:.1f} s "
            f"of processor time in {seconds:.1f} s ({split.total / seconds:.2f} processors busy)")


def _slow_students(roster: list) -> str:
    """'10 slow (5 %): 2 first_call_import, ...' for the slow students of `roster` (hanging, looping, costly)."""
    slow = Counter(fixture for _, kind, fixture in roster if kind in ("slow", "hanging", "costly"))
    share = sum(slow.values()) / len(roster)
    kinds = ", ".join(f"{n} {fixture}" for fixture, n in sorted(slow.items()))
    return f"{sum(slow.values())} slow ({_percent(share)}: {kinds})"


def inprocess_rates(submitted: Path, jobs: int) -> Rates:
    """bench/inprocess.py's rates on the notebooks under `submitted`."""
    scratch = submitted.parent / "inprocess-cwd"  # unsandboxed students write files where they run: not in ROOT
    scratch.mkdir()
    done = run_measured([sys.executable, str(ROOT / "bench" / "inprocess.py"), str(submitted), "--jobs", str(jobs)],
                        cwd=scratch, env=environment(PYTHONPATH=_pythonpath()))
    if done.returncode != 0:
        sys.exit(f"the in-process run failed:\n{done.stderr[-3000:]}")
    count, loaded_seconds = done.stdout.split()
    return Rates(int(count) / done.seconds, int(count) / float(loaded_seconds))


def plotting_section(args, work: Path, to_notebook, plain_class: Path) -> None:
    """Item 8: the mostly buggy class with 3 students in 5, then 1 in 20, importing matplotlib.pyplot, each
    with and without the class's imports preloaded; each run against the plain class (`plain_class`) graded
    just before it, since the host's speed drifts within minutes (see `paired`)."""
    course_off = ("--course", str(_course_without_class_imports(work)))
    for plotting, of in PLOTTING:
        folder = work / f"plotting_{plotting}_of_{of}"
        write_class(folder / "class", args.students, "nbgrader", (), 0, _plotting(to_notebook, plotting, of),
                    Mix(CLASSES[1][1]))
        print(f"\na class that plots: the mostly buggy class, {plotting} student{'s' * (plotting > 1)} in {of} with "
              "`import matplotlib.pyplot as plt` above their code; share of the plain class's rate, graded just "
              "before (whole command / once loaded)")
        for what, options in (("the class's imports preloaded (the default)", ()),
                              ("preload_class_imports: false", course_off)):
            plain = rates(grade(plain_class, args.jobs, folder / f"plain-{len(options)}.db"), args.students)
            share = rates(grade(folder / "class", args.jobs, folder / f"{len(options)}.db", options=options),
                          args.students) / plain
            print(f"  {what}: {_percent(share.whole)} / {_percent(share.loaded)}")


def _plotting(to_notebook, plotting: int, of: int):
    """`to_notebook`, with matplotlib imported above the code of `plotting` students in every `of`."""
    students = itertools.count()

    def notebook(code: str):
        return to_notebook(("import matplotlib.pyplot as plt\n" if next(students) % of < plotting else "") + code)
    return notebook


def _course_without_class_imports(folder: Path) -> Path:
    """A course.yaml in `folder` that is the course's, with preload_class_imports off and its paths absolute."""
    course = yaml.safe_load((ROOT / "course.yaml").read_text())
    entry = course["assignments"][ASSIGNMENT]
    entry["preload_class_imports"] = False
    entry["source"], entry["solution"] = (str(ROOT / part / ASSIGNMENT) for part in ("assignments", "solutions"))
    path = folder / "course.yaml"
    path.write_text(yaml.safe_dump(course))
    return path


def import_floor_section(work: Path) -> None:
    """Item 3: one hand-in, fresh database, --jobs 1, against importing NumPy and PyTorch; then with --force."""
    folder = work / "one"
    folder.mkdir()
    shutil.copy(PLAIN, folder / "s0001.py")
    floor = statistics.median(run_measured([sys.executable, "-c", "import numpy, torch"], cwd=ROOT).seconds
                              for _ in range(IMPORT_ROUNDS))
    fresh = grade(folder, 1, work / "one.db", force=False)
    forced = grade(folder, 1, work / "one.db")
    print(f"\none hand-in ({PLAIN.name}, --jobs 1) against the import floor: `python -c \"import numpy, torch\"` "
          f"{floor:.2f} s (median of {IMPORT_ROUNDS})")
    for what, done in (("fresh database", fresh), ("again with --force (reference times cached)", forced)):
        print(f"  {what}: {done.seconds:.2f} s = {done.seconds / floor:.2f}x the floor   "
              f"{target((done.seconds / floor,), 1.6, at_most=True)}")


def failing_section(args, work: Path, to_notebook) -> None:
    """Item 4: a class of only correct students against one of only failing ones, per submission."""
    per = {}
    for name, buggy_percent in (("correct", 0), ("failing", 100)):
        roster = write_class(work / name, args.students, "nbgrader", (), 0, to_notebook, Mix(buggy_percent))
        done = grade(work / name, args.jobs, work / f"{name}.db")
        with Store(work / f"{name}.db") as store:
            results = store.results(ASSIGNMENT)
        in_grader = statistics.mean(result.seconds for result in results)
        per[name] = (done.seconds / len(roster), graded_seconds(done) / len(roster), in_grader)
    print(f"\nfailing against correct: a class of {args.students} correct students and one of {args.students} with one "
          f"bug each (buggy/ in turn), --jobs {args.jobs}")
    for name, (whole, loaded, in_grader) in per.items():
        print(f"  {name}: {1000 * whole:.1f} / {1000 * loaded:.1f} ms per submission (whole command / once loaded); "
              f"{1000 * in_grader:.1f} ms each in its grading job (mean of the results' seconds)")
    ratios = tuple(f / c for f, c in zip(per["failing"], per["correct"]))
    print(f"  failing / correct: {ratios[0]:.2f} / {ratios[1]:.2f} (per submission), {ratios[2]:.2f} (in the job)   "
          f"{target(ratios[:2], 1.5, at_most=True)}")
    correct_run = per["correct"][2]
    budget, shrinking = shrinking_budget(work / "failing.db")
    print(f"  shrinking budget per failing submission: {shrinking.runs} re-runs, or {1000 * shrinking.seconds:.0f} ms "
          f"if those take longer (grading.shrink.ShrinkBudget: at most {MAX_SUBMISSION_SECONDS} s and "
          f"{SUBMISSION_SHARE:.0%} of the submission's {budget:.1f} s budget), against a graded run of "
          f"{1000 * correct_run:.0f} ms; diagnosis and shrinking measured: "
          f"{1000 * (per['failing'][2] - correct_run):.0f} ms more per failing submission in its job")


def shrinking_budget(db: Path) -> tuple[float, ShrinkBudget]:
    """(a submission's time budget, what shrinking may spend of it), from the reference times `db` cached."""
    course = load_course(ROOT / "course.yaml")
    suite = load_suite(course, ASSIGNMENT)
    with Store(db) as store:
        reference = calibration.cached_reference_times(course, suite, store)
    budget = calibration.budget(suite, reference, calibration.call_limits(suite, reference))
    return budget, ShrinkBudget.for_submission(budget)


def nbgrader_section(args, work: Path, ours: Rates) -> None:
    """Item 7: nbgrader's own autograde on a sample of the mostly correct class, against our rate on all of it."""
    course = work / "theirs"
    make_course(course)
    students = sorted((work / "mostly_correct" / "plain" / "submitted").iterdir())[:args.nbgrader_sample]
    for student in students:
        shutil.copytree(student, course / "submitted" / student.name)
    theirs = run_measured([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--force"], cwd=course,
                          env=nbgrader_env())
    if theirs.returncode != 0:
        sys.exit(f"nbgrader autograde failed:\n{theirs.stderr[-2000:]}")
    rate, their_rate = ours.whole, len(students) / theirs.seconds
    print(f"\nnbgrader autograde: {their_rate:6.3f} submissions/s ({len(students)} of the mostly correct notebooks), "
          f"peak memory {theirs.peak_pss_mib:.0f} MiB; ours {rate:.1f}/s = {rate / their_rate:.0f}x   "
          f"{target((rate / their_rate,), 100, text='100x')}")


def graded_seconds(run) -> float:
    """The grading time `autograder grade` reports itself ("graded N submissions in S s"): after loading."""
    found = re.search(r"graded \d+ submissions in ([0-9.]+) s", run.stderr + run.stdout)
    if not found:
        sys.exit(f"no 'graded N submissions in S s' line in autograder grade's output:\n{run.stderr[-2000:]}")
    return float(found.group(1))


def _pythonpath() -> str:
    """This checkout first, so a command run outside it still grades with this code."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"


def _both(rates: Rates) -> tuple[float, float]:
    return rates.whole, rates.loaded


def _pair(rates: Rates) -> str:
    return f"{rates.whole:6.1f} / {rates.loaded:6.1f}"


if __name__ == "__main__":
    main()
