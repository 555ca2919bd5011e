"""An autograder for programming assignments, with student code sandboxed.

The architecture, as a submission travels through it:
- authoring: what an assignment's checks are written against (checks,
  comparisons, inputs, known wrong ideas, the call/reply protocol); no process code;
- grading: course.yaml, the suite, reading and finding submissions, the
  Grader, shrinking and diagnosis, results, the SQLite store, batch grading;
- sandbox: the untrusted side and the grader's conversation with it (protections,
  the zygote and its workers, the wire format, sessions);
- outputs: terminal tables, reports, grades.csv, Gradescope, nbgrader's gradebook;
- nbgrader: the source notebook, releases and their leak scan, in-kernel checks;
- cli: the `autograder` command.
"""
