"""Copies hidden by how a file binds its functions, or by statements that only look dropped, are still read.

Found by trying the grader from outside: a copy put in the `else:` of `if TYPE_CHECKING:` behind decoy defs had
been called "the unchanged stub"; one exported through `globals()`, a starred or walrus assignment had been "none
of the assignment's functions is defined"; `print(x := v)` in place of `x = v` had dropped the assignment.
"""
from __future__ import annotations

import ast

from test_similarity import CLASS, CONTRACT, SOURCE_DIR, STUB, _all_tokens, _class_with, _renamed

from autograder.similarity.compare import compare_class

ORIGINAL = (CLASS / "i03_logsumexp.py").read_text()


def _split(text: str) -> tuple[str, list[ast.FunctionDef]]:
    """`text`'s code but its top-level defs, and those defs."""
    tree = ast.parse(text)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    tree.body = [n for n in tree.body if n not in functions]
    return ast.unparse(tree), functions


def _indented(functions: list[ast.FunctionDef]) -> str:
    return "\n".join("    " + line for f in functions for line in ast.unparse(f).splitlines())


def _behind(test: str, decoy: str, text: str = ORIGINAL) -> str:
    """`text` with its defs in the `else:` of `if <test>:`, whose first branch defines each as `decoy`."""
    rest, functions = _split(text)
    decoys = "\n".join(f"    def {f.name}(*args, **kwargs):\n        {decoy}" for f in functions)
    return f"{rest}\nimport sys\nfrom typing import TYPE_CHECKING\nif {test}:\n{decoys}\nelse:\n" \
           f"{_indented(functions)}\n"


def test_a_copy_behind_decoys_or_a_missing_module_s_import_is_read_as_the_code_that_runs():
    behind = {"type checking": _behind("TYPE_CHECKING", "..."),
              "old python": _behind("sys.version_info < (3, 8)", "raise RuntimeError('Python 3.8+ needed')"),
              "unknown test": _behind("len(sys.argv) > 99", "pass")}
    rest, functions = _split(ORIGINAL)
    behind["fast import"] = f"{rest}\ntry:\n    from attention_fast import {', '.join(CONTRACT)}\n" \
                            f"except ImportError:\n{_indented(functions)}\n"
    expected = _all_tokens(ORIGINAL)
    for how, text in behind.items():
        assert _all_tokens(text) == expected, how


def test_only_the_stub_s_own_bodies_are_called_the_unchanged_stub():
    decoys_only = _split(_behind("sys.version_info < (3, 8)", "raise RuntimeError('old')"))[0]
    decoys_only = ast.unparse(ast.parse(decoys_only).body[-1].body)  # the decoys, at top level
    comparison = compare_class("w07_attention", _class_with({"decoys": decoys_only, "stub": STUB.read_text()}),
                               STUB, SOURCE_DIR, jobs=1)
    notes = dict(note.split(": ", 1) for note in comparison.notes)
    assert notes["stub"].startswith("the unchanged stub"), notes
    assert "unchanged stub" not in notes["decoys"] and "open the file" in notes["decoys"], notes


def test_functions_exported_through_globals_starred_or_walrus_assignments_are_compared():
    tree, names = _renamed(ORIGINAL)
    private = ast.unparse(tree)
    order = [name for name in CONTRACT if name in names]
    first, *middle, last = order
    exports = {
        "update": "globals().update(" + ", ".join(f"{n}=_{n}" for n in order) + ")",
        "key": "\n".join(f"globals()[{n!r}] = _{n}" for n in order),
        "star": f"{first}, *_rest = " + ", ".join(f"_{n}" for n in order) + f"\n{', '.join(order[1:])} = _rest",
        "both ends": f"{first}, *mid, {last} = [_{first}, *[{', '.join('_' + n for n in middle)}], _{last}]\n"
                     f"{', '.join(middle)} = mid",
        "walrus": "\n".join(f"({n} := _{n})" for n in order),
        "walrus if": "\n".join(f"if ({n} := _{n}):\n    pass" for n in order),
        "partial": "import functools\n" + "\n".join(f"{n} = functools.partial(_{n})" for n in order),
    }
    expected = _all_tokens(ORIGINAL)
    for how, export in exports.items():
        assert _all_tokens(f"{private}\n{export}\n") == expected, how


def test_a_loop_over_globals_is_left_to_compare_by_hand_with_its_line():
    tree, names = _renamed(ORIGINAL)
    order = [name for name in CONTRACT if name in names]
    loop = f"{ast.unparse(tree)}\nfor _n, _f in zip({order!r}, [{', '.join('_' + n for n in order)}]):\n" \
           "    globals()[_n] = _f\n"
    line = loop.splitlines().index("    globals()[_n] = _f") + 1
    comparison = compare_class("w07_attention", _class_with({"loop": loop}), STUB, SOURCE_DIR, jobs=1)
    note = dict(n.split(": ", 1) for n in comparison.notes)["loop"]
    assert f"could not find score (line {line})" in note and "compare the file by hand" in note, note


def test_an_assignment_inside_a_print_an_assert_or_an_if_is_kept():
    plain = """
import numpy as np
def softmax(S):
    m = S.max(axis=-1, keepdims=True)
    e = np.exp(S - m)
    t = e.sum(axis=-1, keepdims=True)
    return e / t
"""
    hidden = """
import numpy as np
def softmax(S):
    print(m := S.max(axis=-1, keepdims=True))
    assert (e := np.exp(S - m)) is not None
    if (t := e.sum(axis=-1, keepdims=True)).ndim < 1:
        print('flat')
    return e / t
"""
    assert _all_tokens(hidden) == _all_tokens(plain)
