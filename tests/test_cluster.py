"""Issue 13: grading on a Dask cluster, with a real scheduler and real worker processes on 127.0.0.1.

Each test starts its own `dask scheduler` and `dask worker` processes
(bench/dask_processes.py), bounded in time, and stops them at the end.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.grading.store import Store

from conftest import ROOT, repository_env, run_cli

pytest.importorskip("distributed", reason="grading on a cluster needs the [dask] extra (make test installs it)")

from cryptography.hazmat.primitives import serialization  # noqa: E402 - a dependency of distributed's TLS
from dask import config as dask_settings  # noqa: E402 - the fixture `dask` takes the module's name
from distributed import Client, LocalCluster  # noqa: E402

from autograder.cluster.connect import scheduler_identity  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from dask_processes import DaskProcesses  # noqa: E402
from make_class import write_class  # noqa: E402

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`

ASSIGNMENT = "w07_attention"
# A test-only worker preload: the worker process dies whenever it starts a task for a student named "crasher".
CRASH_PRELOAD = '''
import os
from distributed.diagnostics.plugin import WorkerPlugin

class CrashOnCrasher(WorkerPlugin):
    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and str(key).endswith("-crasher"):
            os._exit(1)

async def dask_setup(worker):
    await worker.plugin_add(CrashOnCrasher(), name="crash-on-crasher")
'''


@pytest.fixture
def dask(tmp_path):
    processes = DaskProcesses(tmp_path / "dask-logs", repository_env())
    yield processes
    processes.stop()


@pytest.fixture(scope="module")
def small_class(tmp_path_factory):
    """Ten notebooks in nbgrader's layout: correct, buggy, two attacks and one broken file."""
    folder = tmp_path_factory.mktemp("class") / "course"
    write_class(folder, 10, "nbgrader", ("read_neighbours", "exit_in_function"), 1)
    return folder


def _grade(paths, db: Path, *options, timeout=600) -> tuple[dict, subprocess.CompletedProcess]:
    done = run_cli("grade", ASSIGNMENT, *paths, "--json", "--db", db, *options, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}, done


def _verdicts(results: dict) -> dict:
    """What a result says about the student, without when or how long it took."""
    return {student: (r["score"], r["max_score"], r.get("output", ""),
                      [(t["name"], t["status"], t["score"], t.get("output", "")) for t in r["tests"]])
            for student, r in results.items()}


def _stored(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as connection:
        return (connection.execute("SELECT COUNT(*) FROM submissions").fetchone()[0],
                connection.execute("SELECT COUNT(*) FROM checks").fetchone()[0])


def _committed(db: Path) -> int:
    try:
        return _stored(db)[0]
    except sqlite3.OperationalError:  # no tables yet
        return 0


def test_a_class_on_two_workers_gets_the_results_of_jobs_2_and_resumes(small_class, tmp_path, dask):
    local, _ = _grade([small_class], tmp_path / "local.db", "--jobs", "2")
    # The README's recipe for one machine: a scheduler, and one `dask worker` process running two workers.
    address = dask.scheduler(worker_saturation=1.0)
    dask.worker(address, extra=["--nworkers", "2"])
    db = tmp_path / "cluster.db"
    clustered, done = _grade([small_class], db, "--cluster", address)
    assert "grading on the Dask cluster at" in done.stderr
    assert _verdicts(clustered) == _verdicts(local)
    assert {r["sandbox"] for r in clustered.values()} == {r["sandbox"] for r in local.values()}
    assert _stored(db) == _stored(tmp_path / "local.db")
    # Resume and skip, as with --jobs: nothing is graded twice, and the reports read the same store.
    again, done = _grade([small_class], db, "--cluster", address)
    assert "10 submissions already graded" in done.stderr
    assert _verdicts(again) == _verdicts(local)
    report = run_cli("report", "--db", db, "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    assert len(list((tmp_path / "report").rglob("*.html"))) >= 10


def test_local_cluster_grades_here(small_class, tmp_path):
    notebook = next((small_class / "submitted").glob("*/w07_attention/attention.ipynb"))
    shutil.copy(notebook, tmp_path / "ann.ipynb")
    results, done = _grade([tmp_path / "ann.ipynb"], tmp_path / "g.db", "--cluster", "local:1")
    assert "grading on the Dask cluster at local:1: 1 workers" in done.stderr
    assert list(results) == ["ann"] and results["ann"]["tests"] and not results["ann"].get("problem")


def test_a_worker_killed_mid_batch_loses_nothing(tmp_path, dask):
    roster = write_class(tmp_path / "course", 16, "nbgrader", (), 0)
    address = dask.scheduler()
    victim = dask.worker(address, nanny=False)
    dask.worker(address)
    db = tmp_path / "g.db"
    command = [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(tmp_path / "course"), "--db", str(db),
               "--cluster", address]
    driver = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=repository_env())
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and _committed(db) < 3:
        time.sleep(0.05)
    assert _committed(db) >= 3, "the cluster graded nothing"
    victim.send_signal(signal.SIGKILL)  # mid-task: both workers are kept busy
    _, stderr = driver.communicate(timeout=600)
    assert driver.returncode == 0, stderr
    submissions, checks = _stored(db)
    assert submissions == 16
    with Store(db) as store:
        results = store.results(ASSIGNMENT)
    assert sorted(r.student for r in results) == sorted(student for student, _, _ in roster)
    assert checks == 16 * len(results[0].tests)  # no check row lost or written twice
    assert not [r.student for r in results if r.problem], "a submission was charged for its worker's death"


def test_a_driver_killed_mid_batch_keeps_what_it_stored_and_the_rerun_finishes(tmp_path, dask):
    roster = write_class(tmp_path / "course", 12, "nbgrader", (), 0)
    address = dask.scheduler()
    dask.worker(address)
    dask.worker(address)
    db = tmp_path / "g.db"
    driver = subprocess.Popen([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(tmp_path / "course"),
                               "--db", str(db), "--cluster", address], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=repository_env())
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and _committed(db) < 3:
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    before = _committed(db)
    assert 3 <= before < 12, "the batch was not interrupted mid-way"
    with Store(db) as store:
        kept = {r.student: (r.graded_at, r.score, r.sha256) for r in store.results(ASSIGNMENT)}
    results, done = _grade([tmp_path / "course"], db, "--cluster", address)
    assert f"{before} submissions already graded" in done.stderr
    assert sorted(results) == sorted(student for student, _, _ in roster)
    with Store(db) as store:
        now = {r.student: (r.graded_at, r.score, r.sha256) for r in store.results(ASSIGNMENT)}
    assert {student: now[student] for student in kept} == kept
    assert _stored(db)[1] == 12 * len(results[roster[0][0]]["tests"])


def test_a_submission_that_keeps_killing_its_worker_is_recorded_once_as_could_not_grade(tmp_path, dask):
    write_class(tmp_path / "course", 3, "nbgrader", (), 0)
    shutil.copytree(next((tmp_path / "course" / "submitted").iterdir()), tmp_path / "course" / "submitted" / "crasher")
    preload = tmp_path / "crash_preload.py"
    preload.write_text(CRASH_PRELOAD)
    address = dask.scheduler(allowed_failures=1, worker_saturation=1.0)
    for _ in range(2):
        dask.worker(address, extra=["--preload", str(preload)])
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, tmp_path / "course", "--json", "--db", db, "--cluster", address)
    assert done.returncode == 3, done.stderr  # 3: a submission could not be graded, the next run tries it again
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    crasher = results["crasher"]
    assert crasher["score"] == 0 and "the grader failed on this submission" in crasher["problem"]
    assert "died 2 times" in crasher["internal_error"] and "Traceback" not in crasher["internal_error"]
    assert not [s for s, r in results.items() if s != "crasher" and (r["problem"] or not r["tests"])]
    assert _stored(db)[0] == 4


def test_a_worker_with_another_suite_version_is_refused_clearly(tmp_path, dask):
    """A worker whose grading code differs from the driver's (another release) grades nothing."""
    other = tmp_path / "other-release"
    shutil.copytree(ROOT / "autograder", other / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "autograder" / "grading" / "grader.py", "a") as changed:
        changed.write("\n# a later release\n")
    address = dask.scheduler()
    dask.worker(address, env={"PYTHONPATH": f"{other}{os.pathsep}{ROOT}"})
    write_class(tmp_path / "course", 2, "nbgrader", (), 0)
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, tmp_path / "course", "--db", db, "--cluster", address, timeout=300)
    assert done.returncode == 2
    assert "refused to grade" in done.stderr and "suite version" in done.stderr
    assert "Install the same autograder as the driver's on every worker" in done.stderr
    assert "Traceback" not in done.stderr
    assert _committed(db) == 0


def test_an_unreachable_scheduler_and_a_bad_address_are_explained(tmp_path):
    done = run_cli("grade", ASSIGNMENT, ROOT / "examples" / "w07_class", "--db", tmp_path / "g.db",
                   "--cluster", "tcp://127.0.0.1:9", env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert done.returncode == 2 and "could not reach the Dask scheduler at tcp://127.0.0.1:9" in done.stderr
    assert "Traceback" not in done.stderr
    done = run_cli("grade", ASSIGNMENT, ROOT / "examples" / "w07_class", "--cluster", "local:zero")
    assert done.returncode == 2 and "local:N" in done.stderr
    done = run_cli("grade", ASSIGNMENT, ROOT / "examples" / "w07_class", "--cluster", "local:2", "--jobs", "2")
    assert done.returncode == 2 and "--jobs and --cluster do not go together" in done.stderr


def _tls_files(folder: Path) -> dict:
    """A certificate authority and one certificate signed by it, as files: what a TA gives scheduler and workers."""
    from distributed.security import Security

    config = Security.temporary().get_tls_config_for_role("client")
    files = {}
    for name in ("ca_file", "cert", "key"):
        files[name] = folder / f"{name}.pem"
        files[name].write_text(config[name])
        files[name].chmod(0o600)
    return files


def _refused(address: str, security=None) -> bool:
    """Whether a Dask client is refused by the scheduler at `address` (within a few seconds)."""
    from distributed import Client

    try:
        with Client(address, timeout=5, security=security, set_as_default=False):
            return False
    except (OSError, TimeoutError):
        return True


def _needs_a_client_certificate(address: str, ca_pem: str) -> bool:
    """Whether the scheduler at `address` (tls://host:port) ends a TLS session whose client trusts the scheduler's
    authority (`ca_pem`) but shows no certificate of its own, before anything is exchanged.

    Dask's own client will not even try without one, so this speaks TLS with the standard library.
    """
    import socket
    import ssl

    host, port = address.removeprefix("tls://").rsplit(":", 1)
    context = ssl.create_default_context(cadata=ca_pem)
    context.check_hostname = False
    try:
        with socket.create_connection((host, int(port)), timeout=5) as raw:
            with context.wrap_socket(raw) as tls:
                tls.sendall(b"\0" * 8)
                return tls.recv(1) == b""
    except (ssl.SSLError, ConnectionError):
        return True


def _web_pages(client) -> tuple[int, int]:
    """The HTTP statuses of the scheduler's page of workers and of its health check, which need no certificate."""
    import urllib.error
    import urllib.request

    port = client.scheduler_info()["services"]["dashboard"]
    statuses = []
    for page in ("info/main/workers.html", "health"):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{page}", timeout=10) as reply:
                statuses.append(reply.status)
        except urllib.error.HTTPError as error:
            statuses.append(error.code)
    return tuple(statuses)


def test_a_local_cluster_listens_on_loopback_behind_this_runs_tls(tmp_path):
    from distributed.security import Security

    from autograder.cluster.connect import Address, connect

    with connect(Address(local_workers=1), 60, lambda text: None) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2]).result(timeout=30) == 3  # its own client is let in
        assert _refused(address.replace("tls://", "tcp://"))  # plain TCP
        assert _needs_a_client_certificate(address, client.security.tls_ca_file)
        assert _refused(address, Security.temporary())  # a certificate from another authority
        assert _web_pages(client) == (404, 200)  # its web server shows no workers or tasks, only its health


def test_a_tls_scheduler_grades_with_the_tas_certificate_and_refuses_others(small_class, tmp_path, dask):
    from distributed.security import Security

    tls = _tls_files(tmp_path)
    address = dask.scheduler(tls=tls)
    assert address.startswith("tls://")
    dask.worker(address, tls=tls)
    dask.wait_for_workers(address, 1, tls=tls)
    notebook = next((small_class / "submitted").glob("*/w07_attention/attention.ipynb"))
    shutil.copy(notebook, tmp_path / "ann.ipynb")
    results, done = _grade([tmp_path / "ann.ipynb"], tmp_path / "g.db", "--cluster", address,
                           "--tls-ca-file", tls["ca_file"], "--tls-cert", tls["cert"], "--tls-key", tls["key"])
    assert list(results) == ["ann"] and results["ann"]["tests"], done.stderr
    assert _refused(address.replace("tls://", "tcp://"))
    assert _needs_a_client_certificate(address, tls["ca_file"].read_text())
    assert _refused(address, Security.temporary())
    refused = run_cli("grade", ASSIGNMENT, tmp_path / "ann.ipynb", "--db", tmp_path / "h.db", "--cluster", address,
                      env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"})
    assert refused.returncode == 2 and "has no certificate to show it: pass --tls-ca-file" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_timeout_counts_only_when_a_run_on_a_warm_worker_times_out_too(tmp_path):
    """A worker that has just joined runs slow; so a result with a timeout is graded again on a warm worker."""
    hanging = (ROOT / "tests" / "fixtures" / "submissions" / "attacks" / "infinite_loop_in_function.py").read_text()
    (tmp_path / "hangs.py").write_text((ROOT / "solutions" / "w07_attention" / "reference.py").read_text() + hanging)
    shutil.copy(ROOT / "solutions" / "w07_attention" / "reference.py", tmp_path / "fine.py")
    results, _ = _grade([tmp_path / "hangs.py", tmp_path / "fine.py"], tmp_path / "g.db", "--cluster", "local:2")
    graded_again = [note for note in results["hangs"]["notes"] if note.startswith("graded again")]
    assert graded_again and any(t["status"] == "timeout" for t in results["hangs"]["tests"])
    assert results["fine"]["score"] == results["fine"]["max_score"] and not results["fine"]["notes"]


def _python_without_torch(folder: Path) -> str:
    """A Python with this environment's packages, except that `import torch` fails: a node installed wrong."""
    import sysconfig

    folder.mkdir(parents=True)
    folder.chmod(0o755)  # workers run under a uid of their own
    shadow = folder / "shadow" / "site-packages"  # named so: the sandbox binds a worker's package folders
    shadow.mkdir(parents=True)
    (shadow / "torch.py").write_text('raise ImportError("this node\'s torch is broken")\n')
    for place in (folder / "shadow", shadow):
        place.chmod(0o755)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True, timeout=120)
    site_packages = next((folder / "venv").glob("lib/python*/site-packages"))
    (site_packages / "borrowed.pth").write_text(f"{shadow}\n{sysconfig.get_paths()['purelib']}\n")
    return str(folder / "venv" / "bin" / "python")


def test_a_worker_that_cannot_grade_takes_no_task_and_the_others_grade_the_class(tmp_path, dask):
    roster = write_class(tmp_path / "course", 8, "nbgrader", (), 0)
    address = dask.scheduler()
    dask.worker(address, env={"AUTOGRADER_WORKER_PYTHON": _python_without_torch(tmp_path / "broken")})
    dask.worker(address)
    dask.wait_for_workers(address, 2)
    results, done = _grade([tmp_path / "course"], tmp_path / "g.db", "--cluster", address)
    assert sorted(results) == sorted(student for student, _, _ in roster)
    assert not [r for r in results.values() if r["internal_error"]]
    assert re.search(r"worker tcp://127\.0\.0\.1:\d+ cannot grade here: .*torch.*; it takes no more tasks, and "
                     r"the other workers grade on", done.stderr), done.stderr


def test_the_scheduler_is_asked_for_its_workers_not_the_clients_copy():
    # The client's own refresh, here every 2 ms, asks for no worker: Client.scheduler_info's copy then lists none.
    with dask_settings.set({"distributed.client.scheduler-info-interval": "2ms"}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        listed = [len(scheduler_identity(client)["workers"]) for _ in range(300)]
    assert listed == [2] * 300


def test_when_no_worker_can_import_the_preload_the_run_stops_with_the_reason(tmp_path, dask):
    write_class(tmp_path / "course", 2, "nbgrader", (), 0)
    address = dask.scheduler()
    dask.worker(address, env={"AUTOGRADER_WORKER_PYTHON": _python_without_torch(tmp_path / "broken")})
    dask.wait_for_workers(address, 1)
    done = run_cli("grade", ASSIGNMENT, tmp_path / "course", "--db", tmp_path / "g.db", "--cluster", address,
                   timeout=300)
    assert done.returncode == 2, done.stderr
    assert re.search(r"no Dask worker of tcp://127\.0\.0\.1:\d+ can grade: worker tcp://127\.0\.0\.1:\d+ cannot "
                     r"grade here: .*torch", done.stderr), done.stderr
    assert "run the same command again to grade the rest" in done.stderr and "Traceback" not in done.stderr
    assert _committed(tmp_path / "g.db") == 0


def _slow_the_second_time(marker: Path) -> str:
    if marker.exists():
        time.sleep(3)  # the run again after the result was lost: long enough for the driver to see it lost
    marker.touch()
    return '{"result": "kept"}'


def test_a_result_lost_with_its_worker_before_the_driver_read_it_is_waited_for_again(tmp_path):
    """A task finished, then its worker died before the driver read the result (another task killed it): the
    scheduler runs the task again, and the run waits for it instead of stopping as if the scheduler were lost."""
    from autograder.cluster.driver import Cluster, _Run
    from autograder.grading.found import Found

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client, Store(tmp_path / "g.db") as store:
        future = client.submit(_slow_the_second_time, tmp_path / "ran", key="autograder-lost-s0001", pure=False)
        future.result()
        holder = next(iter(client.who_has([future])[future.key]))
        client.sync(next(w for w in cluster.workers.values() if w.address == holder).close)  # its data with it
        deadline = time.monotonic() + 30
        while future.status == "finished" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert future.status in ("lost", "pending")
        run = _Run(Cluster(client, cluster.scheduler_address, "auto", 10.0), "autograder-lost", store)
        item = Found(student="s0001", path=tmp_path / "s0001.py", root=tmp_path)
        run.runs[future] = object()
        run._finish(future, item)  # it had stopped the run: "lost the Dask scheduler … its task was lost"
        assert run.in_flight == {future: item}
        assert future.result(timeout=60) == '{"result": "kept"}'  # run again on the worker left


def test_a_worker_whose_warm_up_fails_unforeseen_refuses_instead_of_leaving_its_tasks_waiting(tmp_path):
    """Stored reference timings of the wrong shape make the worker's warm-up raise a ValueError, which no step of it
    expects: its thread had ended, and every task sent there waited for ever for a grader."""
    from autograder.cluster.driver import Lease
    from autograder.cluster.warm import Orders, WarmGrader, grade_task
    from autograder.grading.calibration import machine
    from autograder.grading.course import load_course
    from autograder.grading.coursefiles import grading_files
    from autograder.grading.found import Found
    from autograder.grading.suite import load_suite, suite_version

    course = load_course(ROOT / "course.yaml")
    suite = load_suite(course, ASSIGNMENT)
    broken = {machine(): {entry.name: (0.001,) for entry in suite.checks}}  # (seconds,) where (seconds, calls) is
    orders = Orders(ASSIGNMENT, suite_version(course, ASSIGNMENT), tuple(grading_files(course, ASSIGNMENT)), "auto",
                    (), broken)
    stub = ROOT / "assignments" / ASSIGNMENT / "attention.py"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        lease = Lease(client, "autograder-broken")  # as the driver keeps it: without it the plugin closes after 30 s
        lease.start()
        client.register_plugin(WarmGrader("autograder-broken", orders), name="autograder-broken")
        reply = client.submit(grade_task, "autograder-broken", Found("s1", stub), None).result(timeout=120)
        lease.end()
    refused = json.loads(reply)["refused"]
    assert "could not prepare to grade (ValueError:" in refused and "The worker's log has the traceback" in refused


def _held(worker: subprocess.Popen, scratch: Path) -> tuple[int, list[str]]:
    """What a `dask worker` process holds for runs: its sandboxes (bwrap processes under it) and course copies."""
    import psutil

    sandboxes = [child for child in psutil.Process(worker.pid).children(recursive=True) if child.name() == "bwrap"]
    return len(sandboxes), sorted(path.name for path in scratch.rglob("autograder-course-*"))


def _plugins(address: str) -> dict:
    """Each worker's plugins of grading runs."""
    with Client(address, timeout=30, set_as_default=False) as client:
        return client.run(lambda dask_worker: sorted(name for name in dask_worker.plugins
                                                     if name.startswith("autograder-") and "interrupts" not in name))


def test_a_driver_killed_with_sigkill_leaves_no_sandbox_course_or_plugin_on_the_workers(tmp_path, dask):
    """kill -9 of the driver cannot take its plugin off the workers: its lease lapses, and the plugin closes itself."""
    write_class(tmp_path / "course", 12, "nbgrader", (), 0)
    address = dask.scheduler(worker_saturation=1.0)
    scratch = tmp_path / "scratch"
    worker = dask.worker(address, extra=["--nworkers", "2", "--local-directory", str(scratch)])
    dask.wait_for_workers(address, 2)
    db = tmp_path / "g.db"
    driver = subprocess.Popen([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(tmp_path / "course"),
                               "--db", str(db), "--cluster", address], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=repository_env())
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and _committed(db) < 2:
        time.sleep(0.05)
    assert _committed(db) >= 2, "the cluster graded nothing"
    sandboxes, courses = _held(worker, scratch)
    assert len(courses) == 2 and _plugins(address), "the workers were not grading for the run"
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    killed = time.monotonic()
    while time.monotonic() - killed < 75 and _held(worker, scratch) != (0, []):
        time.sleep(1)
    assert _held(worker, scratch) == (0, []), f"still held {time.monotonic() - killed:.0f} s after the kill"
    assert time.monotonic() - killed < 60
    assert not any(_plugins(address).values())
    # A worker that joins afterwards is not given the dead run's plugin.
    late_scratch = tmp_path / "late-scratch"
    late = dask.worker(address, extra=["--local-directory", str(late_scratch)])
    dask.wait_for_workers(address, 3)
    time.sleep(3)
    assert _plugins(address) and not any(_plugins(address).values())
    assert _held(late, late_scratch) == (0, [])


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_losing_the_scheduler_mid_run_ends_with_one_line_and_keeps_the_results(tmp_path, dask, how):
    write_class(tmp_path / "course", 12, "nbgrader", (), 0)
    address = dask.scheduler(worker_saturation=1.0)
    dask.worker(address, extra=["--nworkers", "2"])
    db = tmp_path / "g.db"
    driver = subprocess.Popen([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(tmp_path / "course"),
                               "--db", str(db), "--cluster", address], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=repository_env())
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and _committed(db) < 2:
        time.sleep(0.05)
    dask.processes[0].send_signal(how)  # the scheduler
    _, stderr = driver.communicate(timeout=300)
    assert driver.returncode == 2, stderr
    assert f"autograder: lost the Dask scheduler at {address} (" in stderr
    assert "results stored so far are kept: restart the scheduler and workers, then run the same command" in stderr
    assert "Traceback" not in stderr and "FuturesCancelledError" not in stderr
    assert 2 <= _committed(db) < 12


def test_tls_mistakes_are_named_as_certificate_problems_not_network_ones(tmp_path, dask):
    (tmp_path / "other").mkdir()
    ours, theirs = _tls_files(tmp_path), _tls_files(tmp_path / "other")
    address = dask.scheduler(tls=ours)

    def grade(cluster: str, ca: Path, cert: Path, key: Path) -> str:
        started = time.monotonic()
        done = run_cli("grade", ASSIGNMENT, ROOT / "examples" / "w07_class", "--db", tmp_path / "g.db", "--cluster",
                       cluster, "--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key, timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "firewall" not in done.stderr and "within" not in done.stderr, done.stderr
        assert time.monotonic() - started < 30, done.stderr  # no wait for a timeout, nor for Dask to close a client
        return done.stderr

    plain = address.replace("tls://", "tcp://")
    assert f"--cluster {plain} is not a tls:// address" in grade(plain, ours["ca_file"], ours["cert"], ours["key"])
    assert (f"was not signed by --tls-ca-file {theirs['ca_file']}"
            in grade(address, theirs["ca_file"], theirs["cert"], theirs["key"]))
    assert (f"refused this client's certificate --tls-cert {theirs['cert']}"
            in grade(address, ours["ca_file"], theirs["cert"], theirs["key"]))
    assert (f"--tls-key {theirs['key']} is not the key of the certificate --tls-cert {ours['cert']}"
            in grade(address, ours["ca_file"], ours["cert"], theirs["key"]))
    key = serialization.load_pem_private_key(ours["key"].read_bytes(), None)
    locked = tmp_path / "locked-key.pem"
    locked.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.BestAvailableEncryption(b"a passphrase")))
    assert (f"--tls-key {locked}: its key is protected by a passphrase, which Dask cannot ask for"
            in grade(address, ours["ca_file"], ours["cert"], locked))
    missing = tmp_path / "missing-key.pem"
    assert f"--tls-key {missing}: no such file" in grade(address, ours["ca_file"], ours["cert"], missing)


def test_a_worker_tries_a_grading_process_that_does_not_start_again_then_refuses_with_the_reason(tmp_path,
                                                                                                 monkeypatch):
    """A fork of a worker's many threads can inherit a lock another thread held and never start (seen on a loaded
    machine: a grading process spinning in the reference for minutes, and the run waiting for ever). Each start is
    limited; one that overruns is killed and another started, and a worker whose starts keep overrunning refuses.
    Here the limit is shorter than any start, in a worker of this process (so that the limit can be set)."""
    from autograder.cluster.driver import Lease
    from autograder.cluster.warm import START_TRIES, Orders, WarmGrader, grade_task
    from autograder.grading import boundary
    from autograder.grading.course import load_course
    from autograder.grading.coursefiles import grading_files
    from autograder.grading.found import Found
    from autograder.grading.suite import suite_version

    monkeypatch.setattr(boundary, "START_SECONDS", 0.001)
    course = load_course(ROOT / "course.yaml")
    orders = Orders(ASSIGNMENT, suite_version(course, ASSIGNMENT), tuple(grading_files(course, ASSIGNMENT)), "auto",
                    (), {})
    stub = ROOT / "assignments" / ASSIGNMENT / "attention.py"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        lease = Lease(client, "autograder-stuck")  # as the driver keeps it: without it the plugin closes after 30 s
        lease.start()
        client.register_plugin(WarmGrader("autograder-stuck", orders), name="autograder-stuck")
        reply = client.submit(grade_task, "autograder-stuck", Found("s1", stub), None).result(timeout=300)
        lease.end()
    refused = json.loads(reply)["refused"]
    assert "did not start its sandbox within 0.001 s" in refused and f"({START_TRIES} times)" in refused, refused
