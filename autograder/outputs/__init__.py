"""What the grades become: terminal tables, reports, grades.csv, Gradescope's files, nbgrader's gradebook.

Everything here reads stored results (autograder.grading.store) and never
regrades, except the Gradescope path, which grades the one file Gradescope
hands it.
"""


class ExportError(Exception):
    """An export could not be written; the message says what to do next."""
