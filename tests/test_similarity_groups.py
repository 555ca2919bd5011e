"""What a pair's score rests on, and how each student of a group is linked to it.

A group is built by chaining (A-B and B-C make one group), so a student who
shares one function with one member joins a group of copies of a whole file.
The report says, for each pair, how many functions match and how much code
the score rests on, and marks in a group each member linked only through
another, not directly with both students of the group's strongest pair.
"""
from __future__ import annotations

import csv
import re

import pytest
from test_similarity import BENCHMARK, CLASS, CONTRACT, SOURCE_DIR, STUB, run_similarity

from autograder.grading.submission import read_submission
from autograder.similarity import index
from autograder.similarity.compare import compare_class
from autograder.similarity.report import clusters

ORIGINAL = BENCHMARK / "originals" / "i21_masked_fill_numpy.py"  # p01_copies_softmax before it took i02's softmax


def _chain(folder):
    """Independent solutions, p01 (i21's code with i02_batch_loops' softmax) and i21 as first written; and three
    copies of one solution (i15 and two renamings of it): a chain i21 - p01 - i02 and a group of three."""
    folder.mkdir()
    for path in sorted(CLASS.glob("i*.py")):
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "i21_masked_fill_numpy.py").write_bytes(ORIGINAL.read_bytes())
    (folder / "p01_copies_softmax.py").write_bytes((CLASS / "p01_copies_softmax.py").read_bytes())
    text = (CLASS / "i15_nan_tricks.py").read_text()
    (folder / "copy_one.py").write_text(text.replace("scale", "factor"))
    (folder / "copy_two.py").write_text(text.replace("scale", "s").replace("# ", "# note: "))
    return folder


def test_a_member_linked_only_through_another_is_marked(tmp_path):
    folder = _chain(tmp_path / "handins")
    submissions = [read_submission(p) for p in sorted(folder.iterdir())]
    comparison = compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1)
    groups = {tuple(g.members): g for g in clusters(comparison.pairs, 0.6)}
    # i03 and i04 write `attention` as the same three calls, which most of the class's attention functions now are
    # too (each name assigned again is a temporary): no longer an independent pair over the threshold.
    assert set(groups) == {("i02_batch_loops", "i21_masked_fill_numpy", "p01_copies_softmax"),
                           ("copy_one", "copy_two", "i15_nan_tricks")}, list(groups)
    chain = groups["i02_batch_loops", "i21_masked_fill_numpy", "p01_copies_softmax"]
    assert (chain.core.a, chain.core.b) == ("i21_masked_fill_numpy", "p01_copies_softmax")  # most functions alike
    assert chain.through == {"i02_batch_loops": "p01_copies_softmax"}
    assert [f.function for f in chain.links["i02_batch_loops"][0].functions] == ["softmax"]
    copies = groups["copy_one", "copy_two", "i15_nan_tricks"]
    assert copies.through == {}  # each of the three directly with both others


@pytest.mark.slow  # the whole command in a subprocess
def test_each_pair_says_what_its_score_rests_on(tmp_path):
    folder = _chain(tmp_path / "handins")
    out = tmp_path / "out"
    done = run_similarity(str(folder), "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = {(r["student_a"], r["student_b"]): r for r in csv.DictReader((out / "pairs.csv").read_text().splitlines())}
    one = rows["i02_batch_loops", "p01_copies_softmax"]
    assert (one["score"], one["best_function"], one["matching_functions"]) == ("1.0000", "softmax", "1")
    whole = rows["i21_masked_fill_numpy", "p01_copies_softmax"]
    assert int(whole["matching_functions"]) >= 5 and int(whole["shared_fingerprints"]) > 0
    assert all(int(r["shared_fingerprints"]) > 0 and r["best_function"] in CONTRACT for r in rows.values())

    page = (out / "index.html").read_text()
    assert "linked only through p01_copies_softmax</span> i02_batch_loops: 1.00 with p01_copies_softmax" in page
    lines = re.search(r"1\.00 with p01_copies_softmax \(1 of 9 functions match, the whole file 0\.\d\d; "
                      r"the most alike function, softmax: (\d+) lines alike, \d+ fingerprints\)", page)
    assert lines and 5 <= int(lines.group(1)) <= 30, page[page.index("Groups"):page.index("Top pairs")]
    assert "strongest pair: i21_masked_fill_numpy – p01_copies_softmax, 1.00 (" in page
    assert page.count('<span class="through">') == 2  # the legend, and i02 (none in the group of three copies)
    rank = list(rows).index(("i02_batch_loops", "p01_copies_softmax")) + 1
    pair_page = (out / "pairs" / f"{rank:04d}.html").read_text()
    assert re.search(r"The score rests on:</b> 1 of 9 functions match, the whole file 0\.\d\d; "
                     r"the most alike function, softmax: \d+ lines alike", pair_page)


RING = BENCHMARK / "ring"  # source.py and four copies of it, each disguised in other ways


def test_copies_of_one_source_each_disguised_otherwise_pair_with_it(tmp_path):
    # Five students hold the code all of them kept: more than a tenth of this class, and never exactly the same
    # five for a block of it (each disguise broke other lines), so it had weighed nothing: the while-loop copy
    # (0.69) fell under an independent pair (0.70), and the copy with every disguise was not listed at all.
    folder = tmp_path / "handins"
    folder.mkdir()
    for path in [*sorted(CLASS.glob("i*.py")), *sorted(RING.glob("*.py"))]:
        (folder / path.name).write_bytes(path.read_bytes())
    comparison = compare_class("w07_attention", [read_submission(p) for p in sorted(folder.iterdir())], STUB,
                               SOURCE_DIR, jobs=1)
    ring = {path.stem for path in RING.glob("*.py")}
    with_source = {(pair.a if pair.b == "source" else pair.b): pair.score for pair in comparison.pairs
                   if "source" in (pair.a, pair.b)}
    honest = max(pair.score for pair in comparison.pairs if not {pair.a, pair.b} & ring)
    assert all(with_source[copy] > honest for copy in ("matmul_variants", "while_loops", "literals")), (
        with_source, honest)
    assert with_source.get("every_disguise", 0) > 0.3, with_source


def _common_ways(folder, students: int, ways: int, seed: int):
    """A class whose students each write every function in one of `ways` common ways: the benchmark's independent
    solutions' versions of it (with their helpers), so that any two students share the way of a function or two."""
    import ast
    import random

    contract = ["score", "additive_score", "causal_mask", "padding_mask", "apply_mask", "softmax", "context",
                "attention", "attention_torch"]
    found: dict[str, list[str]] = {f: [] for f in contract}
    for path in sorted(CLASS.glob("i*.py")):
        text = path.read_text()
        body = ast.parse(text).body
        helpers = [ast.get_source_segment(text, n) for n in body
                   if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name not in contract]
        for node in body:
            if isinstance(node, ast.FunctionDef) and node.name in contract:
                found[node.name].append("\n\n".join([*helpers, ast.get_source_segment(text, node)]))
    draw = random.Random(seed)
    options = {f: draw.sample(found[f], ways) for f in contract}
    folder.mkdir()
    header = "import math\n\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\n\n\n"
    for student in range(students):
        (folder / f"s{student:03d}.py").write_text(header + "\n\n\n".join(draw.choice(options[f]) for f in contract))
    return folder


def test_students_who_write_functions_the_same_common_ways_form_no_ring(tmp_path, monkeypatch):
    # Linked pair by pair, 52 of such a class of 60 had made one ring, and pairs sharing one function's common way
    # (8 of the class wrote it so) scored 1.00: 132 pairs of 0.6 or more became 564.
    folder = _common_ways(tmp_path / "handins", 60, 8, 1)
    submissions = [read_submission(p) for p in sorted(folder.iterdir())]
    with_rings = compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1).pairs
    monkeypatch.setattr(index, "_rings", lambda *_: {})
    without = compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1).pairs
    assert [(p.a, p.b, round(p.score, 6)) for p in with_rings] == [(p.a, p.b, round(p.score, 6)) for p in without]
