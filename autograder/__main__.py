"""`python -m autograder` runs the command line."""
import sys

from autograder.cli import main

sys.exit(main())
