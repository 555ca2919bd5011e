"""Graders on Slurm: `autograder slurm`, a locked Dask scheduler here and N worker jobs kept alive.

A TA runs it on the login node (in the background, under nohup or in an
sbatch job of its own: it never reads a terminal) and grades from another
shell with the command it prints and writes to STATE/grade-command.txt. It
uses dask-jobqueue's SLURMCluster, and adds what grading needs:

- the scheduler is locked: TLS with a certificate authority made for these
  graders, whose files are in STATE (a folder only the TA can enter, which the
  worker nodes must see at the same path: put it on the shared file system);
- every worker job runs the Python of the given virtual environment, with
  the grader preloaded, one thread per worker process;
- N jobs stay alive: a job that ends (cancelled, preempted, out of its wall
  time, its node gone) is replaced by a new one, which Slurm schedules as any
  other, so capacity does not shrink over a long batch.

It runs until it is sent SIGTERM or SIGINT (Ctrl-C, `kill`, `scancel` of its
own job), and then cancels its worker jobs.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import dask
from dask_jobqueue import SLURMCluster
from distributed.security import Security

from autograder.cluster import ClusterError
from autograder.cluster.connect import LOCKED_SCHEDULER

CHECK_SECONDS = 5.0  # how often lost jobs are looked for
LIVE_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED"}


@dataclass(frozen=True)
class SlurmGraders:
    """What the worker jobs are: `autograder slurm --help` (autograder.cli.cluster) says what each is for."""

    jobs: int
    cores: int
    processes: int
    memory: str
    walltime: str
    venv: Path
    state: Path
    python: str = ""
    queue: str = ""
    account: str = ""
    port: int = 8786
    host: str = ""  # the interface the scheduler listens on ("": the one the nodes reach this machine by)
    extra_directives: tuple[str, ...] = ()

    @property
    def worker_python(self) -> str:
        return self.python or str(self.venv / "bin" / "python")


def run(graders: SlurmGraders, say) -> None:
    """Start the scheduler and the jobs, keep them alive until SIGTERM or SIGINT, then cancel them."""
    tls = write_certificates(graders.state)
    stop = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda *_: stop.set())
    with dask.config.set({**LOCKED_SCHEDULER, "distributed.scheduler.worker-saturation": 1.0}):
        cluster = start_cluster(graders, tls)
    try:
        cluster.scale(jobs=graders.jobs)
        command = grade_command(cluster.scheduler_address, tls)
        (graders.state / "grade-command.txt").write_text(command + "\n")
        (graders.state / "scheduler.json").write_text(json.dumps({"address": cluster.scheduler_address,
                                                                  **{k: str(v) for k, v in tls.items()}}) + "\n")
        say(f"scheduler at {cluster.scheduler_address} (TLS; certificates in {graders.state}); {graders.jobs} worker "
            f"jobs of {graders.processes} workers each submitted. Grade with:\n  {command}")
        known, gone = {}, set()
        while not stop.wait(CHECK_SECONDS):
            for job_id in replace_lost_jobs(cluster, graders.jobs, known, gone):
                say(f"worker job {job_id} ended; a new job was submitted in its place")
    finally:
        say("stopping: cancelling the worker jobs")
        cluster.close()


def start_cluster(graders: SlurmGraders, tls: dict) -> SLURMCluster:
    security = Security(tls_ca_file=str(tls["ca_file"]), require_encryption=True,
                        **{f"tls_{role}_{part}": str(tls[part]) for role in ("client", "scheduler", "worker")
                           for part in ("cert", "key")})
    try:
        return SLURMCluster(
            cores=graders.cores, processes=graders.processes, memory=graders.memory, walltime=graders.walltime,
            queue=graders.queue or None, account=graders.account or None, python=graders.worker_python,
            job_script_prologue=[f"source {shlex.quote(str(graders.venv / 'bin' / 'activate'))}"],
            worker_extra_args=["--preload", "autograder.cluster.preload"],
            job_extra_directives=list(graders.extra_directives), protocol="tls://", security=security,
            scheduler_options={"port": graders.port, "dashboard_address": None,
                               **({"host": graders.host} if graders.host else {})},
            log_directory=str(graders.state / "logs"))
    except (OSError, RuntimeError, ValueError) as error:
        raise ClusterError(f"could not start the scheduler for the Slurm graders ({error}); check --port (is it "
                           "free?) and that sbatch works here, then run again") from None


def replace_lost_jobs(cluster: SLURMCluster, jobs: int, known: dict[str, str], gone: set[str]) -> list[str]:
    """Forget the worker jobs Slurm no longer runs or queues and submit new ones; the ids of those lost.

    dask-jobqueue keeps a cancelled job in its plan, so it would never submit another: its capacity would
    shrink with every job lost. known: worker name -> job id of every job seen so far, kept by the caller,
    since dask-jobqueue may drop a job whose workers left from `cluster.workers` and keep it in its plan;
    gone: the ids already replaced.
    """
    for name, job in list(cluster.workers.items()):
        job_id = getattr(job, "job_id", None)
        if job_id and job_id not in gone:
            known[name] = job_id
    if not known:
        return []
    live = live_jobs(list(known.values()))
    if live is None:
        return []  # squeue did not answer this time: nothing is known to be lost
    lost = [name for name, job_id in known.items() if job_id not in live]
    lost_ids = [known.pop(name) for name in lost]
    for _ in lost:
        # Planned while the lost names are still taken, so each new job gets a name of its own: Distributed
        # cancels the job holding a lost worker's name 15 s after that worker left (lost-worker-timeout), and a
        # replacement under the same name, still queued or starting, would be cancelled in its turn.
        cluster.worker_spec.update(cluster.new_worker_spec())
    for name in lost:
        # Out of the plan and out of the running set: dask-jobqueue would otherwise first `scancel` a job that
        # has ended, and a failed scancel stops it from submitting the new one.
        cluster.worker_spec.pop(name, None)
        cluster.workers.pop(name, None)
    gone.update(lost_ids)
    if lost:
        cluster.scale(jobs=jobs)
    return lost_ids


def live_jobs(job_ids: list[str]) -> set[str] | None:
    """Which of `job_ids` Slurm still queues or runs; None if squeue fails."""
    try:
        done = subprocess.run(["squeue", "--noheader", "--format=%i %T", "--jobs", ",".join(job_ids)],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 and "Invalid job id" not in done.stderr:
        return None
    rows = (line.split() for line in done.stdout.splitlines())
    return {row[0] for row in rows if len(row) == 2 and row[1] in LIVE_STATES}


def write_certificates(state: Path) -> dict[str, Path]:
    """A certificate authority and one certificate for scheduler, workers and the TA's grade command, as files
    in `state` (made 0700), reused if they are already there."""
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o700)
    files = {part: state / f"{part}.pem" for part in ("ca_file", "cert", "key")}
    if all(path.is_file() for path in files.values()):
        return files
    config = Security.temporary().get_tls_config_for_role("client")
    for part, path in files.items():
        path.touch(mode=0o600)
        path.write_text(config[part])
    return files


def grade_command(address: str, tls: dict) -> str:
    return (f"autograder grade ASSIGNMENT COURSE --cluster {address} --tls-ca-file {shlex.quote(str(tls['ca_file']))} "
            f"--tls-cert {shlex.quote(str(tls['cert']))} --tls-key {shlex.quote(str(tls['key']))}")


def wait_for_address(state: Path, seconds: float) -> dict:
    """The scheduler.json that `run` writes, once it is there (for scripts and tests)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return json.loads((state / "scheduler.json").read_text())
        except (OSError, ValueError):
            time.sleep(0.2)
    raise ClusterError(f"the Slurm graders wrote no {state / 'scheduler.json'} within {seconds:g} s")
