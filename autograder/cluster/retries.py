"""When a timeout on a cluster is a grade: only when a run under normal conditions times out too.

A worker that has just joined (a replaced Slurm job, a node still importing
PyTorch, timing the reference and starting its sandboxes) runs its first calls
slowly, and so does every other worker on its machine, whose cores it takes
meanwhile. So the driver keeps, for each worker it has seen, its machine and
when it first answered (`Warmth`), and treats a machine as calm once every
grading worker on it has answered at least SETTLE_SECONDS ago. A worker is
warm when it has answered and its machine is calm.

The rule (`Retries`): a result with a timeout is never stored from a first
run; the submission is graded again on a warm worker (another one where there
is one), waiting for one to be warm if need be. A later run's timeout counts
only if its worker was warm when the run was sent and its machine stayed calm
until the result came back; otherwise it is graded again, up to MAX_RUNS runs,
the last of which counts whatever the conditions (a cluster that never calms
down must still finish).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

SETTLE_SECONDS = 10.0  # after a worker's first answer, its machine's calls run at their usual speed again
IDLE_SECONDS = 60.0  # a worker that has not answered (no task came its way) stops counting as starting after this
WAIT_SECONDS = 60.0  # how long a run waits for a warm worker before it goes to any (and then does not count)
MAX_RUNS = 3


@dataclass
class Warmth:
    """What the driver knows of each live worker: its machine, when it was first seen, when it first answered."""

    host: dict[str, str] = field(default_factory=dict)
    seen: dict[str, float] = field(default_factory=dict)
    answered: dict[str, float] = field(default_factory=dict)
    idle: set[str] = field(default_factory=set)  # workers that take no tasks (refused): they start nothing

    def saw(self, workers: dict[str, str], now: float) -> None:
        """The live workers (address -> host), as the scheduler lists them; forgets those gone."""
        for address in set(self.host) - set(workers):
            for known in (self.host, self.seen, self.answered):
                known.pop(address, None)
        for address, host in workers.items():
            self.host.setdefault(address, host)
            self.seen.setdefault(address, now)

    def answer(self, address: str, now: float) -> None:
        """`address` sent back a result (its warm-up is done)."""
        self.answered.setdefault(address, now)

    def calm_since(self, host: str) -> float:
        """Since when every grading worker on `host` has run at its usual speed (inf: one is still starting)."""
        settled = [self._settled(address) for address, there in self.host.items()
                   if there == host and address not in self.idle]
        return max(settled, default=-math.inf)

    def warm(self, address: str, now: float) -> bool:
        return address in self.answered and self.calm_since(self.host.get(address, "")) <= now

    def _settled(self, address: str) -> float:
        if address in self.answered:
            return self.answered[address] + SETTLE_SECONDS
        return self.seen.get(address, -math.inf) + IDLE_SECONDS


@dataclass(frozen=True)
class Run:
    """One run of a submission's task: where it was sent and when, and how many runs came before."""

    number: int  # 1 for the first run
    sent_at: float
    warm_when_sent: tuple[str, ...]  # the workers it was sent to that were warm then (empty: any worker)


@dataclass
class Retries:
    """Which timeouts count, and where the next run of a submission may go."""

    warmth: Warmth = field(default_factory=Warmth)
    waiting_since: dict[str, float] = field(default_factory=dict)  # student -> when their next run began to wait

    def counts(self, run: Run, ran_on: str) -> bool:
        """Whether a timeout from `run`, which ran on `ran_on`, is the submission's grade."""
        if run.number >= MAX_RUNS:
            return True
        if run.number == 1 or ran_on not in run.warm_when_sent or ran_on not in self.warmth.host:
            return False
        return self.warmth.calm_since(self.warmth.host[ran_on]) <= run.sent_at  # no grader started there meanwhile

    def place(self, student: str, usable: list[str], timed_out_on: set[str], now: float) -> tuple[str, ...] | None:
        """Where the next run of `student` goes: the warm workers (those it did not time out on first), () for
        any worker once it has waited WAIT_SECONDS, or None to wait for a warm one."""
        warm = [address for address in usable if self.warmth.warm(address, now)]
        chosen = [address for address in warm if address not in timed_out_on] or warm
        if chosen:
            self.waiting_since.pop(student, None)
            return tuple(chosen)
        if now - self.waiting_since.setdefault(student, now) >= WAIT_SECONDS:
            self.waiting_since.pop(student, None)
            return ()
        return None
