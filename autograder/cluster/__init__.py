"""Grading on a Dask cluster (`autograder grade --cluster ADDRESS`), for classes that outgrow one machine.

The driver (the machine running the command) finds the submissions, keeps the
results store and sends each submission's bytes to the cluster as a task
(`driver`); each Dask worker keeps a grader warm, with the course private to
it and a sandbox per thread (`warm`); `connect` reaches a running
scheduler or starts a local cluster. Dask is an extra: this module imports
none of it, and only the command line imports the rest, when `--cluster` is given.
"""
from __future__ import annotations


class ClusterError(Exception):
    """The cluster could not be reached or used; the message says what happened and what to do."""


def _distribution() -> str:
    """This package's distribution name, as pip knows it ("" where it is not installed as one)."""
    import importlib.metadata  # here: its import costs every command ~20 ms
    names = importlib.metadata.packages_distributions().get(__name__.split(".")[0]) or []
    return names[0] if names else ""


def installed_version() -> str:
    """This machine's installed version of the package ("?" where it is not installed as one)."""
    name = _distribution()
    import importlib.metadata
    return importlib.metadata.version(name) if name else "?"


def install_dask_hint(extras: str = "dask") -> str:
    """The command that installs `extras` (e.g. "dask,slurm"), named after this package's own distribution."""
    name = _distribution()
    return f"pip install '{name}[{extras}]'" if name else f"pip install this package with its [{extras}] extras"
