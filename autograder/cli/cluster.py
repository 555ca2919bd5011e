"""Commands for clusters of graders: slurm (a locked scheduler and worker jobs kept alive on Slurm).

Dask is an extra: the options are declared here, and autograder.cluster.slurm (which imports Dask) only when
the command runs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.cli import options
from autograder.cluster import ClusterError, install_dask_hint


def add_commands(commands) -> None:
    slurm = commands.add_parser("slurm", help="start a locked Dask scheduler here and keep N Slurm jobs of graders "
                                              "alive, for `grade --cluster` (README: Grading on a cluster)")
    add_options(slurm)
    slurm.set_defaults(run=_slurm)


def add_options(command: argparse.ArgumentParser) -> None:
    """`autograder slurm`'s options, each with what it is for."""
    command.add_argument("--venv", type=Path, required=True,
                         help="the virtual environment that holds this package with its [torch,dask] extras, at the "
                              "same path on every node (the worker jobs activate it)")
    command.add_argument("--python", default="",
                         help="the Python the workers run (default: VENV/bin/python); set it when the nodes see the "
                              "environment at another path")
    command.add_argument("--jobs", type=options.count, default=2, help="worker jobs to keep alive (default: 2)")
    command.add_argument("--cores", type=int, default=4, help="cores per job (default: 4)")
    command.add_argument("--processes", type=int, default=0,
                         help="worker processes per job, one thread each (default: one per core)")
    command.add_argument("--memory", default="8GB",
                         help="memory per job (default: 8GB; each worker needs ~1 GB with PyTorch loaded)")
    command.add_argument("--walltime", default="04:00:00", help="wall time per job (default: 04:00:00); a job that "
                                                                  "runs out is replaced")
    command.add_argument("--queue", default="", help="Slurm partition (sbatch -p; default: the cluster's default)")
    command.add_argument("--account", default="", help="Slurm account to charge (sbatch -A; default: yours)")
    command.add_argument("--port", type=int, default=8786, help="the scheduler's port (default: 8786)")
    command.add_argument("--host", default="", help="the address the scheduler listens on (default: this machine's "
                                                    "address on its network, which the nodes reach it by)")
    command.add_argument("--directive", action="append", default=[], metavar="OPTION",
                         help="one more #SBATCH option for the worker jobs, e.g. --directive=--constraint=bwrap "
                              "(repeatable)")
    command.add_argument("--state", type=Path, default=Path("graders"),
                         help="folder for the certificates, the scheduler's address and the grade command, on the "
                              "shared file system (default: ./graders); made readable by you alone")


def _fields(args) -> dict:
    """The fields of autograder.cluster.slurm.SlurmGraders, from the options."""
    if args.jobs < 1 or args.cores < 1 or args.processes < 0:
        raise ClusterError("--jobs and --cores must be at least 1 (and --processes at least 0); run again")
    return dict(jobs=args.jobs, cores=args.cores, processes=args.processes or args.cores, memory=args.memory,
                walltime=args.walltime, venv=args.venv.resolve(), state=args.state.resolve(), python=args.python,
                queue=args.queue, account=args.account, port=args.port, host=args.host,
                extra_directives=tuple(args.directive))



def _slurm(args) -> int:
    try:
        from autograder.cluster.slurm import SlurmGraders, run
    except ModuleNotFoundError as error:
        raise ClusterError(f"`autograder slurm` needs Dask and dask-jobqueue, which are not installed here ({error}). "
                           f"Install them with `{install_dask_hint('dask,slurm')}`, then run again") from None
    run(SlurmGraders(**_fields(args)), lambda text: print(text, file=sys.stderr, flush=True))
    return 0
