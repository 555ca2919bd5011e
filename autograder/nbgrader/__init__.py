"""nbgrader: the source notebook, releasing through nbgrader without leaks, and checks inside its kernels.

- source: the source notebook's generated cells, kept in step with the
  reference, the stub and course.yaml;
- leaks: what must never be released, and the scan of a release;
- release: nbgrader's generate_assignment, then the scan;
- inkernel: the checks inside a Jupyter kernel, for the notebook's test cells;
- gradebook, autograded: `export nbgrader`, the course left as nbgrader's autograde leaves it.

nbgrader itself is an extra (grading needs none of it): only release and
gradebook import or run it, and say how to install it when it is missing.
"""
from __future__ import annotations

import importlib.util


def nbgrader_missing() -> bool:
    """Whether nbgrader (the instructors' extra) is absent; found without importing it, which takes seconds."""
    try:
        return importlib.util.find_spec("nbgrader") is None
    except (ImportError, ValueError):
        return True


def install_nbgrader_hint() -> str:
    """The command that installs the extra, named after this package's own distribution."""
    import importlib.metadata  # here: its import costs every command ~20 ms
    names = importlib.metadata.packages_distributions().get("autograder") or []
    return f"pip install '{names[0]}[nbgrader]'" if names else "pip install this package with its [nbgrader] extra"


class ReleaseError(Exception):
    """The assignment cannot be released as it is; the message says what to fix."""
