"""Which libraries a class's hand-ins import, so that the sandboxes import them once instead of once per student.

course.yaml's `preload` is what the instructor knows every hand-in needs.
Students import more: matplotlib to plot their weights, IPython to display
them. A library the zygote lacks is imported again in every child, and
`import matplotlib.pyplot` alone costs about half a second, more than
grading the rest of the file. So `grade` reads the import statements of a
sample of the class before its sandboxes start, and each zygote also imports
the modules that more hand-ins import than there are zygotes to import them in.
A library the sample imports that is not installed here is named to the TA
before grading, with the command that installs it: else each of those hand-ins
fails to load, and the TA learns why one feedback at a time.

What a hand-in names can only make a zygote try to import a module that is
installed for the workers (an import that fails is skipped there, and the
student's own import fails as before); it never runs the hand-in's code, and
no one student can add a module: it takes two hand-ins or more. Nothing here
changes a grade, only where an import's time is spent, unless a library
changes NumPy's or PyTorch's settings as it is imported (README: Sandbox,
One-time costs; `preload_class_imports: false` turns this off).
"""
from __future__ import annotations

import importlib.util
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from autograder.grading.course import Assignment
from autograder.grading.found import Found
from autograder.grading.handin import read_bytes
from autograder.sandbox import notebook_modules

SAMPLE = 100  # hand-ins read: enough to see what a class imports, few enough for a class of thousands
MOST = 12  # modules added at most: a zygote's start grows with each
SCANNED_BYTES = 4 << 20  # of each hand-in: a notebook's images come after its code often enough
# Never imported for a class, besides the standard library (cheap, and mostly imported by the preload
# already) and any `__main__` (a program, not a library): the grader's own package, of which the worker
# has its own copy of what it needs.
NEVER = {"autograder"}

# An import statement, the rest of its line; `_starts_line` says whether it begins one.
_STATEMENT = re.compile(r'(import|from)[ \t]+([^\n"\\;#]+)')
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)
MAX_NAME = 100  # characters of a module's dotted name: what a hand-in names is shown to the TA
# Packages installed under another name than the one imported, among those a class is likely to import.
PIP_NAMES = {"sklearn": "scikit-learn", "skimage": "scikit-image", "cv2": "opencv-python", "PIL": "pillow",
             "yaml": "pyyaml", "bs4": "beautifulsoup4"}


@dataclass(frozen=True)
class ClassImports:
    """Modules to import in each zygote besides the assignment's preload.

    modules: most imported first. imported_by: for each, how many of the `sampled` hand-ins import it.
    """

    modules: tuple[str, ...] = ()
    imported_by: tuple[int, ...] = ()
    sampled: int = 0
    missing: tuple[str, ...] = ()  # top-level packages that two or more sampled hand-ins import, not installed here
    missing_by: tuple[int, ...] = ()

    def notes(self) -> list[str]:
        """Lines for the TA before grading: what each sandbox imports for the class, and what it cannot."""
        notes = []
        if self.modules:
            notes.append(f"preloading what the hand-ins import too: {self._counted(self.modules, self.imported_by)}. "
                         "Each sandbox imports it once, not each hand-in (README: Sandbox, One-time costs); "
                         "`preload_class_imports: false` in course.yaml turns it off")
        if self.missing:
            install = " ".join(PIP_NAMES.get(name, name) for name in self.missing)  # ASCII names (imported_names)
            counted = self._counted(self.missing, self.missing_by)
            notes.append(f"not installed here, but imported by hand-ins: {counted}. "
                         "A hand-in that imports one at its top will not load. If the course allows it, and the name "
                         "is the library meant (a name students made up may be anyone's package on PyPI), install it "
                         f"into the grader's Python (`{sys.executable} -m pip install {install}`) and grade again "
                         "with --force; a name that is a file the students write themselves needs nothing")
        return notes

    def _counted(self, modules: tuple[str, ...], counts: tuple[int, ...]) -> str:
        return ", ".join(f"{module} ({count} of {self.sampled} hand-ins read)"
                         for module, count in zip(modules, counts))


def class_imports(found: Sequence[Found], sandboxes: int, assignment: Assignment) -> ClassImports:
    """The modules more of `found` import than there are `sandboxes`, read from a sample of at most SAMPLE,
    and the packages two or more of the sample import that are not installed here.

    A module pays for its import in the zygotes when more hand-ins import it than there are zygotes to
    import it in; counts in the sample stand for the class in proportion. The assignment's preload, its
    own module, the standard library, `NEVER` and what is not installed are left out; so is every module
    to preload when the assignment says `preload_class_imports: false`. A hand-in that cannot be read
    counts as importing nothing: it is graded, and reported, as before.
    """
    readable = [item for item in found if not item.problem]
    sample = _spread(readable, SAMPLE)
    counts: Counter = Counter()
    tops: Counter = Counter()  # top-level packages, each counted once a hand-in
    for item in sample:
        names = imported_names(_text(item))
        counts.update(names)
        # What a notebook's worker is given where it is missing is not the TA's to install.
        tops.update({name.split(".")[0] for name in names if not notebook_modules.made(name)})
    left_out = {*assignment.preload, assignment.module, *NEVER, *sys.stdlib_module_names}
    missing = [(top, count) for top, count in tops.most_common()
               if count >= 2 and top not in left_out and not top.startswith("__") and not _installed(top)][:MOST]
    if not assignment.preload_class_imports:
        return ClassImports(sampled=len(sample), missing=tuple(m for m, _ in missing),
                            missing_by=tuple(c for _, c in missing))
    # In whole numbers: count of len(sample) stands for count * len(readable) / len(sample) of the class.
    chosen = [(module, count) for module, count in counts.most_common()
              if count >= 2 and count * len(readable) > sandboxes * len(sample)
              and module.split(".")[0] not in left_out and module not in left_out
              and not any(part.startswith("__") for part in module.split(".")) and _installed(module)]
    # A package whose module is chosen is imported with it (matplotlib with matplotlib.pyplot).
    chosen = [(module, count) for module, count in chosen
              if not any(other.startswith(module + ".") for other, _ in chosen)][:MOST]
    return ClassImports(tuple(m for m, _ in chosen), tuple(c for _, c in chosen), len(sample),
                        tuple(m for m, _ in missing), tuple(c for _, c in missing))


def imported_names(text: str) -> set[str]:
    """The modules the import statements in `text` (a .py file or a notebook's JSON) may name.

    `import a.b as c, d` names a.b and d; `from a import b, c` names a, and a.b and a.c, which may be
    modules (`from matplotlib import pyplot`): the zygote finds out, and skips what is not. Relative
    imports name nothing, and neither do names that are not ASCII or longer than MAX_NAME.
    """
    names: set[str] = set()
    for found in _STATEMENT.finditer(text):
        if not _starts_line(text, found.start()):
            continue
        kind, rest = found.groups()
        if kind == "import":
            names.update(_first_words(rest))
            continue
        base, _, imported = rest.partition(" import ")
        base = base.strip()
        if not _DOTTED.fullmatch(base):
            continue
        names.add(base)
        names.update(f"{base}.{name}" for name in _first_words(imported.strip(" \t()")) if "." not in name)
    return {name for name in names if len(name) <= MAX_NAME}


def _starts_line(text: str, at: int) -> bool:
    """Whether only blanks stand between `at` and the start of its line: of the text, of a .py file's
    line, or of a line in a notebook's JSON, which starts after a quote or after an escaped newline."""
    while at > 0 and text[at - 1] in " \t":
        at -= 1
    return at == 0 or text.endswith(("\n", '"', "\\n"), 0, at)


def _first_words(listed: str) -> list[str]:
    """The dotted names in `a.b as c, d` (each part's first word), those that are names."""
    words = (part.split()[0] for part in listed.split(",") if part.split())
    return [word for word in words if _DOTTED.fullmatch(word)]


def _installed(module: str) -> bool:
    """Whether the module's top package is installed here, where the workers' Python usually is too: a
    helper a hand-in writes itself is not, and is not worth a zygote's try. Found, not imported."""
    try:
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def _text(item: Found) -> str:
    content = read_bytes(item.path, item.root)
    return content.data[:SCANNED_BYTES].decode("utf-8", errors="replace") if not content.error else ""


def _spread(items: list, most: int) -> list:
    """At most `most` of `items`, drawn at random but the same for the same class (a fixed stride would see
    only every other hand-in of a class whose ids alternate, say, between two sections)."""
    if len(items) <= most:
        return items
    return [items[index] for index in sorted(random.Random(len(items)).sample(range(len(items)), most))]
