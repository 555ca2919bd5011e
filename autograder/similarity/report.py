"""The similarity report: DIR/pairs.csv, DIR/index.html and one side-by-side page per top pair.

Every student-derived text (ids, paths, code) is shown through `safe` and
Jinja's autoescaping: hand-ins are hostile, and a line of code may carry
markup or bidirectional-override characters meant to mislead the reader.
Pages are self-contained (the histogram is embedded as PNG data).
"""
from __future__ import annotations

import base64
import csv
import io
from dataclasses import dataclass
from pathlib import Path

import jinja2
from matplotlib.figure import Figure

from autograder.outputs.grades_csv import cell
from autograder.similarity.compare import Comparison
from autograder.similarity.index import Pair
from autograder.text import safe

# Under this many students, what many of them write alike cannot be told from a copy: honest pairs of textbook code
# scored 0.60-0.68 in classes of 3 to 8, none in a class of 34.
SMALL_CLASS = 15

TEMPLATES = Path(__file__).parent / "templates"
MAX_SHOWN_LINES = 400  # per function and student on a pair page
STRONG = 0.5  # a shared fingerprint this rare (weight) is highlighted strongly; commoner ones lightly
SHOWN = 0.2  # functions scoring less are left off a pair's page (unless none scores more)
LINKS_SHOWN = 3  # of each group member's pairs at the threshold or more, on the index page


@dataclass(frozen=True)
class Line:
    number: int  # in the compared text; 0 for the gap before a helper
    text: str
    mark: str  # "", "weak" or "strong": how rare the shared code on this line is
    place: str = ""  # where it is in the student's own file: "12", or a notebook's "cell 4:1"


@dataclass(frozen=True)
class Group:
    """Students linked by pairs scoring the threshold or more, directly or through each other.

    core: its strongest pair (score, then functions matching, then fingerprints shared); links: each other
    member's pairs at the threshold or more, strongest first; through: each member without such a pair with
    both of the core pair -> the member its strongest pair is with: it is in the group through that link, not
    for the code the core pair shares (A-B the core, B-C: C is in through B).
    """

    members: list[str]
    best: float
    core: Pair
    links: dict[str, list[Pair]]
    through: dict[str, str]


@dataclass(frozen=True)
class SideBySide:
    function: str
    score: float
    left: list[Line]
    right: list[Line]


def write_report(comparison: Comparison, out: Path, top: int, threshold: float) -> Path:
    """Write pairs.csv, index.html and pairs/NNNN.html (the `top` best pairs); returns index.html's path."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "pairs").mkdir(exist_ok=True)
    write_csv(comparison.pairs, out / "pairs.csv")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, finalize=_shown, trim_blocks=True, lstrip_blocks=True)
    shown = comparison.pairs[:top]
    groups = clusters(comparison.pairs, threshold)
    cited = [*shown, *(p for g in groups for p in [g.core, *(q for m in g.links.values() for q in m[:LINKS_SHOWN])])]
    alike = {(p.a, p.b): lines_alike(comparison, p) for p in cited}
    for rank, pair in enumerate(shown, start=1):
        page = env.get_template("pair.html").render(
            rank=rank, pair=pair, total=len(shown), assignment=comparison.assignment, alike=alike,
            contract=comparison.contract, paths=_paths(comparison, pair), blocks=side_by_side(comparison, pair))
        (out / "pairs" / f"{rank:04d}.html").write_text(page, encoding="utf-8")
    for stale in (out / "pairs").glob("[0-9][0-9][0-9][0-9].html"):  # an earlier run's, with a larger --top
        if stale.stem.isdigit() and int(stale.stem) > len(shown):
            stale.unlink()
    n = len(comparison.students)
    index = env.get_template("index.html").render(
        assignment=comparison.assignment, students=n, all_pairs=n * (n - 1) // 2, pairs=shown,
        sharing=len(comparison.pairs), above=sum(p.score >= threshold for p in comparison.pairs),
        clusters=groups, threshold=threshold, notes=comparison.notes, alike=alike, links_shown=LINKS_SHOWN,
        histogram=histogram(comparison, threshold), contract=comparison.contract, wording=comparison.wording,
        small_class=SMALL_CLASS)
    (out / "index.html").write_text(index, encoding="utf-8")
    return out / "index.html"


def write_csv(pairs: list[Pair], path: Path) -> None:
    """student_a, student_b, score, functions (the matching ones, `;`-separated), best_function (the most alike),
    shared_fingerprints (in it), matching_functions (how many), whole_file (its score), highest score first."""
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["student_a", "student_b", "score", "functions", "best_function", "shared_fingerprints",
                         "matching_functions", "whole_file"])
        for pair in pairs:
            writer.writerow([cell(pair.a), cell(pair.b), f"{pair.score:.4f}",
                             ";".join(f.function for f in pair.functions), pair.best, pair.shared,
                             len(pair.functions), f"{pair.whole:.4f}"])


def clusters(pairs: list[Pair], threshold: float) -> list[Group]:
    """Groups of students linked by pairs scoring `threshold` or more (connected components), largest first.

    A chain counts (A-B and B-C make one group), so each group says how each member is linked (see Group).
    Union-find by hand: a dozen lines, no graph library needed.
    """
    parent: dict[str, str] = {}

    def root(s: str) -> str:
        while parent.setdefault(s, s) != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    linked = [p for p in pairs if p.score >= threshold]
    for pair in linked:
        a, b = root(pair.a), root(pair.b)
        if a != b:
            parent[max(a, b)] = min(a, b)
    members: dict[str, list[str]] = {}
    for student in sorted(parent):
        members.setdefault(root(student), []).append(student)
    strongest = sorted(linked, key=lambda p: (-p.score, -len(p.functions), -p.shared, p.a, p.b))
    links: dict[str, list[Pair]] = {}
    for pair in strongest:
        links.setdefault(pair.a, []).append(pair)
        links.setdefault(pair.b, []).append(pair)
    cores: dict[str, Pair] = {}
    for pair in strongest:
        cores.setdefault(root(pair.a), pair)
    groups = []
    for r, group in members.items():
        core = cores[r]
        others = {m: links[m] for m in group if m not in (core.a, core.b)}
        through = {m: _other(own[0], m) for m, own in others.items()
                   if not {core.a, core.b} <= {_other(p, m) for p in own}}
        groups.append(Group(group, core.score, core, others, through))
    return sorted(groups, key=lambda g: (-len(g.members), -g.best, g.members))


def _other(pair: Pair, student: str) -> str:
    return pair.b if pair.a == student else pair.a


def lines_alike(comparison: Comparison, pair: Pair) -> int:
    """The lines holding code the pair shares in the function its score is (the fewer of the two students'),
    of those shown for it: a fingerprint can span the end of the function and the start of a helper."""
    a, b = comparison.students.index(pair.a), comparison.students.index(pair.b)
    shared = _shared(comparison, pair.best, a, b, pair.same_code)
    counts = []
    for student in (a, b):
        shown = {n for first, last in comparison.codes[student].functions[pair.best].spans
                 for n in range(first, last + 1)}
        counts.append(len(shared_lines(comparison, student, pair.best, shared).keys() & shown))
    return min(counts)


def shared_lines(comparison: Comparison, student: int, function: str, shared: dict[int, float]) -> dict[int, str]:
    """The lines of `student`'s code holding code shared in `function` -> "strong" or "weak", by how rare it is.
    Only lines that hold code: a fingerprint spanning a docstring or comments (the `def` line, then the first
    statement after the released docstring) does not mark the text between, which is no code and may be given."""
    coded = comparison.codes[student].functions[function].coded
    marks: dict[int, str] = {}
    for p in comparison.prints[function][student]:
        if p.hash in shared:
            strength = "strong" if shared[p.hash] >= STRONG else "weak"
            for number in range(p.first_line, p.last_line + 1):
                if number in coded and marks.get(number) != "strong":
                    marks[number] = strength
    return marks


def _shared(comparison: Comparison, function: str, a: int, b: int, every: bool = False) -> dict[int, float]:
    """The fingerprints of some weight students `a` and `b` share in `function` -> their weights; `every`: those of
    no weight too (a pair whose code is the same throughout, common code and all, shows all of it)."""
    weights = comparison.indexes[function].weights
    shared = {p.hash for p in comparison.prints[function][a]} & {p.hash for p in comparison.prints[function][b]}
    return {h: weights[h] for h in shared if weights[h] > 0 or every}


def side_by_side(comparison: Comparison, pair: Pair) -> list[SideBySide]:
    """Each function the pair shares code in (best first), both versions with the shared lines marked."""
    a, b = comparison.students.index(pair.a), comparison.students.index(pair.b)
    ranked = list(pair.by_function.items())  # most alike first
    ranked = [item for item in ranked if item[1] >= SHOWN] or ranked[:1]
    blocks = []
    for function, score in ranked:
        shared = _shared(comparison, function, a, b, pair.same_code)
        blocks.append(SideBySide(function, score, _lines(comparison, a, function, shared),
                                 _lines(comparison, b, function, shared)))
    return blocks


def _lines(comparison: Comparison, student: int, function: str, shared: dict[int, float]) -> list[Line]:
    code = comparison.codes[student]
    marks = shared_lines(comparison, student, function, shared)
    text = code.text.split("\n")
    lines = []
    for first, last in code.functions[function].spans:
        if lines:
            lines.append(Line(0, "", ""))  # a gap between the function and a helper it calls
        lines += [Line(n, text[n - 1], marks.get(n, ""), code.place(n)) for n in range(first, min(last, len(text)) + 1)]
    return lines[:MAX_SHOWN_LINES]


def _paths(comparison: Comparison, pair: Pair) -> tuple[str, str]:
    by_student = {c.student: c.path for c in comparison.codes}
    return by_student[pair.a], by_student[pair.b]


def histogram(comparison: Comparison, threshold: float) -> str:
    """The distribution of pair scores as a PNG data URI: every pair of the class, log-scaled counts."""
    n = len(comparison.students)
    scores = [p.score for p in comparison.pairs]
    zero = n * (n - 1) // 2 - len(scores)
    figure = Figure(figsize=(7, 2.6))  # Figure without pyplot: no global state; Agg draws the PNG
    axes = figure.add_subplot()
    bins = [i / 20 for i in range(21)]
    axes.hist([0.0] * zero + scores, bins=bins, color="#4878a8", log=bool(zero or scores))  # log of no pair: none
    axes.axvline(threshold, color="#a33", linestyle="--", linewidth=1)
    axes.set_xlabel("pair score (best-matching function)")
    axes.set_ylabel("pairs (log scale)")
    axes.set_xlim(0, 1)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _shown(value):
    """Text shown in a page: control characters made visible (autoescape then handles the markup)."""
    return safe(value) if isinstance(value, str) else value
