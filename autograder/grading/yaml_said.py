"""What a YAML file's error says to the person who wrote the file: its path, line and column, not PyYAML's
`in "<unicode string>"` (the file is read as text first), and for a tab, YAML's rule and what to type instead."""
from __future__ import annotations

from pathlib import Path

import yaml


def yaml_error(path: Path, error: yaml.YAMLError) -> str:
    """`path` is not valid YAML, where and why, and what to do: a tab is named as such (the scanner's own text,
    "found character '\\t' that cannot start any token", does not say that tabs may not indent, nor separate a
    value or a comment)."""
    mark = getattr(error, "problem_mark", None)
    problem = str(getattr(error, "problem", "") or "")
    if mark is not None and ("'\\t'" in problem or "tab" in problem):
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}"
        if _indents(mark):
            return (f"{where}: YAML does not allow tabs for indentation; use spaces (replace the tab there with spaces "
                    "lined up with the keys around it) and run again.")
        return (f"{path}: a tab at line {mark.line + 1}, column {mark.column + 1}: YAML does not allow tabs there "
                "(only spaces separate keys, values and comments); replace it with spaces and run again.")
    text = str(error).replace('"<unicode string>"', f'"{path}"')
    return f"{path} is not valid YAML: {text}. Fix the file and run again."


def _indents(mark) -> bool:
    """Whether the tab at `mark` stands where indentation does: only spaces or tabs before it on its line. A tab
    after a colon or before an aligned comment is not indentation, and "for indentation" would send the reader to
    the start of a line that has none."""
    if not mark.buffer:  # a mark of a stream read in pieces has no text to look at: the usual case is indentation
        return True
    start = mark.buffer.rfind("\n", 0, mark.pointer) + 1
    return not mark.buffer[start:mark.pointer].strip(" \t")
