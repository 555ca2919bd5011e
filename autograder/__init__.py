"""Autograder for the attention assignment: course config → checks → sandboxed runner → comparison → results."""
