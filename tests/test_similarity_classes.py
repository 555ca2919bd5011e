"""Code moved into a class is compared as the code it is: the module-level functions only hand over to methods.

A copier can wrap a classmate's functions in a class (`self.helper(...)`,
static methods) and leave at module level one-line delegates (`score =
_impl.score`, or `def score(Q, K, scale=None): return Impl.score(Q, K,
scale)`). The report compares each delegate as the method it hands over to.
"""
from __future__ import annotations

import ast
import csv
import textwrap

import pytest
from test_similarity import CLASS, CONTRACT, SOURCE_DIR, STUB, function_tokens, renamed_functions, run_similarity

from autograder.grading.submission import read_submission
from autograder.similarity.compare import compare_class

STYLES = ("instance", "annotated", "fresh", "static")


def in_a_class(text: str, style: str) -> str:
    """`text` with its functions moved into class `Impl`, calling each other through it, and at module level
    only a delegate for each contract function:

    - instance: methods calling `self.g(...)`; `_impl = Impl()` and `f = _impl.f`;
    - annotated: the same, with annotations: `_impl: Impl = Impl()` and `f: Callable = _impl.f`;
    - fresh: the same, with `f = Impl().f`;
    - static: static methods calling `Impl.g(...)`; `def f(<args>): "doc"; return Impl.f(<args>)`.
    """
    tree = ast.parse(text)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    names = {f.name for f in functions}
    signatures = {f.name: (ast.unparse(f.args), ", ".join(a.arg for a in f.args.args)) for f in functions}
    receiver = "Impl" if style == "static" else "self"
    for function in functions:
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
                node.func = ast.Attribute(ast.Name(receiver, ast.Load()), node.func.id, ast.Load())
        if style == "static":
            function.decorator_list.append(ast.Name("staticmethod", ast.Load()))
        else:
            function.args.args.insert(0, ast.arg("self"))
    contract = [name for name in CONTRACT if name in names]
    if style == "instance":
        delegates = ["_impl = Impl()", *(f"{name} = _impl.{name}" for name in contract)]
    elif style == "annotated":
        delegates = ["_impl: Impl = Impl()", *(f"{name}: Callable = _impl.{name}" for name in contract)]
    elif style == "fresh":
        delegates = [f"{name} = Impl().{name}" for name in contract]
    else:
        delegates = [f'def {name}({signatures[name][0]}):\n    """As the class does it."""\n'
                     f"    return Impl.{name}({signatures[name][1]})" for name in contract]
    rest = [ast.unparse(n) for n in tree.body if not isinstance(n, ast.FunctionDef)]
    methods = "\n\n".join(textwrap.indent(ast.unparse(f), "    ") for f in functions)
    return "\n".join(rest) + "\n\n\nclass Impl:\n" + methods + "\n\n\n" + "\n\n".join(delegates) + "\n"


def under_other_names(text: str) -> str:
    """`text` with every function renamed `_<name>` (its calls too), and at the end `name = _name` for each (every
    other one annotated, `name: Callable = _name`)."""
    tree, names = renamed_functions(text)
    aliases = [f"{name}: Callable = _{name}" if index % 2 else f"{name} = _{name}"  # an annotation changes nothing
               for index, name in enumerate(sorted(names))]
    return ast.unparse(tree) + "\n\n" + "\n".join(aliases) + "\n"


def test_functions_given_the_stub_names_by_aliases_give_the_same_tokens():
    """Every independent solution with its functions defined under other names and bound to the stub's names
    at the end (`score = _score`): each is compared as the function it names, its calls as calls of the
    stub's functions."""
    for path in sorted(CLASS.glob("i*.py")):
        text = path.read_text()
        assert function_tokens(under_other_names(text)) == function_tokens(text), path.name


@pytest.mark.parametrize("style", STYLES)
def test_code_moved_into_a_class_gives_the_same_tokens(style):
    """Every independent solution, its functions (and their helpers) moved into a class: each delegate is
    compared as its method, `self.helper(...)` or `Impl.helper(...)` as the module-level helper was."""
    for path in sorted(CLASS.glob("i*.py")):
        text = path.read_text()
        wrapped = in_a_class(text, style)
        assert function_tokens(wrapped) == function_tokens(text), (path.name, style)


def test_a_delegate_only_file_is_compared(tmp_path):
    """A hand-in whose module level holds only assignments to methods (no def at all) defines the contract's
    functions as much as one with defs: it is compared, not noted as defining none of them."""
    path = tmp_path / "delegates_only.py"
    path.write_text(in_a_class((CLASS / "i06_helpers.py").read_text(), "instance"))
    assert "\ndef " not in path.read_text()
    submissions = [read_submission(p) for p in sorted(CLASS.glob("i*.py"))] + [read_submission(path)]
    comparison = compare_class("w07_attention", submissions, STUB, SOURCE_DIR, jobs=1)
    assert not [note for note in comparison.notes if note.startswith("delegates_only")], comparison.notes
    pair = next(p for p in comparison.pairs if (p.a, p.b) == ("delegates_only", "i06_helpers"))
    assert pair.score == 1.0 and len(pair.functions) >= 5, pair
    code = next(c for c in comparison.codes if c.student == "delegates_only")
    lines = code.text.split("\n")
    first, last = code.functions["softmax"].spans[0]  # the page shows the method, not the one-line delegate
    assert lines[first - 1].strip().startswith("def softmax(self, S)") and last > first


@pytest.mark.slow  # the whole command in a subprocess
def test_a_class_wrapped_copy_is_found_against_its_source(tmp_path):
    """In a class of independent solutions, two wrapped copies: each pairs with its source at 1.00, and the
    two (different code wrapped the same way) do not pair for their delegates."""
    folder = tmp_path / "handins"
    folder.mkdir()
    for path in sorted(CLASS.glob("i*.py")):
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "wrapped_helpers.py").write_text(in_a_class((CLASS / "i06_helpers.py").read_text(), "instance"))
    (folder / "wrapped_loops.py").write_text(in_a_class((CLASS / "i02_batch_loops.py").read_text(), "static"))
    done = run_similarity(str(folder), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    rows = {(r["student_a"], r["student_b"]): r for r in csv.DictReader(
        (tmp_path / "out" / "pairs.csv").read_text().splitlines())}
    for pair in (("i06_helpers", "wrapped_helpers"), ("i02_batch_loops", "wrapped_loops")):
        assert float(rows[pair]["score"]) == 1.0, rows.get(pair)
        assert int(rows[pair]["matching_functions"]) >= 5, rows[pair]
    assert float(rows.get(("wrapped_helpers", "wrapped_loops"), {"score": 0})["score"]) < 0.5
    top = list(rows)[:2]
    assert set(top) == {("i06_helpers", "wrapped_helpers"), ("i02_batch_loops", "wrapped_loops")}, top
    page = (tmp_path / "out" / "index.html").read_text()
    assert "i06_helpers, wrapped_helpers" in page and "i02_batch_loops, wrapped_loops" in page  # each a group


def test_code_behind_a_module_flag_that_is_off_is_dead_code():
    """`if VERBOSE:` with `VERBOSE = False` at module level never runs: a copy padded with such blocks gives the
    tokens of the code without them. A flag rebound anywhere (or a parameter of that name) is left alone. (Not a
    print: that is dropped whatever the flag.)"""
    for index, path in enumerate(sorted(CLASS.glob("i*.py"))):
        text = path.read_text()
        tree = ast.parse(text)
        for function in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            function.body.insert(0, ast.parse("if VERBOSE:\n    sys.stderr.write(str(len(locals())))").body[0])
        padded = ("VERBOSE: bool = False\n" if index % 2 else "VERBOSE = False\n") + ast.unparse(tree)
        assert function_tokens(padded) == function_tokens(text), path.name
    text = (CLASS / "i06_helpers.py").read_text()
    switched = "VERBOSE = False\n" + text + "\n\ndef verbose():\n    global VERBOSE\n    VERBOSE = True\n"
    tree = ast.parse(switched)
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "softmax"):
        function.body.insert(0, ast.parse("if VERBOSE:\n    sys.stderr.write(str(len(locals())))").body[0])
    assert function_tokens(ast.unparse(tree))["softmax"] != function_tokens(text)["softmax"]



def test_every_spelling_of_a_transpose_gives_the_same_tokens():
    """A whole-file copy with `W.T` written `np.transpose(W)`, swapaxes written moveaxis, and PyTorch's transpose
    written `.mT` scored 0.80, under two honest pairs; a transpose is now one token, however it is spelled."""
    spellings = ["W_q.T", "np.transpose(W_q)", "W_q.transpose()", "np.swapaxes(W_q, -1, -2)", "W_q.swapaxes(-2, -1)",
                 "np.moveaxis(W_q, -1, -2)"]
    tokens = {spelling: function_tokens(f"import numpy as np\n\ndef score(Q, W_q):\n    return Q @ {spelling}\n")
              ["score"] for spelling in spellings}
    assert len({tuple(t) for t in tokens.values()}) == 1, tokens
    torch_spellings = ["K.mT", "K.transpose(-2, -1)", "torch.transpose(K, -1, -2)", "K.T"]
    tokens = {spelling: function_tokens(f"import torch\n\ndef score(Q, K):\n    return Q @ {spelling}\n")["score"]
              for spelling in torch_spellings}
    assert len({tuple(t) for t in tokens.values()}) == 1, tokens
    other = function_tokens("import numpy as np\n\ndef score(Q, K):\n    return Q @ np.swapaxes(K, 0, 1)\n")["score"]
    assert other != next(iter(tokens.values()))  # a swap of other axes is another computation
