"""nbgrader's configuration for this course: the repository root is the nbgrader course root.

Run nbgrader from here (`nbgrader generate_assignment w07_attention`, `nbgrader autograde
w07_attention`, the formgrader), or let `autograder release` run it. Source assignments live in
assignments/<assignment>/, one folder per assignment, as course.yaml says. nbgrader's own folders
(release/, submitted/, autograded/, feedback/) and its database (gradebook.db) are created here
and are git-ignored: they hold students' work and grades, not course material.
"""
c = get_config()  # noqa: F821 - nbgrader provides get_config when it reads this file

c.CourseDirectory.source_directory = "assignments"
# CourseDirectory.db_url keeps nbgrader's default, sqlite:///<root>/gradebook.db: beside course.yaml,
# git-ignored. (A relative sqlite URL would follow the working directory instead of the root.)
# Only nbgrader's exchange (release_assignment, collect) needs a course id.
c.CourseDirectory.course_id = "mles-fall-2026"
# Late work follows course.yaml's rule: `autograder export nbgrader` writes the due time, extensions and
# its penalty into the gradebook. nbgrader's own LateSubmissionPlugin keeps its default, penalty_method
# "none", so the penalty is never taken twice (README: Deadlines and late work).
