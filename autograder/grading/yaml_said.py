"""What a YAML file's error says to the person who wrote the file: its path, line and column, not PyYAML's
`in "<unicode string>"` (the file is read as text first), and for a tab, YAML's rule and what to type instead."""
from __future__ import annotations

from pathlib import Path

import yaml


def yaml_error(path: Path, error: yaml.YAMLError) -> str:
    """`path` is not valid YAML, where and why, and what to do: a tab is named as such (the scanner's own text,
    "found character '\\t' that cannot start any token", does not say that tabs may not indent)."""
    mark = getattr(error, "problem_mark", None)
    problem = str(getattr(error, "problem", "") or "")
    if mark is not None and ("'\\t'" in problem or "tab" in problem):
        return (f"{path}, line {mark.line + 1}, column {mark.column + 1}: YAML does not allow tabs for indentation; "
                "use spaces (replace the tab there with spaces lined up with the keys around it) and run again.")
    text = str(error).replace('"<unicode string>"', f'"{path}"')
    return f"{path} is not valid YAML: {text}. Fix the file and run again."
