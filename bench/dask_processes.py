"""Real Dask processes for bench/cluster.py and the cluster tests: `dask scheduler` and `dask worker` on 127.0.0.1.

Each process runs in a session of its own (so a worker's nanny and the
sandboxes under it are stopped with it), is bounded in time (the scheduler
stops after an idle spell, a worker when it loses its scheduler) and is always
stopped by `stop()`. Their logs go to files in the folder given.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

IDLE_SECONDS = 600  # a scheduler nobody uses for this long stops by itself
DEATH_SECONDS = 60  # a worker that cannot reach its scheduler for this long stops by itself


class DaskProcesses:
    def __init__(self, folder: Path, env: dict | None = None):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.env = env or dict(os.environ)
        self.processes: list[subprocess.Popen] = []

    def scheduler(self, tls: dict | None = None, **settings) -> str:
        """Start a scheduler with these `distributed.scheduler` settings; its address.

        tls: {"ca_file", "cert", "key"} paths: the scheduler then speaks TLS only and requires a client
        certificate signed by that authority.
        """
        file = self.folder / f"scheduler-{len(self.processes)}.json"
        env = {f"DASK_DISTRIBUTED__SCHEDULER__{name.upper()}": str(value) for name, value in settings.items()}
        self._start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  "--scheduler-file", str(file), "--idle-timeout", f"{IDLE_SECONDS}s",
                                  *(["--protocol", "tls", *tls_options(tls)] if tls else [])], env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                return json.loads(file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        raise RuntimeError(f"the scheduler did not start; see {self.folder}")

    def worker(self, address: str, nanny: bool = True, env: dict | None = None,
               extra: list[str] = (), tls: dict | None = None) -> subprocess.Popen:
        """Start one worker as the README starts them (one thread, the grader imported at start), with its
        nanny, which restarts it if it dies (unless nanny=False); `extra`: more `dask worker` options;
        tls: as for `scheduler`."""
        return self._start("worker", ["worker", address, "--nthreads", "1", "--preload", "autograder.cluster.preload",
                                      "--host", "127.0.0.1", "--no-dashboard",
                                      "--death-timeout", f"{DEATH_SECONDS}s", *([] if nanny else ["--no-nanny"]),
                                      *(tls_options(tls) if tls else []), *extra], env or {})

    def wait_for_workers(self, address: str, count: int, seconds: float = 120, tls: dict | None = None) -> None:
        """Return once `count` workers have joined the scheduler at `address`."""
        from distributed import Client
        from distributed.security import Security

        security = Security(tls_ca_file=str(tls["ca_file"]), tls_client_cert=str(tls["cert"]),
                            tls_client_key=str(tls["key"]), require_encryption=True) if tls else None
        with Client(address, timeout=seconds, security=security) as client:
            client.wait_for_workers(count, timeout=seconds)

    def stop(self) -> None:
        for process in self.processes:
            _signal_group(process, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            _signal_group(process, signal.SIGKILL)  # whatever the group still holds (a nanny's worker, sandboxes)
            process.wait()

    def _start(self, role: str, args: list[str], env: dict) -> subprocess.Popen:
        log = open(self.folder / f"{role}-{len(self.processes)}.log", "wb")  # noqa: SIM115 - the process keeps it
        process = subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env={**self.env, **env}, start_new_session=True,
                                   cwd=self.folder)  # not the repository: PYTHONPATH decides what they import
        log.close()
        self.processes.append(process)
        return process


def tls_options(tls: dict) -> list[str]:
    """`dask scheduler`/`dask worker` options for the TLS files in `tls` ({"ca_file", "cert", "key"})."""
    return ["--tls-ca-file", str(tls["ca_file"]), "--tls-cert", str(tls["cert"]), "--tls-key", str(tls["key"])]


def _signal_group(process: subprocess.Popen, number: int) -> None:
    try:
        os.killpg(process.pid, number)
    except ProcessLookupError:
        pass
