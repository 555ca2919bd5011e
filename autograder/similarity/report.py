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

TEMPLATES = Path(__file__).parent / "templates"
MAX_SHOWN_LINES = 400  # per function and student on a pair page
STRONG = 0.5  # a shared fingerprint this rare (weight) is highlighted strongly; commoner ones lightly
SHOWN = 0.2  # functions scoring less are left off a pair's page (unless none scores more)


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    mark: str  # "", "weak" or "strong": how rare the shared code on this line is


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
    for rank, pair in enumerate(shown, start=1):
        page = env.get_template("pair.html").render(
            rank=rank, pair=pair, total=len(shown), assignment=comparison.assignment,
            paths=_paths(comparison, pair), blocks=side_by_side(comparison, pair))
        (out / "pairs" / f"{rank:04d}.html").write_text(page, encoding="utf-8")
    for stale in (out / "pairs").glob("[0-9][0-9][0-9][0-9].html"):  # an earlier run's, with a larger --top
        if stale.stem.isdigit() and int(stale.stem) > len(shown):
            stale.unlink()
    n = len(comparison.students)
    index = env.get_template("index.html").render(
        assignment=comparison.assignment, students=n, all_pairs=n * (n - 1) // 2, pairs=shown,
        sharing=len(comparison.pairs), above=sum(p.score >= threshold for p in comparison.pairs),
        clusters=clusters(comparison.pairs, threshold), threshold=threshold, notes=comparison.notes,
        histogram=histogram(comparison, threshold), contract=comparison.contract)
    (out / "index.html").write_text(index, encoding="utf-8")
    return out / "index.html"


def write_csv(pairs: list[Pair], path: Path) -> None:
    """student_a, student_b, score, functions (the matching ones, `;`-separated), highest score first."""
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["student_a", "student_b", "score", "functions"])
        for pair in pairs:
            writer.writerow([cell(pair.a), cell(pair.b), f"{pair.score:.4f}",
                             ";".join(f.function for f in pair.functions)])


def clusters(pairs: list[Pair], threshold: float) -> list[tuple[list[str], float]]:
    """Groups of students linked by pairs scoring `threshold` or more (connected components), largest first.

    Each group comes with its highest pair score. Union-find by hand: a dozen lines, no graph library needed.
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
    groups: dict[str, list[str]] = {}
    for student in sorted(parent):
        groups.setdefault(root(student), []).append(student)
    best: dict[str, float] = {}
    for pair in linked:
        best[root(pair.a)] = max(best.get(root(pair.a), 0.0), pair.score)
    return sorted(((members, best[r]) for r, members in groups.items()), key=lambda g: (-len(g[0]), -g[1], g[0]))


def side_by_side(comparison: Comparison, pair: Pair) -> list[SideBySide]:
    """Each function the pair shares code in (best first), both versions with the shared lines marked."""
    a, b = comparison.students.index(pair.a), comparison.students.index(pair.b)
    ranked = sorted(pair.by_function.items(), key=lambda item: (-item[1], item[0]))
    ranked = [item for item in ranked if item[1] >= SHOWN] or ranked[:1]
    blocks = []
    for function, score in ranked:
        weights = comparison.indexes[function].weights
        shared = {p.hash for p in comparison.prints[function][a]} & {p.hash for p in comparison.prints[function][b]}
        shared = {h: weights[h] for h in shared if weights[h] > 0}
        blocks.append(SideBySide(function, score, _lines(comparison, a, function, shared),
                                 _lines(comparison, b, function, shared)))
    return blocks


def _lines(comparison: Comparison, student: int, function: str, shared: dict[int, float]) -> list[Line]:
    code = comparison.codes[student]
    marks: dict[int, str] = {}
    for p in comparison.prints[function][student]:
        if p.hash in shared:
            strength = "strong" if shared[p.hash] >= STRONG else "weak"
            for number in range(p.first_line, p.last_line + 1):
                if marks.get(number) != "strong":
                    marks[number] = strength
    text = code.text.split("\n")
    lines = []
    for first, last in code.functions[function].spans:
        if lines:
            lines.append(Line(0, "", ""))  # a gap between the function and a helper it calls
        lines += [Line(n, text[n - 1], marks.get(n, "")) for n in range(first, min(last, len(text)) + 1)]
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
    axes.hist([0.0] * zero + scores, bins=bins, color="#4878a8", log=True)
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
