"""Commands for grading: grade, checks (replay is cli.replay, doctor cli.doctor)."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

from autograder.cli import options
from autograder.cli.course import hold_changed_suite
from autograder.cli.not_graded import not_graded
from autograder.cli.retract import hold_retracted
from autograder.cli.workdir import command_workdir
from autograder.cluster import ClusterError, install_dask_hint
from autograder.grading import retract
from autograder.grading.attempts import SubmissionPolicy, counted_results
from autograder.grading.batch import BatchPlan, default_db, grade_batch, plan_batch, plan_version
from autograder.grading.class_imports import class_imports
from autograder.grading.course import Assignment, find_course, load_course
from autograder.grading.discover import find_submissions, one_students_part
from autograder.grading.found import Found, LayoutError, for_the_ta, held_for_their_time, none_found
from autograder.grading.history import attempts
from autograder.grading.ids import as_stored
from autograder.grading.late import FILE_TIME, LMS_LOCAL_TIME, TIMESTAMP_FILE, stated
from autograder.grading.lms_downloads import download_note, shared_users
from autograder.grading.rerun import again_lines
from autograder.grading.sole_writer import SUFFIX as LOCK_SUFFIX
from autograder.grading.sole_writer import SoleWriter
from autograder.grading.station import (
    launch_sandbox,
    protections_for,
    refuse_secrets,
    warm_grader,
)
from autograder.grading.store import Store
from autograder.grading.submission import prepare_notebook_reader
from autograder.grading.suite import load_suite, secret_places, suite_version
from autograder.grading.suite_cache import cache_folder
from autograder.outputs.progress import Progress, starting
from autograder.outputs.terminal import FULL_TABLES, format_results, format_summary, summary_row
from autograder.text import counted, one_line, safe

INTERNAL_ERROR_STATUS = 3  # `grade` finished, but the grader failed on some submissions
CHUNK = 500  # students whose history the results table reads at once


def add_commands(commands) -> None:
    grade = commands.add_parser("grade", help="grade student files against the hidden suite")
    grade.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    grade.add_argument("paths", nargs="+", type=Path,
                       help=".py/.ipynb files, a folder of them, an nbgrader course or submitted/ folder, or a zip")
    grade.add_argument("--jobs", type=options.count, default=0, help="parallel graders (default: number of cores)")
    grade.add_argument("--cluster", metavar="ADDRESS",
                       help="grade on a Dask cluster instead: its scheduler's address (tcp://host:8786), or local:N "
                            "to start N worker processes here (needs the dask extra; README: Grading on a cluster)")
    grade.add_argument("--cluster-wait", type=float, default=300.0, metavar="SECONDS",
                       help="with --cluster: how long to wait for a Dask worker when the cluster has none (300)")
    for flag, what in (("--tls-ca-file", "the certificate authority that signed the scheduler's certificate"),
                       ("--tls-cert", "this client's certificate (and its key, unless --tls-key is given)"),
                       ("--tls-key", "this client's private key")):
        grade.add_argument(flag, metavar="FILE", default="", help=f"with --cluster tls://...: {what}")
    options.results_db(grade)
    grade.add_argument("--force", action="store_true", help="regrade submissions already graded and unchanged")
    grade.add_argument("--json", action="store_true", help="one JSON object per line: every field of each result")
    options.course(grade)
    options.sandbox(grade)
    grade.set_defaults(run=_grade)

    checks = commands.add_parser("checks", help="list an assignment's checks: function, visibility, points, "
                                                "what each verifies")
    checks.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    options.course(checks)
    checks.set_defaults(run=_checks)


def _grade(args) -> int:
    if args.cluster and args.jobs:
        raise ClusterError("--jobs and --cluster do not go together: --jobs N grades with N processes on this "
                           "machine, --cluster grades on the Dask cluster's workers (local:N starts N of them here). "
                           "Pass one of the two")
    course = load_course(args.course or find_course())
    assignment = course.assignment(args.assignment)
    with command_workdir("zip") as workdir:
        skipped: list[Path] = []
        found = find_submissions(args.paths, assignment.name, assignment.module, workdir, skipped)
        if not found:
            raise LayoutError(none_found(args.paths, assignment.name))
        found = [held_for_their_time(item, assignment.late) for item in found]
        refused, found = [i for i in found if not i.stored], [i for i in found if i.stored]
        db = (args.db or default_db(course)).resolve()  # messages name the absolute place written
        found = _as_stored(found, db, assignment.name)
        starting(f"{counted(len(found), 'submission')} of {assignment.name} found"
                 + download_note([item.lms for item in found]))
        problems = tuple(dict.fromkeys(item.problem for item in refused))  # the folder's to fix: nothing is stored
        for problem in problems:
            starting(f"not graded, nothing stored: {one_line(problem)}")
        if not found:
            raise LayoutError(f"none of the {counted(len(refused), 'hand-in')} found can be graded as the class folder "
                              "stands; fix what is named above and grade again")
        if assignment.late.due is not None:
            for line in _timed_by_file(found) + _zoneless(found, assignment.late) + _on_clock_changes(
                    found, assignment.late):
                starting(line)
        # The results database may be kept in the class's folder: it and SQLite's files beside it are no hand-ins.
        ours = {db.with_name(db.name + suffix) for suffix in ("", "-wal", "-shm", "-journal", LOCK_SUFFIX)}
        for line in not_graded([path for path in skipped if path.resolve() not in ours], assignment.module):
            starting(line)
        planned = _planned(found, db, course, assignment.name, args.force)  # hashes every hand-in: once
        to_grade = len(planned.todo)
        if to_grade == 0:
            # A rerun with every hand-in current: nothing to load, launch or connect to.
            with Store(db) as store:
                return _carry_out(args, planned, store, assignment, None, "", problems)
        if args.cluster:
            return _grade_on_cluster(args, course, found, db, problems)
        jobs = args.jobs or os.cpu_count() or 1
        protections = protections_for(args.sandbox, log=sys.stderr)
        imports = class_imports(found, min(jobs, to_grade), assignment)
        for note in imports.notes():
            starting(note)
        # The zygotes import the preload (PyTorch: seconds) while this process imports the same for the suite.
        launched = [launch_sandbox(protections, assignment, slot, imports.modules)
                    for slot in range(min(jobs, to_grade))]
        try:
            starting("loading the suite (reference, checks, libraries)" +
                     (f" while {counted(len(launched), 'sandbox', 'sandboxes')} start{'s' * (len(launched) == 1)}"
                      if launched else ""))
            suite = load_suite(course, args.assignment)
            if launched and not launched[0].settle(0) and any(item.path.suffix == ".ipynb" for item in found):
                prepare_notebook_reader()  # while they start: else each grading process forked from here pays it
            # Also while they start: what every grading process would otherwise build first, for its probe.
            classwide = warm_grader(course, suite, lambda: launched[0].settle(0)) if launched else None
            starting("checking the sandbox")
            # Before any student code runs: the sandboxes launched so far ran only the grader's own code.
            refuse_secrets(protections, suite.secret_paths(course) + [db] + [item.path for item in found] +
                           [place for place in [cache_folder()] if place.exists()], launched)
            # Opened only now, so a mistyped path or a refused sandbox does not leave an empty database behind.
            with Store(db) as store, SoleWriter(db, "grade", starting):
                def run(todo, on_result, say):
                    grade_batch(course, suite, protections, todo, store, jobs, on_result, launched, classwide, say,
                                imports.modules)
                starts = counted(len(launched), "sandbox", "sandboxes")
                return _grade_found(args, suite, found, store, run, f"timing the reference and starting {starts}",
                                    problems)
        finally:
            for sandbox in launched:
                sandbox.close()


def _zoneless(found: list[Found], rule) -> list[str]:
    """With a due time set and no `time_zone`: that the LMS's zoneless times are read in the due time's offset,
    which is the institution's clock only if the due time was written in it (not in UTC, nor across a change to
    summer time)."""
    if rule.time_zone or not any(item.submitted_at_source == LMS_LOCAL_TIME for item in found):
        return []
    offset = rule.due.strftime("%z")
    return [f"Blackboard's attempt times carry no time zone: they are read in the due time's offset ({offset[:3]}:"
            f"{offset[3:]}), the institution's clock only if the due time is written in it. Add the institution's "
            "zone to the assignment in course.yaml (`time_zone: America/New_York`) to read them on its clock, "
            "summer time included"]


def _on_clock_changes(found: list[Found], rule) -> list[str]:
    """Each Blackboard attempt time that the night's clock change doubled or skipped in `time_zone`, with how it
    is read (grading.late.stated): an hour's doubt the TA can settle only by Blackboard's own record."""
    return [f"{one_line(item.student)}: {said} (flagged `time on a clock change`). Check the attempt's time in "
            "Blackboard; where it is an hour from this reading and that changes the penalty, correct the total in "
            "the LMS after exporting" for item in found if item.submitted_at_source == LMS_LOCAL_TIME
            for said in [stated(rule, item.student, item.submitted_at, item.submitted_at_source).clock_change] if said]


def _timed_by_file(found: list[Found]) -> list[str]:
    """With a due time set: the hand-ins whose submission time is their file's modification time (no
    timestamp.txt: a flat folder or an LMS's download), which the late rule then uses although copying or
    extracting the class folder changes it. Said before grading, so the TA can fix the folder first."""
    by_file = [item for item in found if item.submitted_at_source == FILE_TIME]
    lines = []
    if by_file:
        rest = sorted(item.student for item in by_file)
        times = ("their times from their files' modification times" if len(rest) > 1 else
                 "its time from its file's modification time")
        lines.append(f"{len(rest)} hand-in{'s have' if len(rest) > 1 else ' has'} no {TIMESTAMP_FILE} (a flat folder "
                     f"or an LMS's download keeps none): the late rule takes {times}, which copying or extracting "
                     f"the class folder changes ({', '.join(rest[:10])}{', ...' if len(rest) > 10 else ''}). "
                     "Where those are not when they were handed in, grade nbgrader's "
                     f"submitted/<student>/<assignment>/ folders with their {TIMESTAMP_FILE}, or leave `due` out "
                     "of course.yaml and apply the LMS's own late policy")
    return lines


def _as_stored(found: list[Found], db: Path, assignment: str) -> list[Found]:
    """`found`, each hand-in whose id differs from a stored one only in case or width (grading.ids.canonical)
    under the stored id, with a line saying so."""
    if not db.is_file():
        return found
    with Store(db) as store:
        stored = store.students(assignment)
    renamed = as_stored([item.student for item in found], stored)
    canvas = {renamed.get(item.student, item.student) for item in found if item.lms == "Canvas"}
    for line in shared_users(canvas, stored, assignment):  # one user under a second id: whose total is theirs?
        starting(safe(line, 2000))
    for item in found:
        if item.student in renamed:
            starting(safe(f"{item.path.name} is graded as {renamed[item.student]}, the id stored from earlier runs: "
                          "ids that differ only in case or width are one student"))
    return [dataclasses.replace(item, student=renamed.get(item.student, item.student)) for item in found]


def _counted_rows(store: Store, assignment: Assignment, students: list[str], whole: bool) -> dict:
    """student -> the result that counts for them under the assignment's `submissions` settings (whole) or its
    summary row, as the exports count it: not always the one graded last (an earlier hand-in graded again, a
    lower regrade held back). students: those with several hand-ins (the others' is the one at hand), read a few
    hundred at a time: a class of thousands is not held whole."""
    rows = {}
    for start in range(0, len(students), CHUNK):
        counted, _ = counted_results(attempts(store.history(assignment.name, students[start:start + CHUNK])),
                                     assignment.submissions, assignment.late)
        rows.update({r.student: r if whole else summary_row(r, assignment.late) for r in counted})
    return rows


def _planned(found, db: Path, course, assignment: str, force: bool) -> BatchPlan:
    """What of `found` `grade` will grade, as far as the store and the suite's files tell before it loads."""
    if force or not db.is_file():
        return BatchPlan(found, [])
    with Store(db) as store:
        return plan_version(found, store, assignment, suite_version(course, assignment), force)


def _grade_on_cluster(args, course, found, db: Path, refused: tuple[str, ...] = ()) -> int:
    """`grade --cluster`: the store and the progress here, the grading on the cluster's workers."""
    try:
        from autograder.cluster.connect import Credentials, connect, parse_address, scheduler_identity
        from autograder.cluster.driver import Cluster, warm_graders
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in ("dask", "distributed"):
            raise
        raise ClusterError(f"--cluster needs Dask, which is not installed here ({error}). Install it with "
                           f"`{install_dask_hint()}`, on the workers too, then run again") from None
    address = parse_address(args.cluster)
    # Each worker checks these with its own sandbox: on a shared file system its student code could see them.
    secrets = secret_places(course, course.assignment(args.assignment)) + [db] + [item.path for item in found]
    credentials = Credentials(args.tls_ca_file, args.tls_cert, args.tls_key)
    with connect(address, args.cluster_wait, lambda text: print(text, file=sys.stderr), credentials) as client:
        cluster = Cluster(client, str(address), args.sandbox, args.cluster_wait)
        # The sandboxes are the workers' threads, as many as have joined so far.
        threads = sum(worker["nthreads"] for worker in scheduler_identity(client)["workers"].values())
        imports = class_imports(found, max(threads, 1), course.assignment(args.assignment))
        for note in imports.notes():
            starting(note)
        with Store(db) as store, SoleWriter(db, "grade --cluster", starting), \
                warm_graders(cluster, course, args.assignment, store, secrets, imports.modules) as graders:
            suite = load_suite(course, args.assignment)  # while the workers warm up

            def run(todo, on_result, say):
                graders.grade(suite, todo, on_result, say)
            return _grade_found(args, suite, found, store, run, "sending the submissions to the cluster's workers",
                                refused)


def _grade_found(args, suite, found, store: Store, run, doing: str, refused: tuple[str, ...] = ()) -> int:
    """Plan, grade what is not current with `run(todo, on_result, say)`, show and summarise the results.

    doing: what `run` does before its first result, shown until then.
    """
    found = retract.files_to_grade(found, store, suite.assignment.name)  # which of a student's files: store-aware
    plan = plan_batch(found, store, suite, args.force)
    plan = hold_changed_suite(plan, store, suite, args.force)  # cli.course: a changed suite is `regrade`'s
    plan = hold_retracted(plan, store, suite.assignment.name)  # cli.retract: graded again only once put back
    return _carry_out(args, plan, store, suite.assignment, run, doing, refused)


def _carry_out(args, plan: BatchPlan, store: Store, assignment: Assignment, run, doing: str,
               refused: tuple[str, ...] = ()) -> int:
    """Grade `plan.todo` with `run`, then show every result of the plan, the skipped ones as stored, each
    total after the assignment's late rule (of the hand-in that counts), as the exports and reports show it.
    Last come the hand-ins not graded: `refused` (the class folder's problems, nothing stored), those the
    grader could not grade, and those graded now that did not load (0 points), each with its reason."""
    for line in again_lines(store, assignment, plan.again):  # an earlier hand-in found again: said, not graded
        starting(line)
    progress = Progress(len(plan.todo), skipped=len(plan.skipped))
    if plan.todo:
        progress.status(doing)
    few = len(plan.todo) + len(plan.skipped) <= FULL_TABLES  # shown whole; for more, one line each is kept
    shown: dict = {}  # student -> their result (few) or its summary row: a class of thousands is not held whole
    not_graded = [f"not graded, nothing stored: {one_line(problem)}" for problem in refused]
    failed = 0

    def keep(result, graded: bool) -> None:
        nonlocal failed
        shown[result.student] = result if few else summary_row(result, assignment.late)
        if result.problem and not result.internal_error and (graded or not result.did_not_load):
            # A file that did not load was graded (0 points): its reason is said once, when it is graded.
            said = "" if result.did_not_load else "not graded: "
            not_graded.append(f"{said}{one_line(result.student)}: {one_line(result.problem)}"
                              f"{for_the_ta(result.problem)}")  # advice for the TA, not in the student's feedback
        failed += graded and bool(result.internal_error)

    def on_result(result):
        keep(result, graded=True)
        progress.update(result)
        if args.json:
            print(json.dumps(result.to_json()), flush=True)

    if plan.todo:
        run(plan.todo, on_result, progress.note)
    progress.finish()
    stored = {result.student: result for result in store.results(assignment.name)} if plan.skipped else {}
    for result in (stored[item.student] for item in plan.skipped):
        keep(result, graded=False)
        if args.json:
            print(json.dumps(result.to_json()), flush=True)
    if not args.json:
        shown.update(_counted_rows(store, assignment, sorted(store.several_handins(assignment.name, list(shown))),
                                   few))
        rows = list(shown.values())
        print(safe(format_results(rows, assignment.late) if few else format_summary(rows)))
        if assignment.submissions != SubmissionPolicy():
            print(f"each total is that of the hand-in that counts under `submissions: {assignment.submissions.policy}"
                  f"{f', max {assignment.submissions.limit}' if assignment.submissions.limit else ''}` in "
                  "course.yaml, as the exports give it; `autograder history` lists every hand-in")
    # Listed last: each hand-in that could not be graded, named for its student, with the reason.
    for line in not_graded:
        print(safe(line, 2000), file=sys.stderr)
    # A class folder: whoever is not in it was removed. One student's folder says nothing of the others.
    if not all(one_students_part(Path(place), assignment.name, assignment.module) for place in args.paths):
        passed = {item.student for item in (*plan.todo, *plan.skipped, *plan.held)}
        gone = sorted(store.students(assignment.name) - passed)
        if gone:
            print(safe(f"{len(gone)} student{'s' if len(gone) > 1 else ''} stored from earlier runs "
                       f"{'have' if len(gone) > 1 else 'has'} no hand-in in what was passed now: "
                       f"{', '.join(gone[:10])}{', ...' if len(gone) > 10 else ''}; their results stay in the "
                       "database, its reports and its exports", 2000), file=sys.stderr)
    if failed:
        # The last line, and the exit status, tell a script that some submissions still need grading.
        print(f"results are in {store.path}; {counted(failed, 'submission')} hit an internal error in the grader "
              "(not in their code): they are flagged in `autograder report` with the traceback, and the next "
              "`autograder grade` grades them again", file=sys.stderr)
        return INTERNAL_ERROR_STATUS
    print(f"results are in {store.path}; `autograder report` writes the feedback", file=sys.stderr)
    return 0


def _checks(args) -> int:
    suite = load_suite(load_course(args.course or find_course()), args.assignment)
    width = max(len(entry.name) for entry in suite.checks)
    for entry in suite.checks:
        limit = f" (within {entry.seconds:g} s)" if entry.seconds else ""
        print(f"{entry.name:<{width}}  {entry.visibility:<6}  {entry.points:>4g}  {entry.check.description}{limit}")
    print(f"{len(suite.checks)} checks, {suite.max_score:g} points; suite version {suite.version}")
    return 0
