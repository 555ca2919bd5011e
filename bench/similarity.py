"""Code similarity at scale: `autograder similarity` on classes of 250, 500 and 1,000 hand-ins.

Each student of a built class takes each function of the contract from one
of the benchmark's solutions (tests/fixtures/similarity, the correct
fixtures under tests/fixtures/submissions) drawn at random, so any two
students share a function often: far more shared code than a real class,
which makes the index work hard. Three in four hand-ins are notebooks
(bench/make_class.py), one in four .py files, in a flat folder.

Prints the wall and processor time of the whole command (read, parse,
fingerprint in one process per core, index, score, write the report) for
each size, and, on the largest class, the pairing step through the inverted
index against a peer measured in the same run: the same scores computed for
every pair of students by loops (processor time of each, single-threaded).

    python bench/similarity.py [--sizes 250,500,1000]
"""
from __future__ import annotations

import argparse
import ast
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import numpy as np

from make_class import notebook_from_code

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.grading.discover import find_submissions  # noqa: E402
from autograder.grading.submission import read_submission  # noqa: E402
from autograder.similarity import index  # noqa: E402
from autograder.similarity.compare import compare_class  # noqa: E402

ASSIGNMENT = "w07_attention"
SOURCE_DIR = ROOT / "assignments" / ASSIGNMENT
STUB = SOURCE_DIR / "attention.py"
SOURCES = sorted((ROOT / "tests/fixtures/similarity").glob("*/*.py")) + sorted(
    (ROOT / "tests/fixtures/submissions/correct").glob("*.py"))
HEADER = "import math\n\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\n"


def function_sources() -> dict[str, list[str]]:
    """For each contract function, its text in every source file (with the helpers that file defines)."""
    contract = [n.name for n in ast.parse(STUB.read_text()).body if isinstance(n, ast.FunctionDef)]
    found: dict[str, list[str]] = {name: [] for name in contract}
    for path in SOURCES:
        text = path.read_text()
        tree = ast.parse(text)
        helpers = [ast.get_source_segment(text, n) for n in tree.body
                   if isinstance(n, ast.FunctionDef) and n.name not in contract]
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in contract:
                found[node.name].append("\n\n".join([*helpers, ast.get_source_segment(text, node)]))
    return found


def write_class(folder: Path, students: int, sources: dict[str, list[str]]) -> None:
    rng = random.Random(26)
    folder.mkdir(parents=True)
    for number in range(students):
        code = HEADER + "\n\n" + "\n\n\n".join(rng.choice(options) for options in sources.values()) + "\n"
        if number % 4 == 0:
            (folder / f"s{number:04d}.py").write_text(code)
        else:
            nbformat.write(notebook_from_code(code), folder / f"s{number:04d}.ipynb")


def command_seconds(folder: Path, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of the whole command, its worker processes included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autograder", "similarity", ASSIGNMENT, str(folder), "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def all_pairs_by_loops(comparison) -> dict[tuple[str, str], float]:
    """The peer: every pair's score by intersecting each pair's fingerprint sets, as `index.score_pairs` defines
    it: the most alike function's score or the whole file's (what the pair shares in all its functions, over both
    files' weight), whichever is higher."""
    students = comparison.students
    n = len(students)
    functions, shared_in_all = {}, {}
    file_totals = [0.0] * n
    for idx in comparison.indexes.values():
        totals = [idx.weight(i) for i in range(n)]
        for a in range(n):
            file_totals[a] += totals[a]
            for b in range(a + 1, n):
                shared = sum(idx.weights[h] for h in idx.hashes[a] & idx.hashes[b])
                if shared > 0:
                    key = tuple(sorted((students[a], students[b])))
                    score = float(index.dice(np.array(shared), np.array(totals[a]), np.array(totals[b])))
                    functions[key] = max(functions.get(key, 0.0), score)
                    shared_in_all[key] = shared_in_all.get(key, 0.0) + shared
    position = {student: number for number, student in enumerate(students)}
    best = {}
    for key, shared in shared_in_all.items():
        a, b = (file_totals[position[student]] for student in key)
        whole = float(index.dice(np.array(shared), np.array(a), np.array(b), index.WHOLE_FLOOR))
        best[key] = max(functions[key], whole)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250,500,1000", help="class sizes, comma-separated (default: %(default)s)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    sources = function_sources()
    work = Path(tempfile.mkdtemp(prefix="bench-similarity-"))
    print(f"{len(SOURCES)} source files; each student mixes {len(sources)} functions drawn from them")
    print(f"{'students':>8} {'wall s':>7} {'CPU s':>7} {'CPU ms/student':>15}  (load {os.getloadavg()[0]:.1f})")
    for size in sizes:
        folder = work / f"class{size}"
        write_class(folder, size, sources)
        wall, cpu = command_seconds(folder, work / f"report{size}")
        print(f"{size:>8} {wall:>7.1f} {cpu:>7.1f} {1000 * cpu / size:>15.1f}", flush=True)
    largest = work / f"class{sizes[-1]}"
    found = find_submissions([largest], ASSIGNMENT, "attention", work)
    comparison = compare_class(ASSIGNMENT, [read_submission(f.path, f.student) for f in found], STUB, SOURCE_DIR)
    started = time.process_time()  # processor time: both are single-threaded, and the machine may be loaded
    pairs = index.score_pairs(comparison.students, list(comparison.indexes.values()))
    through_index = time.process_time() - started
    started = time.process_time()
    peer = all_pairs_by_loops(comparison)
    by_loops = time.process_time() - started
    agree = all(abs(peer.get((p.a, p.b), 0) - p.score) < 1e-3 for p in pairs) and len(peer) == len(pairs)
    n = len(comparison.students)
    print(f"pairing {n} students (CPU s): inverted index {through_index:.2f}, every pair by loops {by_loops:.2f} "
          f"(ratio {by_loops / through_index:.1f}x); same scores: {agree}; {len(pairs)} of {n * (n - 1) // 2} pairs "
          "share code")
    print(f"the classes are in {work}")


if __name__ == "__main__":
    main()
