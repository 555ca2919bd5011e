"""Code written another way that computes the same gives the same tokens: lambdas, helpers, products, axes, powers.

Each rewrite here had hidden a copy from outside (a copy written as module-level lambdas was "defines no
score"; one with its products written as einsums scored 0.56 against its source, under an honest pair in a class
of 43; one with `X @ W` moved into a helper called twice lost that function). The tests check both sides: the
spellings that compute the same give the same tokens, and code that computes something else does not.
"""
from __future__ import annotations

import ast
import re

import pytest
from test_similarity import CLASS, CONTRACT, SOURCE_DIR, STUB, _class_with, _function_text, _submission, _texts

from autograder.grading.submission import read_submission
from autograder.similarity.code import for_instructor, functions_of, parse_pieces, student_code
from autograder.similarity.compare import compare_class
from autograder.similarity.report import write_report

HEAD = "import math\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\n"


def _same(*codes: str, function: str = "f") -> bool:
    texts = [_texts(HEAD + code, function) for code in codes]
    return all(t == texts[0] for t in texts)


def test_a_module_level_lambda_is_compared_as_a_def_and_the_last_binding_wins():
    as_def = "def score(Q, K, scale=None):\n    return Q @ K.T * (scale or 1.0)\n"
    as_lambda = "score = lambda Q, K, scale=None: Q @ K.T * (scale or 1.0)\n"
    annotated = "score: object = lambda Q, K, scale=None: Q @ K.T * (scale or 1.0)\n"
    assert _same(as_def, as_lambda, annotated, function="score")
    other = "score = lambda Q, K, scale=None: Q + K\n"
    assert _same(as_def + other, other, function="score") and not _same(other + as_def, other, function="score")
    code = student_code(_submission("lam", HEAD + as_lambda), CONTRACT)
    assert "score" in code.functions and "defines no score" not in code.note and code.functions["score"].spans == (
        (5, 5),)


def test_a_file_of_lambdas_copied_from_one_liners_is_found():
    """Every one-line function of a file written as a module-level lambda: its functions were not compared."""
    source = (CLASS / "i18_one_liners.py").read_text()
    lambdas = re.sub(r"def (\w+)\((.*)\):\n    return (.*)\n", r"\1 = lambda \2: \3\n", source)
    assert "lambda" in lambdas and "def score" not in lambdas
    comparison = compare_class("w07_attention", _class_with({"lambdas": lambdas}), STUB, SOURCE_DIR, jobs=1)
    pair = next(p for p in comparison.pairs if (p.a, p.b) == ("i18_one_liners", "lambdas"))
    assert pair.score == 1.0 and len(pair.functions) == len(CONTRACT)
    assert not [n for n in comparison.notes if n.startswith("lambdas:")]


HELPERS = {
    "twice": """
def _project(X, W):
    return np.matmul(W, np.asarray(X).T).T
def f(Q, K, W_q, W_k, b):
    left = _project(Q, W_q)
    right = _project(K, W_k)
    return np.tanh(left[:, None, :] + right[None, :, :] + b)
""",
    "inline": """
def f(Q, K, W_q, W_k, b):
    left = np.matmul(W_q, np.asarray(Q).T).T
    right = np.matmul(W_k, np.asarray(K).T).T
    return np.tanh(left[:, None, :] + right[None, :, :] + b)
""",
    "statements": """
def _dk_scale(Q, scale=None):
    d_k = Q.shape[-1]
    if scale is None:
        scale = 1 / np.sqrt(d_k)
    return scale
def g(Q, K, scale):
    return Q @ K.T * _dk_scale(Q, scale)
""",
    "statements_inline": """
def g(Q, K, scale):
    d_k = Q.shape[-1]
    if scale is None:
        scale = 1 / np.sqrt(d_k)
    return Q @ K.T * scale
""",
}


def test_a_helper_called_once_or_twice_reads_as_its_code_written_in_place():
    """Extracting code into a helper of the file, or inlining one, changes no token: a partial copy with `X @ W`
    moved into a helper called twice had lost its function."""
    assert _same(HELPERS["twice"], HELPERS["inline"])
    assert _same(HELPERS["statements"], HELPERS["statements_inline"], function="g")
    by_keyword = HELPERS["statements"].replace("_dk_scale(Q, scale)", "_dk_scale(scale=scale, Q=Q)")
    assert _same(by_keyword, HELPERS["statements_inline"], function="g")
    assert not _same(HELPERS["twice"].replace("np.tanh", "np.exp"), HELPERS["inline"])


def test_a_recursive_or_large_helper_is_compared_after_its_caller_as_before():
    recursive = "def _h(x, n):\n    return x if n == 0 else _h(x @ x, n - 1)\ndef f(x):\n    return _h(x, 3)\n"
    tokens = _texts(HEAD + recursive)
    assert tokens.count("Return") == 2  # the caller's, then the helper's: nothing inlined
    found = functions_of(parse_pieces([HEAD + recursive])[1], ["f"])["f"]
    assert [first for first, _ in found.spans] == [7, 5]  # the page still shows the helper after its caller


def test_a_class_copy_with_helpers_extracted_is_found():
    """i06's helpers written into its functions, and a copy of i07 with `X @ W` moved into a helper called twice:
    each pair as alike as an unchanged copy."""
    text = (CLASS / "i07_ufuncs.py").read_text()
    body = _function_text(text, "additive_score")
    moved = body.replace("numpy.matmul(W_q, numpy.asarray(Q).T).T", "_project(Q, W_q)").replace(
        "numpy.matmul(W_k, numpy.asarray(K).T).T", "_project(K, W_k)")
    assert moved != body
    helper = "def _project(X, W):\n    return numpy.matmul(W, numpy.asarray(X).T).T\n\n\n"
    copy = text.replace(body, helper + moved)
    comparison = compare_class("w07_attention", _class_with({"extracted": copy}), STUB, SOURCE_DIR, jobs=1)
    pair = next(p for p in comparison.pairs if (p.a, p.b) == ("extracted", "i07_ufuncs"))
    assert pair.by_function["additive_score"] == 1.0 and pair.score == 1.0


@pytest.mark.parametrize(("one", "other", "different"), [
    ("np.sum(x, -1, keepdims=True)", "np.sum(x, axis=-1, keepdims=True)", "np.sum(x, keepdims=True)"),
    ("torch.max(x, -1)", "x.max(dim=-1)", "x.max()"),
    ("F.softmax(x, -1)", "F.softmax(x, dim=-1)", "F.softmax(x, dim=0)"),
    ("np.expand_dims(x, 1)", "x[:, None]", "x[None]"),
    ("x.unsqueeze(0)", "x[None, :]", "x[:, None]"),
    ("np.expand_dims(x, -1)", "x[..., None]", "x[:, None]"),
])
def test_cheap_respellings_give_the_same_tokens(one, other, different):
    assert _same(f"def f(x, y):\n    return {one}\n", f"def f(x, y):\n    return {other}\n")
    assert not _same(f"def f(x, y):\n    return {one}\n", f"def f(x, y):\n    return {different}\n")


def test_a_module_constant_reads_as_its_value():
    named = "NEG_INF = -np.inf\nEPS = 1e-9\ndef f(S, allowed):\n    return np.where(allowed, S, NEG_INF) + EPS\n"
    inline = "def f(S, allowed):\n    return np.where(allowed, S, -np.inf) + 1e-9\n"
    assert _same(named, inline)
    rebound = named + "def g():\n    global NEG_INF\n    NEG_INF = 0\n"  # bound twice: a variable, not a constant
    assert not _same(rebound, inline)
    computed = named.replace("NEG_INF = -np.inf", "NEG_INF = -np.array(1)")  # a call: not a constant
    assert not _same(computed, inline)


def test_a_block_held_by_most_of_the_class_is_not_a_copied_block():
    """Thirty honest students each writing the textbook form of every function from two or three spellings, once
    these were normalised alike, held one block of 42 fingerprints, all thirty: the whole class became a "group"
    and all 435 pairs scored 0.78 or more. A block more than half the class holds is how the class writes it."""
    files = sorted(CLASS.glob("i*.py"))
    common = (CLASS / "i06_helpers.py").read_text()
    shared = {name: _function_text(common, name) for name in ("softmax", "attention_torch", "attention", "score")}
    submissions = []
    for path in files:
        text = path.read_text()
        for name, code in shared.items():
            text = text.replace(_function_text(text, name), code)
        helpers = "\n\n".join(_function_text(common, h) for h in ("_keys_last", "_default_scale", "_check_rows"))
        submissions.append(_submission(path.stem, "import math\n" + text + "\n\n" + helpers + "\n"))
    comparison = compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1)
    assert max(p.score for p in comparison.pairs) < 0.6, comparison.pairs[:3]


def test_the_report_counts_in_words_and_says_why_a_listed_function_outscores_its_pair(tmp_path):
    """"1 pairs share code"; and a short function listed at 1.00 on a page whose pair scores less."""
    stub = STUB.read_text()
    copied = _function_text((CLASS / "i01_einsum.py").read_text(), "causal_mask")
    imports = "import math\n\nimport numpy as np\nimport torch\n"
    one = imports + stub.replace(_function_text(stub, "causal_mask"), copied)
    independent = sorted(CLASS.glob("i*.py"))
    comparison = compare_class("w07_attention", [_submission("one", one), *map(read_submission, independent)], STUB,
                               SOURCE_DIR, jobs=1)
    pair = next(p for p in comparison.pairs if "one" in (p.a, p.b))
    assert pair.functions[0].score > pair.score  # the copied causal_mask, alike at 1.00; the pair less
    rank = comparison.pairs.index(pair) + 1
    write_report(comparison, tmp_path, top=rank, threshold=0.6)
    page = " ".join((tmp_path / "pairs" / f"{rank:04d}.html").read_text().split())
    assert f"causal_mask is listed as {pair.functions[0].score:.2f} alike, yet the pair scores {pair.score:.2f}" in page
    assert "at least 8 fingerprints" in page and "at least 16" in page and "at least 32" in page
    two = compare_class("w07_attention", [read_submission(CLASS / "i01_einsum.py"),
                                          read_submission(CLASS / "d01_renamed.py")], STUB, SOURCE_DIR, jobs=1)
    write_report(two, tmp_path / "two", top=1, threshold=0.6)
    index = " ".join((tmp_path / "two" / "index.html").read_text().split())
    assert "2 students compared (1 pair); 1 pair shares code" in index and "1 pair scores 0.6 or more" in index


def test_a_note_on_a_hand_in_too_large_to_read_tells_the_instructor_the_limit_not_to_resubmit():
    from autograder.grading.submission import MAX_CODE, _too_much_code

    note = for_instructor(_too_much_code("big.py"))
    assert "resubmit" not in note and "keep data" not in note
    assert f"{MAX_CODE / 1e6:.1f} million characters" in note, note


def test_every_benchmark_file_parses_to_the_same_functions_with_helpers_inlined():
    """Inlining never loses a contract function (its tokens are never empty where there was code)."""
    for path in sorted(CLASS.glob("*.py")):
        found = functions_of(ast.parse(path.read_text()), CONTRACT)
        assert set(found) == set(CONTRACT) and all(f.tokens for f in found.values()), path.name
