"""Reaching the cluster `--cluster ADDRESS` names: a running Dask scheduler, or `local:N` started here.

A scheduler's address is Dask's own (`tcp://host:8786`, `tls://…`); a
`tls://` scheduler is reached with the TA's certificate files (`Credentials`)
or Dask's own TLS configuration. `local:N` starts a LocalCluster of N worker
processes that listens on 127.0.0.1 only and speaks TLS with a certificate
authority made for this run alone (Dask's `Security.temporary()`): a client
without this run's certificate, even one on this machine, is refused, so no
one but this command can ask the scheduler to run code.
"""
from __future__ import annotations

import contextlib
import logging
import re
import signal
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import dask
import dask.utils
from distributed import Client, LocalCluster, WorkerPlugin
from distributed.comm.addressing import parse_address as dask_address
from distributed.comm.addressing import parse_host_port
from distributed.comm.core import FatalCommClosedError
from distributed.security import Security

from autograder.cluster import ClusterError

CLOSE_SECONDS = 30
# A worker that dies takes the task it was running with it; Dask runs that task again on another worker, and
# after this many deaths records it as failed (the driver then stores "could not grade"). A running
# scheduler keeps its own setting, `distributed.scheduler.allowed-failures` (Dask's default: 3).
ALLOWED_FAILURES = 2
# The scheduler's web server, which Dask starts whatever the dashboard setting, serves only its health check: its
# info pages would show whoever reaches the port, with no certificate, the workers' logs and the tasks' keys, which
# name students. For the schedulers the project starts (local:N, autograder slurm).
LOCKED_SCHEDULER = {"distributed.scheduler.http.routes": ["distributed.http.health"]}
LOCAL_SETTINGS = {
    **LOCKED_SCHEDULER,
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


@dataclass(frozen=True)
class Credentials:
    """The TA's TLS files for a `tls://` scheduler (`--tls-ca-file`, `--tls-cert`, `--tls-key`); empty: Dask's
    own configuration (distributed.comm.tls.*) decides."""

    ca_file: str = ""
    cert: str = ""
    key: str = ""

    def security(self) -> Security | None:
        if not (self.ca_file or self.cert or self.key):
            return None
        if not (self.ca_file and self.cert):
            raise ClusterError("a TLS scheduler needs --tls-ca-file (the certificate authority that signed the "
                               "scheduler's certificate) and --tls-cert (this client's certificate, with its key in "
                               "the same file or in --tls-key); pass both, or configure Dask's "
                               "distributed.comm.tls settings instead")
        return Security(tls_ca_file=self.ca_file, tls_client_cert=self.cert, tls_client_key=self.key or None,
                        require_encryption=True)

    def context(self) -> ssl.SSLContext:
        """The files as a TLS client context; a ClusterError naming the option (and file) at fault.

        Checked before any connection: Dask reports a missing file or a key that is not the certificate's as
        a scheduler it could not reach."""
        for option, path in (("--tls-ca-file", self.ca_file), ("--tls-cert", self.cert), ("--tls-key", self.key)):
            if path and not Path(path).is_file():
                raise ClusterError(f"{option} {path}: no such file. Pass the path of the file the scheduler and "
                                   "workers were given (README: Grading on a cluster), then run again. Nothing was "
                                   "graded")
        try:
            context = ssl.create_default_context(cafile=self.ca_file)
        except (ssl.SSLError, OSError) as error:
            raise ClusterError(f"--tls-ca-file {self.ca_file} holds no certificate authority's certificate "
                               f"({error}); pass the CA file the scheduler was started with, then run again. Nothing "
                               "was graded") from None
        context.check_hostname = False  # as Dask's own client: the certificate authority is the course's own
        try:
            context.load_cert_chain(self.cert, self.key or None, password=lambda: "")  # never a prompt
        except (ssl.SSLError, OSError) as error:
            if getattr(error, "reason", "") == "KEY_VALUES_MISMATCH":  # OpenSSL's code for it
                raise ClusterError(f"--tls-key {self.key} is not the key of the certificate --tls-cert {self.cert}: "
                                   "pass the key made with that certificate, then run again. Nothing was graded"
                                   ) from None
            option, key = ("--tls-key", self.key) if self.key else ("--tls-cert", self.cert)
            if _passphrase_protected(key):
                raise ClusterError(f"{option} {key}: its key is protected by a passphrase, which Dask cannot ask for. "
                                   f"Write a copy without one that only you can read (`openssl pkey -in {key} -out "
                                   "client-key.pem && chmod 600 client-key.pem`), pass it as --tls-key, then run "
                                   "again. Nothing was graded") from None
            raise ClusterError(f"--tls-cert {self.cert} and its key ({self.key or 'in the same file'}) could not be "
                               f"read as a certificate and its unencrypted key ({error}); pass the files made for "
                               "the scheduler's authority, then run again. Nothing was graded") from None
        return context


def _passphrase_protected(path: str) -> bool:
    """Whether the PEM file at `path` holds an encrypted private key (PKCS#8's header, or OpenSSL's older one)."""
    try:
        pem = Path(path).read_bytes()
    except OSError:
        return False
    return b"-----BEGIN ENCRYPTED PRIVATE KEY-----" in pem or b"Proc-Type: 4,ENCRYPTED" in pem


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
def connect(address: Address, wait_seconds: float, say: Callable[[str], None],
            credentials: Credentials = Credentials()) -> Iterator[Client]:
    """A client of the cluster at `address` with at least one worker; a local cluster is stopped on exit."""
    with contextlib.ExitStack() as stack:
        try:
            if address.local_workers:
                cluster = _start_local(address.local_workers)
                stack.callback(cluster.close, timeout=CLOSE_SECONDS)
                client = Client(cluster, set_as_default=False)
                client.register_plugin(DriverOwnsInterrupts(), name=DriverOwnsInterrupts.name)
            else:
                client = _reach(address.scheduler, credentials)
            stack.callback(client.close, timeout=CLOSE_SECONDS)
            _wait_for_a_worker(client, address, wait_seconds, say)
            yield client
        finally:
            with _logs_off():
                stack.close()


@contextlib.contextmanager
def _logs_off() -> Iterator[None]:
    """No log records while Dask closes: by then every result is stored and the command's last line printed,
    and a race of its own teardown ("CommClosedError: ConnectionPool closing.") would print a traceback after
    that line, which scripts read for the outcome."""
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


class DriverOwnsInterrupts(WorkerPlugin):
    """For the workers of `local:N`: Ctrl-C in the terminal reaches them too (they share the driver's process
    group), and the driver decides what it means: it cancels, stores nothing more, and stops them itself."""

    name = "autograder-driver-owns-interrupts"
    idempotent = True

    def setup(self, worker) -> None:
        if threading.current_thread() is threading.main_thread():  # signal handlers belong to the main thread
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    def teardown(self, worker) -> None:
        logging.disable(logging.CRITICAL)  # the worker is closing: its teardown's races are no one's concern


def _start_local(workers: int) -> LocalCluster:
    """N workers on loopback, behind TLS whose certificate authority exists only in this process's memory."""
    try:
        with dask.config.set(LOCAL_SETTINGS):
            # Its workers' warnings would only repeat what the results say (a worker that died, a task cancelled).
            return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                protocol="tls://", security=Security.temporary(), dashboard_address=None,
                                silence_logs=logging.ERROR)
    except ImportError as error:
        raise ClusterError(f"a local cluster speaks TLS, which needs the `cryptography` package ({error}); install "
                           "the dask extra again (it includes it), then run again. Nothing was graded") from None
    except (OSError, RuntimeError, TimeoutError) as error:
        raise ClusterError(f"could not start a local Dask cluster of {workers} workers ({error}); check this "
                           "machine's free memory and ports, or grade with --jobs instead. Nothing was graded"
                           ) from None


def _reach(scheduler: str, credentials: Credentials) -> Client:
    security = credentials.security()
    if security is not None and not scheduler.startswith("tls://"):
        # Dask would refuse the plain connection with a traceback, then hang for a minute closing its client.
        raise ClusterError(f"--tls-ca-file, --tls-cert and --tls-key are for a scheduler that speaks TLS, but "
                           f"--cluster {scheduler} is not a tls:// address: give the scheduler's tls://HOST:PORT "
                           "address (what `dask scheduler --protocol tls` prints), or leave the --tls-* options out "
                           "for a scheduler without TLS; then run again. Nothing was graded")
    if security is not None:
        _shake_hands(scheduler, credentials)
    if scheduler.startswith("tls://") and security is None and not dask.config.get("distributed.comm.tls.client.cert",
                                                                                    None):
        raise ClusterError(f"the scheduler at {scheduler} speaks TLS, and this command has no certificate to show "
                           "it: pass --tls-ca-file CA.pem --tls-cert CERT.pem (and --tls-key KEY.pem if the key is "
                           "in a file of its own), the files the scheduler was started with (README: Grading on a "
                           "cluster), then run again. Nothing was graded")
    # How long to try: Dask's own setting (distributed.comm.timeouts.connect, 30 s unless configured).
    seconds = dask.utils.parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"))
    try:
        return Client(scheduler, timeout=seconds, set_as_default=False, security=security)
    except (OSError, ValueError, TypeError) as error:
        if _tls_refused(error):
            raise ClusterError(f"the TLS handshake with the scheduler at {scheduler} failed ({error}): a certificate "
                               "problem, not the network. Check that the certificate authority given signed the "
                               "scheduler's certificate and that the scheduler's authority signed this client's "
                               "certificate; then run again. Nothing was graded") from None
        raise ClusterError(
            f"could not reach the Dask scheduler at {scheduler} within {seconds:g} s ({error}). Check that "
            "the scheduler runs (`dask scheduler` prints the address it listens on), that the address and port "
            "are right, and that this machine can reach it (a firewall or VPN may block the port); then run "
            "again. Nothing was graded") from None


def _shake_hands(scheduler: str, credentials: Credentials) -> None:
    """A TLS handshake with the scheduler, as Dask's would be: a ClusterError saying which certificate is at fault
    when one is refused. A scheduler that cannot be reached at all is left to Dask's own attempt to report."""
    context = credentials.context()
    try:
        host, port = parse_host_port(dask_address(scheduler)[1])
        with socket.create_connection((host, port), timeout=10) as raw, \
                context.wrap_socket(raw, server_hostname=host) as tls:
            tls.settimeout(5)
            refused = tls.recv(1) == b""  # a scheduler that accepts the client speaks first
    except ssl.SSLCertVerificationError as error:
        raise ClusterError(f"the certificate of the scheduler at {scheduler} was not signed by --tls-ca-file "
                           f"{credentials.ca_file} ({error.verify_message}): pass the certificate authority the "
                           "scheduler was started with (and check that the address is your scheduler's); then run "
                           "again. Nothing was graded") from None
    except ssl.SSLError as error:
        refused, cause = True, error.reason or str(error)
    except (OSError, ValueError):
        return
    else:
        cause = "it closed the connection"
    if refused:
        raise ClusterError(f"the scheduler at {scheduler} refused this client's certificate --tls-cert "
                           f"{credentials.cert} ({cause}): it lets in only certificates signed by the authority it "
                           "was started with. Pass a certificate (and key) signed by that authority, then run again. "
                           "Nothing was graded")


def _tls_refused(error: BaseException) -> bool:
    """Whether Dask's failure to connect was a TLS handshake's, and not the network's."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, (ssl.SSLError, FatalCommClosedError)):  # Dask's, for a TLS handshake that failed
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def scheduler_identity(client: Client, n_workers: int = -1) -> dict:
    """What the scheduler says now of itself and its first `n_workers` workers (-1: all); OSError if unreachable.

    Not `Client.scheduler_info`, which hands back the client's cached copy: the client's own refresh every
    couple of seconds asks for no worker at all, and when it lands between the question and the answer the
    copy lists none (seen in 57 of 500 calls with a 2 ms refresh); it also keeps the copy stale, silently,
    when the scheduler cannot be reached.
    """
    return client.sync(client.scheduler.identity, n_workers=n_workers)


def _wait_for_a_worker(client: Client, address: Address, seconds: float, say) -> None:
    info = scheduler_identity(client)
    if not info["workers"]:
        say(f"waiting up to {seconds:g} s for a Dask worker to join the scheduler at {address}")
        try:
            client.wait_for_workers(1, timeout=seconds)
        except TimeoutError:
            raise ClusterError(f"no Dask worker joined the scheduler at {address} within {seconds:g} s. Start "
                               f"workers (`dask worker {address} --nthreads 1`) or scale the cluster, or wait "
                               "longer with --cluster-wait; then run again. Nothing was graded") from None
        info = scheduler_identity(client)
    workers = info["workers"]
    threads = sum(worker["nthreads"] for worker in workers.values())
    say(f"grading on the Dask cluster at {address}: {len(workers)} workers, {threads} threads")
    crowded = sorted(name for name, worker in workers.items() if worker["nthreads"] > 1)
    if crowded:
        # Each thread grades in a sandbox of its own, but the checks in one process share its interpreter lock.
        say(f"note: {len(crowded)} workers (e.g. {crowded[0]}) run several threads, which share one Python "
            "interpreter; start workers with `--nthreads 1` (and `--nworkers N` for N per machine) for full speed")
