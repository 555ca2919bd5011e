"""Options several commands share, and where their defaults come from."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from autograder.grading.batch import default_db
from autograder.grading.course import find_course, load_course
from autograder.grading.station import KINDS, REQUESTS

ASSIGNMENT_HELP = "assignment name from course.yaml"
_NUMBER = re.compile(r"-\d+$|-\d*\.\d+$")  # argparse reads these as values, not options, here


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors say how to pass a word that starts with '-' as a value: a student id can
    (`-x.py` handed in gives `-x`), argparse reads it as an unknown option, and its own message names only what is
    then missing (`the following arguments are required: student`)."""

    def parse_known_args(self, args=None, namespace=None):
        self.words = list(sys.argv[1:] if args is None else args)  # for error(): what this parser was given
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        super().error(message + dashed_hint(self, getattr(self, "words", [])))


def dashed_hint(command: argparse.ArgumentParser, words: list[str]) -> str:
    """What to write instead, where `words` hold one that starts with '-' and is no option (`-x`): "" elsewhere."""
    given = words[:words.index("--")] if "--" in words else words
    dashed = [word for word in given if word.startswith("-") and not word.startswith("--") and word != "-"
              and not _NUMBER.match(word) and word.split("=")[0] not in command._option_string_actions]
    if not dashed:
        return ""
    where = words.index(dashed[0])
    before = _option(command, words[where - 1]) if where else None
    if before is not None and before.nargs != 0 and "=" not in words[where - 1]:
        fix = f"join it to its option: `{words[where - 1]}={dashed[0]}`"
    elif any(isinstance(action, argparse._SubParsersAction) for action in command._actions):
        fix = "write `--` before it, after every option"
    else:
        fix = f"write `--` before it, after every option: `{command.prog} {' '.join(_dashed_last(command, words))}`"
    return (f". {dashed[0]} was read as an option, as every word starting with '-' is; if it is a student id (a file "
            f"named {dashed[0]}.py gives it), {fix}")


def _option(command: argparse.ArgumentParser, word: str) -> argparse.Action | None:
    """The option `word` names (`--db`, `--db=x`, or an abbreviation argparse takes, `--js`); None for a value."""
    name = word.split("=")[0]
    if not name.startswith("--"):
        return None
    matches = {action for option, action in command._option_string_actions.items() if option.startswith(name)}
    return command._option_string_actions.get(name) or (matches.pop() if len(matches) == 1 else None)


def _dashed_last(command: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """`words` with their options first, then `--`, then the rest in their order: after `--` every word is a value."""
    options, values, taking = [], [], False
    for word in words:
        action = _option(command, word)
        if action is not None:
            options.append(word)
            taking = "=" not in word and action.nargs != 0
        elif taking and not word.startswith("-"):
            options.append(word)
            taking = False
        else:
            values.append(word)
    return options + ["--"] + values


def course(command: argparse.ArgumentParser) -> None:
    command.add_argument("--course", type=Path, help="course.yaml to use (default: the nearest one)")


def sandbox(command: argparse.ArgumentParser) -> None:
    weaker = [kind.name for kind in KINDS if not kind.strong_isolation]
    command.add_argument("--sandbox", choices=REQUESTS, default="auto",
                         help=f"auto uses the first of {', '.join(kind.name for kind in KINDS)} that works here "
                              f"(weaker: {', '.join(weaker)})")


def stored_assignment(command: argparse.ArgumentParser, help: str) -> None:
    """The assignment of stored results: --assignment, or named first as `grade` takes it (`report ASSIGNMENT`);
    main() takes the one given (`named_assignment`)."""
    command.add_argument("named_assignment", nargs="?", metavar="assignment", help=f"{help} (or --assignment)")
    command.add_argument("--assignment", help=help)


def named_assignment(args: argparse.Namespace) -> str | None:
    """The assignment named first or with --assignment (stored_assignment); an error where the two differ."""
    named, option = getattr(args, "named_assignment", None), getattr(args, "assignment", None)
    if named and option and named != option:
        raise argparse.ArgumentTypeError(f"two assignments were given, {named} and --assignment {option}; give one")
    return named or option


def results_db(command: argparse.ArgumentParser) -> None:
    command.add_argument("--db", type=database_file, help="results database (default: grades.db beside course.yaml)")


def database_file(text: str) -> Path:
    """An argparse type: --db's path, which must not be a folder (SQLite's own error said only that it could not be
    opened, and that it must be writable, which a TA's folder is)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; --db takes the database's file: pass a file path, "
                                         f"e.g. {path / 'grades.db'} (created by `grade` if it is not there)")
    return path


def db_path(args) -> Path:
    """--db, or grades.db beside the course's course.yaml."""
    return args.db or default_db(load_course(args.course or find_course()))


def count(text: str) -> int:
    """An argparse type: a whole number of 1 or more (`--jobs 0` or `-3` is a typo, not a request)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give 1 or more") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1; give 1 or more, or leave the option out for "
                                         "the default")
    return value
