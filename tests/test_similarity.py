"""The code-similarity report: the benchmark's copies found, independent work left alone, output stable and safe.

The benchmark (tests/fixtures/similarity/manifest.yaml) is a class of
independent solutions in different styles, disguised copies of some of
them and copies of exactly one function; every file scores 100/100.
"""
from __future__ import annotations

import ast
import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml

from autograder.grading.results import SubmissionResult
from autograder.grading.store import Store
from autograder.grading.submission import read_submission
from autograder.similarity.code import functions_of, parse_pieces
from autograder.similarity.compare import compare_class
from autograder.similarity.report import lines_alike, shared_lines

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT / "tests" / "fixtures" / "similarity"
CLASS = BENCHMARK / "class"
SOURCE_DIR = ROOT / "assignments" / "w07_attention"
STUB = SOURCE_DIR / "attention.py"
CONTRACT = [n.name for n in ast.parse(STUB.read_text()).body if isinstance(n, ast.FunctionDef)]


def true_pairs() -> dict[tuple[str, str], list[str] | str]:
    """(student a, student b) sorted -> the functions copied ("all" for the whole file)."""
    copies = yaml.safe_load((BENCHMARK / "manifest.yaml").read_text())["copies"]
    return {tuple(sorted((copy, source))): functions for copy, sources in copies.items()
            for source, functions in sources.items()}


@pytest.fixture(scope="module")
def benchmark():
    submissions = [read_submission(p) for p in sorted(CLASS.iterdir())]
    return compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1)


def run_similarity(*args: str, seed: str = "0") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    return subprocess.run([sys.executable, "-m", "autograder", "similarity", "w07_attention", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def test_benchmark_copies_rank_first(benchmark):
    truth = true_pairs()
    top = {(p.a, p.b) for p in benchmark.pairs[:len(truth)]}
    precision = len(top & set(truth)) / len(truth)
    assert precision >= 0.95, [(p.a, p.b, p.score) for p in benchmark.pairs[:len(truth) + 3]]


def test_benchmark_independent_pairs_stay_below_every_copy(benchmark):
    truth = true_pairs()
    scores = {(p.a, p.b): p.score for p in benchmark.pairs}
    lowest_true = min(scores.get(pair, 0.0) for pair in truth)
    above = [(p.a, p.b, p.score) for p in benchmark.pairs if (p.a, p.b) not in truth and p.score >= lowest_true]
    assert len(above) <= 1, (lowest_true, above)


def test_every_partial_copy_is_found_with_its_functions_named(benchmark):
    """Found among the top pairs, with copied functions named and no other (a copied one-liner that half the
    class writes alike may go unnamed: it is no evidence)."""
    truth = true_pairs()
    top = {(p.a, p.b): p for p in benchmark.pairs[:len(truth)]}
    for pair, functions in truth.items():
        if functions == "all":
            continue
        named = {f.function for f in top[pair].functions}
        assert named and named <= set(functions), (pair, functions, named)
        if len(functions) == 1:  # a one-function copy: the function it took is the best match
            assert top[pair].functions[0].function == functions[0], (pair, top[pair].functions)


def test_copies_with_del_or_statements_that_only_read_match_every_function(benchmark):
    """d14 puts each result in a temporary and `del`s names before returning it, d15 adds `(a, b)`, `x.shape`,
    `a[0]`, `...` or `pass`: before, 7 of 9 functions matched, from 0.51 to 0.95, and none of the copy found by
    trying the grader from outside."""
    pairs = {(p.a, p.b): p for p in benchmark.pairs}
    for pair in (("d14_del_everywhere", "i14_guard_first"), ("d15_bare_reads", "i18_one_liners")):
        functions = {f.function: f.score for f in pairs[pair].functions}
        assert sorted(functions) == sorted(CONTRACT) and min(functions.values()) > 0.99, (pair, functions)


def test_renaming_reordering_dead_code_and_equivalents_give_the_same_tokens():
    original = """
import numpy as np
def softmax(S):
    S = np.asarray(S, dtype=float)
    top = S.max(axis=-1, keepdims=True)
    e = np.exp(S - top)
    total = e.sum(axis=-1, keepdims=True)
    return e / total
"""
    disguised = '''
import numpy
def softmax(scores):
    """Softmax, my own."""
    # convert
    scores = numpy.asarray(scores, dtype=float)
    unused = scores.shape
    biggest = scores.max(keepdims=True, axis=-1)
    if False:
        print("debug")
    exps = numpy.exp(scores - biggest)
    den = exps.sum(keepdims=True, axis=-1)
    return exps / den
    print("never")
'''
    different = original.replace("np.exp(S - top)", "np.exp(S)")
    tokens = [[t.text for t in functions_of(parse_pieces([code])[1], ["softmax"])["softmax"].tokens]
              for code in (original, disguised, different)]
    assert tokens[0] == tokens[1]
    assert tokens[0] != tokens[2]


def test_everyday_equivalent_spellings_give_the_same_tokens():
    """A line-for-line copy with a NumPy function for each method, float64 spelled another way and a default as a
    conditional expression scored 0.50, under an honest pair."""
    original = """
import numpy as np
def attention(Q, K, V, scale=None):
    if scale is None:
        scale = 1.0 / np.sqrt(Q.shape[-1])
    S = np.asarray(Q, dtype=float) @ K.swapaxes(-1, -2) * scale
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return A.astype(float) @ V, A
"""
    respelled = """
import numpy as np
def attention(Q, K, V, scale=None):
    scale = 1.0 / np.sqrt(Q.shape[-1]) if scale is None else scale
    S = np.asarray(Q, dtype=np.float64) @ np.swapaxes(K, -1, -2) * scale
    e = np.exp(S - np.max(S, axis=-1, keepdims=True))
    A = e / np.sum(e, axis=-1, keepdims=True)
    return A.astype(np.double) @ V, A
"""
    mirrored = respelled.replace("scale = 1.0 / np.sqrt(Q.shape[-1]) if scale is None else scale",
                                 "scale = scale if scale is not None else 1.0 / np.sqrt(Q.shape[-1])")
    different = original.replace("dtype=float", "dtype=np.float32")
    texts = [_texts(code, "attention") for code in (original, respelled, mirrored, different)]
    assert texts[0] == texts[1] == texts[2]
    assert texts[0] != texts[3]


def test_a_star_import_is_read_as_the_names_it_binds():
    """A copy that swapped `import numpy as np` for `from numpy import *` and dropped each `np.` had matched none of
    its source's functions (0.22, under an honest pair's 0.54); `from numpy import inf` was not infinity. A name the
    file binds itself stays its own: a local `exp` is no NumPy function."""
    original = """
import numpy as np
def softmax(S):
    S = np.where(np.isnan(S), -np.inf, S)
    e = np.exp(S - np.max(S, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
"""
    starred = original.replace("import numpy as np", "from numpy import *").replace("np.", "")
    named = original.replace("import numpy as np", "from numpy import where, isnan, inf, exp, max, sum").replace(
        "np.", "")
    shadowed = starred.replace("def softmax(S):", "def softmax(S):\n    exp = abs")
    texts = [_texts(code, "softmax") for code in (original, starred, named, shadowed)]
    assert texts[0] == texts[1] == texts[2]
    assert texts[3] != texts[0]


def test_reordered_independent_statements_give_the_same_tokens():
    first = "def f(Q, K):\n    a = g(Q)\n    b = h(K)\n    return a @ b\n"
    second = "def f(Q, K):\n    b = h(K)\n    a = g(Q)\n    return a @ b\n"
    dependent = "def f(Q, K):\n    a = g(Q)\n    a = a + 1\n    return a\n"
    swapped = "def f(Q, K):\n    a = a + 1\n    a = g(Q)\n    return a\n"
    texts = [[t.text for t in functions_of(parse_pieces([c])[1], ["f"])["f"].tokens]
             for c in (first, second, dependent, swapped)]
    assert texts[0] == texts[1]
    assert texts[2] != texts[3]  # statements that depend on each other keep their order


def _texts(code: str, function: str = "f") -> list[str]:
    return [t.text for t in functions_of(parse_pieces([code])[1], [function])[function].tokens]


def test_an_expression_split_into_temporaries_gives_the_same_tokens():
    merged = """
import numpy as np
def f(Q, K, scale):
    return (Q @ np.swapaxes(K, -1, -2)) * scale
"""
    split = """
import numpy as np
def f(Q, K, scale):
    kt = np.swapaxes(K, -1, -2)
    raw = np.matmul(Q, kt)   # the product first
    out = raw * scale
    return out
"""
    assert _texts(split) == _texts(merged)
    in_helper = """
import numpy as np
def _last_two_swapped(X):
    return np.swapaxes(X, -1, -2)
def f(Q, K, scale):
    return (Q @ _last_two_swapped(K)) * scale
"""
    in_helper_split = """
import numpy as np
def _last_two_swapped(X):
    swapped = np.swapaxes(X, -1, -2)
    return swapped
def f(Q, K, scale):
    factor = scale
    return factor * np.matmul(Q, _last_two_swapped(K))
"""
    assert _texts(in_helper_split) == _texts(in_helper)  # a contract function's helpers are normalised alike
    assert _texts(split.replace("raw * scale", "raw + scale")) != _texts(merged)


def test_a_temporary_read_twice_is_not_inlined():
    read_twice = """
import numpy as np
def f(S):
    top = S.max(axis=-1, keepdims=True)
    e = np.exp(S - top)
    return e / e.sum(axis=-1, keepdims=True)
"""
    top_inlined = """
import numpy as np
def f(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""
    merged = """
import numpy as np
def f(S):
    return np.exp(S - S.max(axis=-1, keepdims=True)) / np.exp(S - S.max(axis=-1, keepdims=True)).sum(
        axis=-1, keepdims=True)
"""
    assert _texts(read_twice) == _texts(top_inlined)  # `top` is read once: inlined
    assert _texts(read_twice) != _texts(merged)  # `e` is read twice: kept


def test_a_name_assigned_again_is_a_new_name_from_there_on():
    """`s = Q @ kt` then `s = s * scale` binds two values: the second is a name of its own, as in a copy that calls
    it `out`, and both are temporaries. So is a parameter converted in place (`Q = np.asarray(Q)`), which a copy
    disguises as `q = np.asarray(Q)`."""
    reassigned = """
import numpy as np
def f(Q, K, scale):
    kt = np.swapaxes(K, -1, -2)
    s = Q @ kt
    s = s * scale
    return s
"""
    merged = "import numpy as np\ndef f(Q, K, scale):\n    return Q @ np.swapaxes(K, -1, -2) * scale\n"
    assert _texts(reassigned) == _texts(merged)
    assert _texts(reassigned.replace("s = s * scale", "s *= scale")) == _texts(merged)  # written one way first
    converted = "import numpy as np\ndef f(Q, K):\n    Q = np.asarray(Q)\n    K = np.asarray(K)\n" \
                "    return Q[..., 0] + Q @ K.T\n"
    renamed = "import numpy as np\ndef f(Q, K):\n    q_ = np.asarray(Q)\n    k = np.asarray(K)\n" \
              "    return q_[..., 0] + q_ @ k.T\n"
    assert _texts(converted) == _texts(renamed)
    annotated = renamed.replace("q_ = ", "q_: np.ndarray = ").replace("    k = ", "    k: object = ")
    assert _texts(annotated) == _texts(renamed)  # an annotation computes nothing
    in_a_loop = "import numpy as np\ndef f(Q, n):\n    for _ in range(n):\n        Q = Q * 2\n    Q = Q + 1\n" \
                "    return Q\n"
    assert _texts(in_a_loop) != _texts(in_a_loop.replace("    Q = Q + 1\n    return Q", "    return Q + 1"))
    looped = "def f(xs):\n    for x in xs:\n        y = x + 1\n        g(y)\n"
    assert _texts(looped) != _texts("def f(xs):\n    for x in xs:\n        g(x + 1)\n")


@pytest.mark.slow  # two runs of the command; the escaping and bad hand-in tests below run it in `make check`
def test_report_is_identical_across_hash_seeds(tmp_path):
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"seed{seed}"
        done = run_similarity(str(CLASS), "--out", str(out), "--top", "5", seed=seed)
        assert done.returncode == 0, done.stderr
        outputs.append({p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert outputs[0].keys() == outputs[1].keys()
    assert len(outputs[0]) == 2 + 5
    for name in outputs[0]:
        assert outputs[0][name] == outputs[1][name], name


@pytest.mark.slow  # three runs of the command
def test_from_a_folder_and_from_the_store_the_same_pairs(tmp_path):
    files = ["d06_mix_two.py", "i09_copyto.py", "i10_fill_then_place.py", "i01_einsum.py", "p04_copies_score.py",
             "i11_recursive.py", "d10_notebook.ipynb"]
    folder = tmp_path / "handins"
    folder.mkdir()
    for name in files:
        (folder / name).write_bytes((CLASS / name).read_bytes())
    db = tmp_path / "grades.db"
    with Store(db) as store:  # as `grade` leaves it: each result with the path of the file graded
        for name in files:
            kept = name == "i01_einsum.py"  # graded with its hash: the store keeps its bytes
            store.save(SubmissionResult(student=Path(name).stem, assignment="w07_attention",
                                        file=str(folder / name), suite_version="v", seed=0, sandbox="bwrap",
                                        sha256=hashlib.sha256((folder / name).read_bytes()).hexdigest() if kept
                                        else "", tests=()))
    from_folder = run_similarity(str(folder), "--out", str(tmp_path / "a"))
    from_store = run_similarity("--db", str(db), "--out", str(tmp_path / "b"))
    assert from_folder.returncode == 0 and from_store.returncode == 0, (from_folder.stderr, from_store.stderr)
    pairs = (tmp_path / "a" / "pairs.csv").read_text()
    assert pairs == (tmp_path / "b" / "pairs.csv").read_text()
    rows = list(csv.DictReader(pairs.splitlines()))
    assert {(r["student_a"], r["student_b"]) for r in rows[:3]} == {
        ("d06_mix_two", "i09_copyto"), ("d06_mix_two", "i10_fill_then_place"), ("i11_recursive", "p04_copies_score")}
    assert rows[2]["functions"] == "score"
    assert [float(r["score"]) for r in rows] == sorted((float(r["score"]) for r in rows), reverse=True)

    # Moved since grading (a zip's extracted files are gone after `grade`): compared from the bytes the store
    # kept; one the store kept no copy of is named, and the rest compared.
    (folder / "i01_einsum.py").unlink()
    (folder / "i09_copyto.py").unlink()
    again = run_similarity("--db", str(db), "--out", str(tmp_path / "c"))
    assert again.returncode == 0, again.stderr
    page = (tmp_path / "c" / "index.html").read_text()
    assert "i09_copyto: not compared: the graded file" in page and "i01_einsum: not compared" not in page
    assert (tmp_path / "c" / "pairs.csv").read_text().count("\n") == pairs.count("\n") - pairs.count("i09_copyto")


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_bad_hand_ins_are_noted_and_the_class_is_still_compared(tmp_path):
    folder = tmp_path / "handins"
    folder.mkdir()
    for name in ("i09_copyto.py", "d06_mix_two.py"):
        (folder / name).write_bytes((CLASS / name).read_bytes())
    (folder / "broken.py").write_text("def score(Q, K, scale=None:\n    return\n")
    (folder / "empty.py").write_text("")
    (folder / "deep.py").write_text("def softmax(S):\n    return " + "(" * 5000 + "S" + ")" * 5000 + "\n")
    good = (CLASS / "i10_fill_then_place.py").read_text()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def oops(:\n"),
                                               nbformat.v4.new_code_cell(good)])
    nbformat.write(notebook, folder / "half.ipynb")
    done = run_similarity(str(folder), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "out" / "index.html").read_text()
    # for the instructor: where the error is, that nothing was parsed, and no advice meant for the student
    assert "broken: not compared: a syntax error at line 1 (" in page
    assert "nothing of the file could be parsed" in page and "none of the assignment" not in page
    assert "empty: not compared: empty.py is empty</li>" in page and "submit" not in page
    assert "deep: not compared: a syntax error at line 2 (too many nested parentheses)" in page
    assert "half: left out, as they could not be parsed: code cell 1 (line 1: invalid syntax)" in page
    rows = list(csv.DictReader((tmp_path / "out" / "pairs.csv").read_text().splitlines()))
    assert ("d06_mix_two", "half") in {(r["student_a"], r["student_b"]) for r in rows}


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_student_text_is_escaped_on_every_page(tmp_path):
    folder = tmp_path / "handins"
    folder.mkdir()
    hostile = (CLASS / "i02_batch_loops.py").read_text().replace(
        'raise ValueError(f"row {i} has every key masked")',
        'raise ValueError("</div><script>alert(1)</script>\u202e")')
    (folder / "<img src=x onerror=alert(1)>.py").write_text(hostile)
    (folder / "=cmd.py").write_text(hostile)
    done = run_similarity(str(folder), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    pages = [(tmp_path / "out" / "index.html").read_text(), (tmp_path / "out" / "pairs" / "0001.html").read_text()]
    for page in pages:
        assert "<script>" not in page and "<img src=x" not in page and "\u202e" not in page
        assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;/div&gt;&lt;script&gt;alert(1)&lt;/script&gt;\\u202e" in pages[1]
    rows = list(csv.reader((tmp_path / "out" / "pairs.csv").read_text().splitlines()))
    assert rows[1][:2] == ["<img src=x onerror=alert(1)>", "'=cmd"]  # never a spreadsheet formula


def _function_text(text: str, name: str) -> str:
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_source_segment(text, node)


def _submission(student: str, text: str):
    path = Path(f"/nonexistent/{student}.py")
    from autograder.grading.submission import Submission
    return Submission(student, path, "py", "", source=text)


@pytest.mark.slow  # a subprocess or a sandbox of its own for one test: make test runs it
def test_what_many_students_write_alike_is_no_evidence():
    """Twelve of the twenty independent students write the same padding_mask: no pair is listed for it."""
    files = sorted(CLASS.glob("i*.py"))
    shared = _function_text((CLASS / "i06_helpers.py").read_text(), "padding_mask")
    submissions = []
    for number, path in enumerate(files):
        text = path.read_text()
        if number < 12:
            text = text.replace(_function_text(text, "padding_mask"), shared)
        submissions.append(_submission(path.stem, text))
    copies = [read_submission(p) for p in sorted(CLASS.iterdir()) if not p.stem.startswith("i")]
    comparison = compare_class("w07_attention", submissions + copies, STUB, SOURCE_DIR, jobs=1)
    independent = [p for p in comparison.pairs if p.a.startswith("i") and p.b.startswith("i")]
    assert not [p for p in independent if "padding_mask" in {f.function for f in p.functions}]
    assert max(p.score for p in independent) < 0.5


def test_the_stub_left_as_it_is_matches_nothing():
    stub = STUB.read_text()
    # i01's additive_score: its softmax, once its two temporaries are inlined, is written alike by many (no evidence)
    copied = _function_text((CLASS / "i01_einsum.py").read_text(), "additive_score")
    one = "import math\n\nimport numpy as np\nimport torch\n" + stub.replace(_function_text(stub, "additive_score"),
                                                                            copied)
    submissions = [_submission("untouched", stub), _submission("also_untouched", stub), _submission("one", one),
                   *(read_submission(p) for p in sorted(CLASS.iterdir()) if p.stem != "d01_renamed")]
    comparison = compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1)
    assert not [p for p in comparison.pairs if {"untouched", "also_untouched"} & {p.a, p.b}]
    assert "untouched: the unchanged stub (every function as released); paired with no one" in comparison.notes
    assert [f.function for p in comparison.pairs if (p.a, p.b) == ("i01_einsum", "one") for f in p.functions] == [
        "additive_score"]


def _class_with(extra: dict[str, str]) -> list:
    """The benchmark's class and `extra` (student -> code)."""
    return [*(read_submission(p) for p in sorted(CLASS.iterdir())), *(_submission(s, t) for s, t in extra.items())]


def test_a_ring_of_six_identical_copies_is_reported():
    """Six students with one copy (more than a tenth of the class): code no one else has, held by exactly them."""
    original = (CLASS / "i05_broadcast_sum.py").read_text()
    copies = {f"ring{n}": original.replace("scale", f"factor{n}") for n in range(1, 6)}
    comparison = compare_class("w07_attention", _class_with(copies), STUB, SOURCE_DIR, jobs=1)
    ring = {"i05_broadcast_sum", *copies}
    inside = [p for p in comparison.pairs if {p.a, p.b} <= ring]
    assert len(inside) == 15 and min(p.score for p in inside) >= 0.9, [(p.a, p.b, p.score) for p in inside]
    outside = [p.score for p in comparison.pairs if p.a.startswith("i") and p.b.startswith("i")]
    assert max(outside) < 0.5


def test_padding_a_copy_hides_nothing():
    """A long literal list first in every function (once cut at 20,000 tokens, all that was compared), or
    hundreds of junk statements that dilute the copy, or megabytes of comments: the copy is still found."""
    original = (CLASS / "i09_copyto.py").read_text()
    prefix = "    assert len([" + ", ".join(["0"] * 21_000) + "]) > 0\n"
    junk = "".join(f"    assert ({n} * {n + 1} - {n % 7}) << {n % 5} is not None\n" for n in range(300))
    padded = {name: re.sub(r"(def \w+\(.*\):\n)", lambda m, pad=pad: m.group(1) + pad, original)
              for name, pad in (("long_list", prefix), ("junk", junk))}
    padded["comments"] = original + "\n".join("# " + "lorem ipsum dolor sit amet " * 3 for _ in range(26_000))
    assert len(padded["comments"]) > 2_000_000
    comparison = compare_class("w07_attention", _class_with(padded), STUB, SOURCE_DIR, jobs=1)
    scores = {(p.a, p.b): p.score for p in comparison.pairs}
    for name in padded:  # a function's first fingerprints may straddle the padding: short functions lose a little
        assert scores.get(tuple(sorted((name, "i09_copyto")))) >= 0.95, name
    assert not comparison.notes


def test_einsum_subscripts_are_kept_whatever_their_letters():
    def tokens(subscripts: str) -> list[str]:
        code = f"import numpy as np\ndef f(A, B):\n    return np.einsum({subscripts!r}, A, B)\n"
        return [t.text for t in functions_of(parse_pieces([code])[1], ["f"])["f"].tokens]

    assert tokens("bqd,bkd->bqk") == tokens("ijk, ilk -> ijl")
    assert tokens("bqd,bkd->bqk") != tokens("ij,jk->ik")


@pytest.mark.slow  # whole commands in subprocesses
def test_the_command_refuses_bad_options_and_leaves_no_stale_pages(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    for option, value, said in (("--top", "-3", "argument --top: pass a whole number of 1 or more"),
                                ("--threshold", "5", "argument --threshold: pass a pair score from 0 to 1"),
                                ("--out", str(afile), "is a file; --out must be a folder")):
        done = run_similarity(str(CLASS), "--out", str(tmp_path / "out"), option, value)
        assert done.returncode == 2 and said in done.stderr, done.stderr
    out = tmp_path / "out"
    assert run_similarity(str(CLASS), "--out", str(out), "--top", "30").returncode == 0
    (out / "pairs" / "notes.txt").write_text("the TA's own file")
    assert run_similarity(str(CLASS), "--out", str(out), "--top", "3").returncode == 0
    assert sorted(p.name for p in (out / "pairs").iterdir()) == ["0001.html", "0002.html", "0003.html", "notes.txt"]
    again = run_similarity(str(CLASS), "--out", str(out), "--top", "30")
    assert again.returncode == 0
    assert "none at 0.50 or more; closest: " in (out / "index.html").read_text()  # no blank column for low pairs


def _with_function(path: Path, other: Path, name: str) -> str:
    """`path`'s code with its `name` replaced by `other`'s, as a student who took one function would have it."""
    text, taken = path.read_text(), other.read_text()
    mine = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    theirs = next(n for n in ast.parse(taken).body if isinstance(n, ast.FunctionDef) and n.name == name)
    return text.replace(ast.get_source_segment(text, mine), ast.get_source_segment(taken, theirs))


def test_a_few_lines_alike_are_little_evidence_and_a_file_of_short_functions_copied_is_much(tmp_path):
    """A causal mask of two lines taken from another student lists the function as alike but does not reach the
    threshold: the textbook form is what honest students write alike. A copy of a file whose functions are
    each a line or two scores as the copy it is."""
    folder = tmp_path / "class"
    folder.mkdir()
    for path in CLASS.glob("i*.py"):
        (folder / path.name).write_text(path.read_text())
    (folder / "one_short.py").write_text(_with_function(CLASS / "i01_einsum.py", CLASS / "i18_one_liners.py",
                                                        "causal_mask"))
    (folder / "short_copy.py").write_text((CLASS / "i18_one_liners.py").read_text())
    comparison = compare_class("w07_attention", [read_submission(p) for p in sorted(folder.iterdir())], STUB,
                               SOURCE_DIR, jobs=1)
    pairs = {(p.a, p.b): p for p in comparison.pairs}
    copy = pairs["i18_one_liners", "short_copy"]
    assert copy.score == 1.0 and copy.whole == 1.0, copy
    taken = pairs["i18_one_liners", "one_short"]
    assert taken.by_function["causal_mask"] >= 0.5 and taken.score < 0.6, taken


def test_a_chain_of_helpers_is_followed_only_so_far():
    """A score that calls h0, which calls h1, ... h4999: each helper followed had rebuilt a map of every name and
    searched a list of those already followed (50,000 helpers: 314 s). At most MAX_HELPERS are followed."""
    from autograder.similarity.toplevel import MAX_HELPERS

    chain = "\n".join(f"def h{n}(x):\n    return h{n + 1}(x) + {n}\n" for n in range(5000))
    text = f"def score(Q, K, scale=None):\n    return h0(Q)\n\n{chain}\ndef h5000(x):\n    return x\n"
    found = functions_of(ast.parse(text), CONTRACT)
    assert len(found["score"].spans) == 1 + MAX_HELPERS  # the function itself, then the helpers followed


def test_identical_copies_are_paired_at_one_however_common_their_code_is(tmp_path):
    # Five copies of one file in a class of 50 share code with a tenth of the class, which is down-weighted as
    # what students write alike: two byte-identical hand-ins had scored 0.08. Renamed and recommented copies
    # (the same once normalised) are the same code too.
    source = (CLASS / "i01_einsum.py").read_text()
    submissions = [read_submission(p) for p in sorted(CLASS.iterdir())]
    copies = []
    for number in range(4):
        path = tmp_path / f"copy{number}.py"
        path.write_text(source if number else "# my own work\n" + source.replace("    ", "\t"))
        copies.append(read_submission(path))
    comparison = compare_class("w07_attention", submissions + copies, STUB, SOURCE_DIR, jobs=1)
    scores = {(p.a, p.b): p.score for p in comparison.pairs}
    group = sorted(["i01_einsum", "copy0", "copy1", "copy2", "copy3"])
    assert all(scores.get((a, b)) == 1.0 for i, a in enumerate(group) for b in group[i + 1:]), scores
    assert all(pair.whole == 1.0 for pair in comparison.pairs if pair.a in group and pair.b in group)
    # The stub with its one-line answer filled in is what two honest students write alike: not one code.
    stub = STUB.read_text()
    for student, spacing in (("gina", "A @ V"), ("hank", "A@V")):
        (tmp_path / f"{student}.py").write_text(stub.replace('raise NotImplementedError("context")',
                                                             f"return {spacing}"))
    stubs = compare_class("w07_attention", [read_submission(tmp_path / f"{s}.py") for s in ("gina", "hank")],
                          STUB, SOURCE_DIR, jobs=1)
    assert all(pair.score < 0.5 for pair in stubs.pairs), stubs.pairs


def test_a_copy_of_code_the_class_writes_alike_shows_its_lines_as_evidence(tmp_path):
    """Two copies of a file whose every line many others write too pair at 1.00 as the same code; the page's
    evidence must show those lines, not "0 lines alike" under a score of 1.00."""
    text = (ROOT / "tests" / "fixtures" / "similarity" / "honest_partial" / "textbook_a.py").read_text()
    written = [node for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)
               and "NotImplementedError" not in ast.get_source_segment(text, node)]
    lines = text.split("\n")
    for number, node in enumerate(written):  # each version leaves one function as released: no block of its own
        stub = lines[:node.lineno] + [f'    raise NotImplementedError("{node.name}")'] + lines[node.end_lineno:]
        for twin in "ab":
            (tmp_path / f"v{number}{twin}.py").write_text("\n".join(stub))
    for name in ("copy_1", "copy_2"):
        (tmp_path / f"{name}.py").write_text(text)
    submissions = [read_submission(p) for p in sorted(CLASS.iterdir())] + \
        [read_submission(p) for p in sorted(tmp_path.glob("*.py"))]
    comparison = compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1)
    copy = next(pair for pair in comparison.pairs if (pair.a, pair.b) == ("copy_1", "copy_2"))
    assert copy.score == 1.0 and copy.same_code
    assert lines_alike(comparison, copy) >= 2, lines_alike(comparison, copy)


def test_two_honest_textbook_hand_ins_with_the_rest_left_as_released_are_not_one_code():
    """Six short functions in their textbook form, the other three as released, names and messages their own:
    the same once normalised, but what two students write alike. Scored as any pair, not as a copy."""
    honest = sorted((ROOT / "tests" / "fixtures" / "similarity" / "honest_partial").glob("*.py"))
    submissions = [read_submission(p) for p in sorted(CLASS.iterdir())] + [read_submission(p) for p in honest]
    comparison = compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1)
    pair = next(p for p in comparison.pairs if (p.a, p.b) == ("textbook_a", "textbook_b"))
    assert pair.score < 0.6, pair


def test_one_hand_in_is_told_that_nothing_could_be_paired(tmp_path):
    (tmp_path / "class").mkdir()
    shutil.copy(CLASS / "i01_einsum.py", tmp_path / "class" / "ann.py")
    done = run_similarity(str(tmp_path / "class"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "compared 1 student of" in done.stderr and "0 notes" in done.stderr
    assert "fewer than two hand-ins could be compared" in done.stderr and "Warning" not in done.stderr, done.stderr


def test_a_small_class_is_told_that_a_score_says_little_there(tmp_path):
    # Honest pairs of textbook code scored 0.60-0.68 in classes of 3 to 8, and nothing said so.
    (tmp_path / "class").mkdir()
    for name, source in (("ann", "i01_einsum.py"), ("ben", "i09_copyto.py"), ("cy", "i05_broadcast_sum.py")):
        shutil.copy(CLASS / source, tmp_path / "class" / f"{name}.py")
    done = run_similarity(str(tmp_path / "class"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "with 3 students there are too few to tell what students write alike from a copy" in done.stderr
    assert "With 3 students there are too few" in (tmp_path / "out" / "index.html").read_text()
    big = run_similarity(str(CLASS), "--out", str(tmp_path / "big"))
    assert "too few to tell" not in big.stderr and "too few" not in (tmp_path / "big" / "index.html").read_text()


def test_copies_of_the_reference_are_found_by_its_own_wording_and_honest_work_is_not():
    """The reference copied by three students, each changing a function or renaming locals, scored 0.30 as code
    (the lecture's form is common in the class) and formed no group; its docstrings and messages, which nothing
    released holds, name them. The benchmark's independent and copied hand-ins hold none of them."""
    reference = (ROOT / "solutions" / "w07_attention" / "reference.py").read_text()
    edits = {"ref_edit1": reference.replace("a row has no finite score", "every key of a row is masked"),
             "ref_edit2": reference.replace("scale = 1.0 / math.sqrt", "scale = 1 / math.sqrt"),
             "ref_code_only": _without_docstrings(reference)}
    comparison = compare_class("w07_attention", _class_with(edits), STUB, SOURCE_DIR, jobs=1,
                               reference=ROOT / "solutions" / "w07_attention" / "reference.py")
    listed = {w.student: len(w.lines) for w in comparison.wording}
    assert set(listed) == {"ref_edit1", "ref_edit2"}, listed
    assert all(w.of >= listed[w.student] >= 10 for w in comparison.wording)
    assert "Row-wise softmax over the last axis (keys), stable for large scores (slides 11, 22)." in \
        comparison.wording[0].lines + comparison.wording[1].lines


def _without_docstrings(text: str) -> str:
    """`text` as its code alone: docstrings and comments gone (a copy of the code, not of its words)."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def test_a_notebooks_lines_are_shown_by_cell_and_a_student_s_other_file_is_named(tmp_path):
    """A notebook's lines were numbered in its cells joined, which no one can open; and of a student's two files the
    one not compared was left out without a word."""
    folder = tmp_path / "handins"
    folder.mkdir()
    shutil.copy(CLASS / "d10_notebook.ipynb", folder / "d10.ipynb")
    shutil.copy(CLASS / "i19_isneginf.py", folder / "i19.py")
    shutil.copy(CLASS / "i19_isneginf.py", folder / "d10.py")  # the same student's .py beside the notebook
    done = run_similarity(str(folder), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "out" / "pairs" / "0001.html").read_text()
    cells = [c.source for c in nbformat.read(CLASS / "d10_notebook.ipynb", as_version=4).cells if c.cell_type == "code"]
    first_def = next(n for n, source in enumerate(cells, start=1) if source.lstrip().startswith("def "))
    assert re.search(rf'<span class="n">code cell {first_def}:1</span>', page), page[:3000]
    assert re.search(r'<span class="n">\d+</span>', page)  # the .py's own numbers
    index = (tmp_path / "out" / "index.html").read_text()
    assert "d10: " in index and "d10.py" in index, index[-3000:]


def test_a_line_nested_too_deeply_to_analyse_hides_no_copy():
    """A sum of 260 terms runs, but nests deeper than the comparison's recursive passes follow: that statement is
    left out and named, and the rest of the copy is compared, instead of the whole hand-in."""
    original = (CLASS / "i09_copyto.py").read_text()
    junk = "    _eps = " + " + ".join(["0.0"] * 260) + "\n"
    padded = {"deep": re.sub(r"(def softmax\(.*\):\n)", lambda m: m.group(1) + junk, original, count=1)}
    assert padded["deep"] != original
    comparison = compare_class("w07_attention", _class_with(padded), STUB, SOURCE_DIR, jobs=1)
    scores = {(p.a, p.b): p.score for p in comparison.pairs}
    assert scores.get(("deep", "i09_copyto")) >= 0.95, scores.get(("deep", "i09_copyto"))
    deep_line = padded["deep"].splitlines().index(junk.rstrip("\n")) + 1
    assert any(f"nested too deeply to analyse: the statement at {deep_line}" in note and "deep" in note
               for note in comparison.notes), comparison.notes


def test_a_docstring_betweenshared_lines_is_not_marked_as_shared_code():
    """A fingerprint's tokens can come from lines far apart (the end of a function and the start of the helper it
    calls, or the `def` line and the first statement after the released docstring): the lines between them that
    hold no code, the docstring given to every student among them, were shaded as code rare in the class."""
    from types import SimpleNamespace

    from autograder.similarity.fingerprint import Fingerprint

    function = SimpleNamespace(coded=frozenset({11, 18, 19, 20}))  # 12-17: the docstring
    code = SimpleNamespace(functions={"score": function})
    comparison = SimpleNamespace(codes=[code], prints={"score": [[Fingerprint(7, 11, 19), Fingerprint(8, 19, 20)]]})
    assert shared_lines(comparison, 0, "score", {7: 0.9, 8: 0.1}) == {11: "strong", 18: "strong", 19: "strong",
                                                                       20: "weak"}


def test_a_zipped_class_names_each_file_in_its_zip_not_a_folder_that_is_gone(tmp_path):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for name in ("i01_einsum.py", "i09_copyto.py", "i05_broadcast_sum.py"):
            bundle.write(CLASS / name, name)
    done = run_similarity(str(archive), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "out" / "pairs" / "0001.html").read_text()
    assert f"{archive}: i0" in page and "autograder-similarity" not in page, page[:2000]


def test_a_note_for_the_instructor_drops_what_the_student_was_told_to_do():
    from autograder.grading.found import NOTHING_TO_GRADE
    from autograder.similarity.code import for_instructor

    what = f"{NOTHING_TO_GRADE}: this hand-in holds only a.pdf, with no .py or .ipynb file in it"
    problem = f"{what}. Hand in your notebook itself (attention.ipynb, as saved by Jupyter) or your .py file"
    assert for_instructor(problem) == what
    from autograder.grading.submission import _too_much_code
    told = for_instructor(_too_much_code("big.py"))  # "...; keep data ... and resubmit" was the instructor's to read
    assert "resubmit" not in told and "million characters of code" in told, told


def test_a_file_that_defines_a_function_twice_is_noted():
    # A copy followed by a second definition of every function compares as the second: the page now says so.
    original = (CLASS / "i09_copyto.py").read_text()
    twice = original + "\n\n" + (CLASS / "i01_einsum.py").read_text()
    comparison = compare_class("w07_attention", _class_with({"twice": twice}), STUB, SOURCE_DIR, jobs=1)
    assert any(note.startswith("twice: defines score, ") and "more than once; the last definition of each" in note
               for note in comparison.notes), comparison.notes


def function_tokens(text: str) -> dict[str, list[str]]:
    """Each function of the contract in `text`, as the tokens similarity compares."""
    return {name: [t.text for t in f.tokens] for name, f in functions_of(parse_pieces([text])[1], CONTRACT).items()}


def renamed_functions(text: str) -> tuple[ast.Module, set[str]]:
    """`text` parsed, every function of it renamed `_<name>` (its calls too)."""
    tree = ast.parse(text)
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            node.name = f"_{node.name}"
        elif isinstance(node, ast.Name) and node.id in names:
            node.id = f"_{node.id}"
    return tree, names


def test_functions_given_their_names_by_one_tuple_assignment_are_compared():
    """`(score, softmax, ...) = (_score, _softmax, ...)` at the end of a file, or the same of a class's static
    methods (`Attn.score`), had taken the whole file out: "none of the assignment's functions is defined"."""
    original = (CLASS / "i03_logsumexp.py").read_text()
    tree, names = renamed_functions(original)
    order = sorted(names)
    exported = ast.unparse(tree) + f"\n\n({', '.join(order)}) = ({', '.join('_' + n for n in order)})\n"
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    for function in functions:
        function.decorator_list = [ast.Name("staticmethod", ast.Load())]
    tree.body = [n for n in tree.body if n not in functions] + [ast.ClassDef(
        name="Attn", bases=[], keywords=[], body=functions, decorator_list=[], type_params=[])]
    methods = ", ".join(f"Attn._{name}" for name in order)
    in_class = ast.unparse(ast.fix_missing_locations(tree)) + f"\n\n[{', '.join(order)}] = [{methods}]\n"
    assert function_tokens(exported) == function_tokens(original)
    comparison = compare_class("w07_attention", _class_with({"exported": exported, "in_class": in_class}), STUB,
                               SOURCE_DIR, jobs=1)
    scores = {(p.a, p.b): p.score for p in comparison.pairs}
    assert scores[("exported", "i03_logsumexp")] == 1.0 and scores[("i03_logsumexp", "in_class")] == 1.0, scores
    assert not comparison.notes, comparison.notes


def test_a_function_the_reader_cannot_follow_is_not_said_to_be_missing():
    """A file that binds the functions in a way not read here is told apart from one that has none of them."""
    made = "import numpy as np\n\n\ndef make(name):\n    return lambda *a: name\n\n\n" + "\n".join(
        f"{name} = make({name!r})" for name in CONTRACT) + "\n"
    partly = (CLASS / "i03_logsumexp.py").read_text() + "\n\nsoftmax = make('softmax')\n"
    comparison = compare_class("w07_attention", _class_with({"made": made, "partly": partly.replace(
        "def softmax(", "def other_softmax(").replace("\ndef ", "\ndef make(name):\n    return None\n\n\ndef ", 1),
        "nothing": "x = 1\n"}), STUB, SOURCE_DIR, jobs=1)
    notes = {note.split(": ", 1)[0]: note.split(": ", 1)[1] for note in comparison.notes}
    assert "none of the assignment's functions is defined" not in notes["made"], notes
    assert "could not find score (line" in notes["made"] and "compare the file by hand" in notes["made"], notes
    assert "could not find softmax (line" in notes["partly"] and "compare those by hand" in notes["partly"], notes
    assert "defines no" not in notes["partly"], notes
    assert "none of the assignment's functions is defined" in notes["nothing"], notes


def test_a_lambda_and_a_def_inside_try_or_if_are_read_as_functions():
    """`score = lambda Q, K, scale=None: ...` and a def nested in a top-level `try:` had been "defines no ..."."""
    as_def = """
import numpy as np
def score(Q, K, scale=None):
    return np.asarray(Q) @ np.asarray(K).swapaxes(-1, -2) * (scale if scale is not None else Q.shape[-1] ** -.5)
"""
    as_lambda = """
import numpy as np
score = lambda Q, K, scale=None: np.asarray(Q) @ np.asarray(K).swapaxes(-1, -2) * (
    scale if scale is not None else Q.shape[-1] ** -.5)
"""
    assert function_tokens(as_lambda)["score"] == function_tokens(as_def)["score"]
    original = (CLASS / "i08_torch_inside.py").read_text()
    start = original.index("def attention_torch(")
    end = original.find("\ndef ", start + 1) if original.find("\ndef ", start + 1) > 0 else len(original)
    body = original[start:end].rstrip().replace("\n", "\n    ")
    in_try = original[:start] + f"try:\n    import torch\n\n    {body}\nexcept ImportError:\n    torch = None\n" \
        "    attention_torch = None\n" + original[end:]
    in_if = original[:start] + f"if True:\n    {body}\nelse:\n    def attention_torch(*a):\n        return a\n" \
        + original[end:]
    for text in (in_try, in_if):
        assert function_tokens(text) == function_tokens(original)


def test_debugging_prints_logs_and_asserts_do_not_hide_a_copy():
    """One `print` reading two parameters between a temporary and its use dropped a copy from 1.00 to 0.75;
    `if DEBUG: print(...)` in each function, `DEBUG = True`, to 0.59."""
    original = (CLASS / "i16_scaled_first.py").read_text()
    for statement in ("print('hidden', Q.shape, K.shape)", "if DEBUG:\n    print('in', len(locals()))",
                      "assert Q is not None, 'no queries'", "logger.debug('shapes %s', locals())"):
        tree = ast.parse("import logging\nlogger = logging.getLogger(__name__)\nDEBUG = True\n" + original)
        for function in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            function.body.insert(len(function.body) // 2, ast.parse(statement).body[0])
        assert function_tokens(ast.unparse(tree)) == function_tokens(original), statement


def test_functions_that_are_also_methods_or_operators_give_the_same_tokens():
    """`torch.exp(x)` and `x.exp()`, `torch.masked_fill(S, m, v)` and `S.masked_fill(m, v)`, `np.add(a, b)` and
    `a + b`; `np.asarray(S, float)` and `dtype=float`; PyTorch's `dim=`/`keepdim=` and NumPy's `axis=`/`keepdims=`;
    `a, b = x, y` and two assignments."""
    as_functions = """
import numpy as np, torch
def f(S, m, Q, K):
    S = torch.masked_fill(S, m, 0)
    L = torch.log(torch.exp(S)) - torch.logsumexp(S, dim=-1, keepdim=True)
    q, k = np.asarray(Q, float), np.asarray(K, float)
    return np.tanh(np.divide(np.add(np.multiply(q, 2), k), np.subtract(q, k))), L.sum(dim=-1)
"""
    as_methods = """
import numpy as np, torch
def f(S, m, Q, K):
    S = S.masked_fill(m, 0)
    L = S.exp().log() - S.logsumexp(axis=-1, keepdims=True)
    q = np.asarray(Q, dtype=np.float64)
    k = np.asarray(K, dtype=float)
    return (k + 2 * q) / (q - k), L.sum(axis=-1)
"""
    assert _texts(as_functions) != _texts(as_methods)  # tanh, one side only
    assert _texts(as_functions.replace("np.tanh(", "(")) == _texts(as_methods)
    swap = "import numpy as np\ndef f(a, b):\n    a, b = b, a\n    return a - b\n"
    assert _texts(swap) != _texts(swap.replace("a, b = b, a", "a = b\n    b = a"))  # a swap is not two steps


class _SwapSides(ast.NodeTransformer):
    """Every comparison of two operands by `==`, `!=`, `is` or `is not` written with its sides swapped."""

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
            node.left, node.comparators = node.comparators[0], [node.left]
        return node


def test_a_comparison_with_its_sides_swapped_hides_no_copy():
    """Found by trying the grader from outside: a copy of i14 that wrote `lengths.ndim != 1` as `1 != lengths.ndim`
    and `S.shape[-1] == 0` as `0 == S.shape[-1]` matched 6 of its 9 functions (0.88 for the whole file), as only
    `>` and `>=` were read the other way round."""
    original = (CLASS / "i14_guard_first.py").read_text()
    swapped = ast.unparse(_SwapSides().visit(ast.parse(original)))
    assert "1 != lengths.ndim" in swapped and "0 == S.shape[-1]" in swapped and "None is c" in swapped
    assert function_tokens(swapped) == function_tokens(original)
    comparison = compare_class("w07_attention", _class_with({"swapped": swapped}), STUB, SOURCE_DIR, jobs=1)
    pair = next(p for p in comparison.pairs if (p.a, p.b) == ("i14_guard_first", "swapped"))
    assert sorted(f.function for f in pair.functions) == sorted(CONTRACT) and pair.score > 0.99, pair


def test_a_chain_of_comparisons_is_only_read_backwards_whole():
    """`n > x > 0` is `0 < x < n` and `1 == y > x` is `x < y == 1`; swapping one link of a chain changes what it
    compares (`x < y == 1` is not `x < 1 == y`), and `in` reads no other way round."""
    def texts(test: str) -> list[str]:
        return _texts(f"def f(x, y, n):\n    return {test}\n")

    assert texts("n > x > 0") == texts("0 < x < n")
    assert texts("1 == y > x") == texts("x < y == 1")
    assert texts("x < y == 1") != texts("x < 1 == y")
    assert texts("x in (1, 2)") != texts("(1, 2) in x")


def test_comparisons_as_functions_and_their_exact_negations_give_the_same_tokens():
    """NumPy's and PyTorch's comparison functions and methods are their operators, `logical_not` is `~`, a negated
    `==`, `!=`, `is`, `is not` or `in` is its opposite, and a choice (`a if c else b`, `np.where`) whose test is a
    negation is written with the test negated and its branches swapped."""
    def texts(body: str) -> list[str]:
        code = "import numpy as np\nimport torch\ndef f(a, b, x, M):\n" + "".join(
            f"    {line}\n" for line in body.splitlines())
        return _texts(code)

    alike = [("return a <= b", "return np.less_equal(a, b)"), ("return a <= b", "return torch.le(a, b)"),
             ("return a <= b", "return b.ge(a)"), ("return a < b", "return np.greater(b, a)"),
             ("return a == b", "return torch.eq(b, a)"), ("return a != b", "return a.ne(b)"),
             ("return a != b", "return np.not_equal(a, b)"), ("return ~M", "return torch.logical_not(M)"),
             ("return ~M", "return np.logical_not(M)"), ("return ~M", "return M.logical_not()"),
             ("return a != b", "return not (a == b)"), ("return a != b", "return ~(a == b)"),
             ("return a == b", "return not a != b"), ("return a is not None", "return not a is None"),
             ("return a != b", "return np.logical_not(np.equal(a, b))"), ("return a not in b", "return not a in b"),
             ("return a if x is None else b", "return b if x is not None else a"),
             ("return a if x == 0 else b", "return b if x != 0 else a"),
             ("return a if x < 0 else b", "return b if not x < 0 else a"),
             ("return np.where(M, a, b)", "return np.where(~M, b, a)"),
             ("return np.where(M, a, b)", "return np.where(np.logical_not(M), b, a)"),
             ("return torch.where(M == 0, a, b)", "return torch.where(M != 0, b, a)"),
             ("x = a if x is None else x\nreturn x", "x = x if x is not None else a\nreturn x")]
    for first, second in alike:
        assert texts(first) == texts(second), (first, second)
    # With NaN, `not (a < b)` is not `a >= b`; `out=` writes into an array; `torch.equal` is one bool.
    different = [("return a >= b", "return not (a < b)"), ("return a <= b", "return ~(a > b)"),
                 ("return a < b", "return np.less(a, b, out=M)"), ("return a == b", "return torch.equal(a, b)"),
                 ("return np.where(M, a, 0)", "return np.where(M, 0, a)")]
    for first, second in different:
        assert texts(first) != texts(second), (first, second)


# A copy's comparisons rewritten, found by trying the grader from outside: i01 so rewritten had scored 0.58 (two of
# its nine functions matched), under two honest pairs of the 24 independent solutions (0.69, 0.66).
COMPARISONS_REWRITTEN = {
    "factor = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale":
        "factor = scale if scale is not None else 1 / math.sqrt(Q.shape[-1])",
    "n_k = n_q if n_k is None else n_k": "n_k = n_k if n_k is not None else n_q",
    "return cols <= rows": "return np.less_equal(cols, rows)",
    "return np.arange(n_k).reshape(1, 1, -1) < lengths": "return np.less(np.arange(n_k).reshape(1, 1, -1), lengths)",
    "np.where(allowed, S, -np.inf)": "np.where(np.logical_not(allowed), -np.inf, S)",
    "torch.logical_not(allowed)": "~allowed",
}


def test_a_copy_with_its_comparisons_rewritten_scores_above_every_independent_pair():
    original = (CLASS / "i01_einsum.py").read_text()
    copy = original
    for written, rewritten in COMPARISONS_REWRITTEN.items():
        assert written in copy, written
        copy = copy.replace(written, rewritten)
    independent = [*sorted(CLASS.glob("i*.py")), *sorted((BENCHMARK / "originals").glob("*.py"))]
    submissions = [*(read_submission(p) for p in independent), _submission("rewritten", copy)]
    comparison = compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1)
    pair = next(p for p in comparison.pairs if (p.a, p.b) == ("i01_einsum", "rewritten"))
    honest = max(p.score for p in comparison.pairs if "rewritten" not in (p.a, p.b))
    assert sorted(f.function for f in pair.functions) == sorted(CONTRACT) and pair.score > 0.99, pair
    assert pair.score > honest, (pair.score, honest)
