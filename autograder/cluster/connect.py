"""Reaching the cluster `--cluster ADDRESS` names: a running Dask scheduler, or `local:N` started here.

A scheduler's address is Dask's own (`tcp://host:8786`, `tls://…`; its
security settings come from Dask's configuration). `local:N` starts a
LocalCluster of N worker processes on 127.0.0.1, one thread each, and stops
it when the command ends.
"""
from __future__ import annotations

import contextlib
import logging
import re
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import dask
import dask.utils
from distributed import Client, LocalCluster, WorkerPlugin

from autograder.cluster import ClusterError

CLOSE_SECONDS = 30
# A worker that dies takes the task it was running with it; Dask runs that task again on another worker, and
# after this many deaths records it as failed (the driver then stores "could not grade"). A running
# scheduler keeps its own setting, `distributed.scheduler.allowed-failures` (Dask's default: 3).
ALLOWED_FAILURES = 2
LOCAL_SETTINGS = {
    "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
    # One task per worker thread at a time: a worker's death then counts against the one submission it was
    # grading only, never against one merely queued behind it.
    "distributed.scheduler.worker-saturation": 1.0,
}
_LOCAL = re.compile(r"local:(\d+)")


@dataclass(frozen=True)
class Address:
    """What `--cluster` names: a scheduler's address, or a number of local workers to start."""

    scheduler: str = ""
    local_workers: int = 0

    def __str__(self) -> str:
        return self.scheduler or f"local:{self.local_workers}"


def parse_address(text: str) -> Address:
    """`local:N` or a scheduler's address; an error saying what is expected otherwise."""
    text = text.strip()
    if text.startswith("local"):
        match = _LOCAL.fullmatch(text)
        if not match or int(match.group(1)) < 1:
            raise ClusterError(f"--cluster {text!r}: a local cluster is `local:N`, N the number of worker processes "
                               "to start on this machine (at least 1), e.g. --cluster local:4")
        return Address(local_workers=int(match.group(1)))
    if not text or text.startswith("-"):
        raise ClusterError("--cluster needs the Dask scheduler's address (e.g. tcp://host:8786, which `dask "
                           "scheduler` prints) or local:N")
    return Address(scheduler=text)


@contextlib.contextmanager
def connect(address: Address, wait_seconds: float, say: Callable[[str], None]) -> Iterator[Client]:
    """A client of the cluster at `address` with at least one worker; a local cluster is stopped on exit."""
    with contextlib.ExitStack() as stack:
        if address.local_workers:
            cluster = _start_local(address.local_workers)
            stack.callback(cluster.close, timeout=CLOSE_SECONDS)
            client = Client(cluster, set_as_default=False)
            client.register_plugin(DriverOwnsInterrupts(), name=DriverOwnsInterrupts.name)
        else:
            client = _reach(address.scheduler)
        stack.callback(client.close, timeout=CLOSE_SECONDS)
        _wait_for_a_worker(client, address, wait_seconds, say)
        yield client


class DriverOwnsInterrupts(WorkerPlugin):
    """For the workers of `local:N`: Ctrl-C in the terminal reaches them too (they share the driver's process
    group), and the driver decides what it means: it cancels, stores nothing more, and stops them itself."""

    name = "autograder-driver-owns-interrupts"
    idempotent = True

    def setup(self, worker) -> None:
        if threading.current_thread() is threading.main_thread():  # signal handlers belong to the main thread
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_local(workers: int) -> LocalCluster:
    try:
        with dask.config.set(LOCAL_SETTINGS):
            # Its workers' warnings would only repeat what the results say (a worker that died, a task cancelled).
            return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                dashboard_address=None, silence_logs=logging.ERROR)
    except (OSError, RuntimeError, TimeoutError) as error:
        raise ClusterError(f"could not start a local Dask cluster of {workers} workers ({error}); check this "
                           "machine's free memory and ports, or grade with --jobs instead. Nothing was graded"
                           ) from None


def _reach(scheduler: str) -> Client:
    # How long to try: Dask's own setting (distributed.comm.timeouts.connect, 30 s unless configured).
    seconds = dask.utils.parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"))
    try:
        return Client(scheduler, timeout=seconds, set_as_default=False)
    except (OSError, ValueError, TypeError) as error:
        raise ClusterError(
            f"could not reach the Dask scheduler at {scheduler} within {seconds:g} s ({error}). Check that "
            "the scheduler runs (`dask scheduler` prints the address it listens on), that the address and port "
            "are right, and that this machine can reach it (a firewall or VPN may block the port); then run "
            "again. Nothing was graded") from None


def _wait_for_a_worker(client: Client, address: Address, seconds: float, say) -> None:
    info = client.scheduler_info(n_workers=-1)
    if not info["workers"]:
        say(f"waiting up to {seconds:g} s for a Dask worker to join the scheduler at {address}")
        try:
            client.wait_for_workers(1, timeout=seconds)
        except TimeoutError:
            raise ClusterError(f"no Dask worker joined the scheduler at {address} within {seconds:g} s. Start "
                               f"workers (`dask worker {address} --nthreads 1`) or scale the cluster, or wait "
                               "longer with --cluster-wait; then run again. Nothing was graded") from None
        info = client.scheduler_info(n_workers=-1)
    workers = info["workers"]
    threads = sum(worker["nthreads"] for worker in workers.values())
    say(f"grading on the Dask cluster at {address}: {len(workers)} workers, {threads} threads")
    crowded = sorted(name for name, worker in workers.items() if worker["nthreads"] > 1)
    if crowded:
        # Each thread grades in a sandbox of its own, but the checks in one process share its interpreter lock.
        say(f"note: {len(crowded)} workers (e.g. {crowded[0]}) run several threads, which share one Python "
            "interpreter; start workers with `--nthreads 1` (and `--nworkers N` for N per machine) for full speed")
