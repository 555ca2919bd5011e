"""nbgrader: the source notebook, releasing through nbgrader without leaks, and checks inside its kernels.

- source: the source notebook's generated cells, kept in step with the
  reference, the stub and course.yaml;
- leaks: what must never be released, and the scan of a release;
- release: nbgrader's generate_assignment, then the scan;
- inkernel: the checks inside a Jupyter kernel, for the notebook's test cells.
"""


class ReleaseError(Exception):
    """The assignment cannot be released as it is; the message says what to fix."""
