"""`python -m autograder` and the `autograder` command: the command line.

`grade` says it has started before anything else is imported: loading the
grader (NumPy, the checks, the store) takes a second or more on a busy machine, and a
silent start looks like a hang. Once it has finished, it leaves without the
interpreter's teardown, which with PyTorch loaded takes most of a second and
has nothing left to do: the results are committed and the store, the
sandboxes and the grading processes are closed by then.
"""
import os
import sys


def main() -> int:
    grading = sys.argv[1:2] == ["grade"] and not {"-h", "--help"} & set(sys.argv)
    if grading:
        sys.stderr.write("autograder grade: starting (loading the grader)\n")
        sys.stderr.flush()
    from autograder.cli import main as run
    code = run()
    # --cluster leaves Dask's own exit handlers to run; every other `grade` closes what it opened.
    if grading and not any(arg == "--cluster" or arg.startswith("--cluster=") for arg in sys.argv):
        _leave(code)
    return code


def _leave(code: int) -> None:
    """Exit now with `code`, after flushing what was printed (a reader that has gone is no error then)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
