"""`python -m autograder` and the `autograder` command: the command line.

`grade` says it has started before anything else is imported: loading the
grader (NumPy, nbformat, the store) takes seconds on a busy machine, and a
silent start looks like a hang.
"""
import sys


def main() -> int:
    if sys.argv[1:2] == ["grade"] and not {"-h", "--help"} & set(sys.argv):
        sys.stderr.write("autograder grade: starting (loading the grader)\n")
        sys.stderr.flush()
    from autograder.cli import main as run
    return run()


if __name__ == "__main__":
    sys.exit(main())
