"""Copies hidden by how a file binds its functions, or by statements that only look dropped, are still read.

Found by trying the grader from outside: a copy put in the `else:` of `if TYPE_CHECKING:` behind decoy defs had
been called "the unchanged stub"; one exported through `globals()`, a starred or walrus assignment had been "none
of the assignment's functions is defined"; `print(x := v)` in place of `x = v` had dropped the assignment.
"""
from __future__ import annotations

import ast

from test_similarity import CLASS, CONTRACT, SOURCE_DIR, STUB, _class_with, function_tokens, renamed_functions

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
    expected = function_tokens(ORIGINAL)
    for how, text in behind.items():
        assert function_tokens(text) == expected, how


def test_only_the_stub_s_own_bodies_are_called_the_unchanged_stub():
    decoys_only = _split(_behind("sys.version_info < (3, 8)", "raise RuntimeError('old')"))[0]
    decoys_only = ast.unparse(ast.parse(decoys_only).body[-1].body)  # the decoys, at top level
    comparison = compare_class("w07_attention", _class_with({"decoys": decoys_only, "stub": STUB.read_text()}),
                               STUB, SOURCE_DIR, jobs=1)
    notes = dict(note.split(": ", 1) for note in comparison.notes)
    assert notes["stub"].startswith("the unchanged stub"), notes
    assert "unchanged stub" not in notes["decoys"] and "open the file" in notes["decoys"], notes


def test_functions_exported_through_globals_starred_or_walrus_assignments_are_compared():
    tree, names = renamed_functions(ORIGINAL)
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
    expected = function_tokens(ORIGINAL)
    for how, export in exports.items():
        assert function_tokens(f"{private}\n{export}\n") == expected, how


def test_a_loop_over_globals_is_left_to_compare_by_hand_with_its_line():
    tree, names = renamed_functions(ORIGINAL)
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
    assert function_tokens(hidden) == function_tokens(plain)


def _signature(function: ast.FunctionDef) -> str:
    return ast.unparse(function).splitlines()[0]


def _decoyed(head: str, test: str, text: str = ORIGINAL, after: str = "else:") -> str:
    """`text` with its defs under `after` (an `else:` or `except ImportError:`), below `head` and `test` whose
    branch defines each with the same signature and a body that uses only its first parameter."""
    rest, functions = _split(text)
    decoys = "\n".join(f"    {_signature(f)}\n        return [x for x in {f.args.args[0].arg}]" for f in functions)
    return f"{rest}\n{head}\n{test}\n{decoys}\n{after}\n{_indented(functions)}\n"


def test_a_copy_behind_decoys_under_a_test_the_file_does_not_settle_is_read():
    """Found by trying the grader from outside: each of these read the decoys, and the copy shared nothing with
    its source; `TYPE_CHECKING = 1 == 1` had been taken for typing's (False), reading the copy's branch backwards."""
    cases = {
        "flag assigned twice": ("FAST = True\nFAST = False", "if FAST:"),
        "flag compared": ("MODE = 'ref'", "if MODE == 'fast':"),
        "version subscript": ("import sys", "if sys.version_info[0] < 3:"),
        "version major": ("import sys", "if sys.version_info.major < 3:"),
        "version reversed": ("import sys", "if (3, 0) > sys.version_info:"),
        "typing alias": ("from typing import TYPE_CHECKING as TC", "if TC:"),
        "typing module": ("import typing as t", "if t.TYPE_CHECKING:"),
        "main guard": ("", "if __name__ == '__main__':"),
    }
    expected = function_tokens(ORIGINAL)
    for how, (head, test) in cases.items():
        assert function_tokens(_decoyed(head, test)) == expected, how
    shadow = _decoyed("TYPE_CHECKING = 1 == 1", "if not TYPE_CHECKING:")  # the file's own name: both are read
    assert function_tokens(shadow) == expected
    not_main = _split(ORIGINAL)[0] + "\n" + "\n".join(
        f"{_signature(f)}\n    return [x for x in {f.args.args[0].arg}]" for f in _split(ORIGINAL)[1]) + \
        f"\nif __name__ != '__main__':\n{_indented(_split(ORIGINAL)[1])}\n"
    assert function_tokens(not_main) == expected


def test_decoys_in_a_try_body_beside_the_copy_in_its_except_are_named_in_a_note():
    text = _decoyed("try:\n    import attention_fast_kernels", "", after="except ImportError:")
    assert function_tokens(text) == function_tokens(ORIGINAL)
    comparison = compare_class("w07_attention", _class_with({"decoys": text}), STUB, SOURCE_DIR, jobs=1)
    note = dict(n.split(": ", 1) for n in comparison.notes)["decoys"]
    decoy, copy = (number for number, line in enumerate(text.splitlines(), start=1)
                   if line.strip().startswith("def score("))
    assert f"defines score in two branches (lines {decoy}, {copy}): the one compared is line {copy}'s, as the " \
           "other does not use K" in note and "compare the other of each by hand" in note, note


def test_functions_bound_in_a_with_block_a_loop_run_once_setattr_or_an_export_function_are_compared():
    rest, functions = _split(ORIGINAL)
    decoys = "\n".join(f"{_signature(f)}\n    return [x for x in {f.args.args[0].arg}]" for f in functions)
    tree, names = renamed_functions(ORIGINAL)
    private, order = ast.unparse(tree), [name for name in CONTRACT if name in names]
    variants = {
        "with": f"{rest}\n{decoys}\nimport contextlib\nwith contextlib.suppress(Exception):\n{_indented(functions)}\n",
        "for once": f"{rest}\n{decoys}\nfor _once in range(1):\n{_indented(functions)}\n",
        "setattr": f"{private}\n{decoys}\nimport sys\n" + "\n".join(
            f"setattr(sys.modules[__name__], {n!r}, _{n})" for n in order),
        "export": f"{private}\n{decoys}\ndef _export():\n    global {', '.join(order)}\n" + "\n".join(
            f"    {n} = _{n}" for n in order) + "\n_export()\n",
    }
    expected = function_tokens(ORIGINAL)
    for how, text in variants.items():
        assert function_tokens(text) == expected, how


def test_a_name_bound_again_in_a_way_not_read_is_named_with_its_line():
    """A decorator of the file's own may return another function; a module `__getattr__` may give any name: both
    had been silent (or "none of the assignment's functions is defined")."""
    tree, names = renamed_functions(ORIGINAL)
    private, order = ast.unparse(tree), [name for name in CONTRACT if name in names]
    decorated = f"{private}\ndef _use(n):\n    return lambda _g: globals()['_' + n]\n" + "\n".join(
        f"@_use({n!r})\ndef {n}(*args):\n    return args" for n in order)
    getattr_ = f"{private}\ndef __getattr__(name):\n    return globals()['_' + name]\n"
    comparison = compare_class("w07_attention", _class_with({"decorated": decorated, "getattr": getattr_}), STUB,
                               SOURCE_DIR, jobs=1)
    notes = dict(n.split(": ", 1) for n in comparison.notes)
    lines = decorated.splitlines()
    at, defined = lines.index("@_use('score')") + 1, lines.index("def score(*args):") + 1
    assert f"score at line {defined} and binds it again at line {at}" in notes["decorated"], notes["decorated"]
    assert "in a way this command does not read" in notes["decorated"]
    line = getattr_.splitlines().index("def __getattr__(name):") + 1
    assert f"could not find score (line {line})" in notes["getattr"] and "none" not in notes["getattr"], notes


def _result_in_a_temporary_then(statement: str, text: str = ORIGINAL) -> str:
    """`text` with each function's returned value put in `res` and `statement` run before `return res`; in
    `statement`, NAMES stands for the function's own names its returned value reads (`K_t, scale`)."""
    tree = ast.parse(text)
    module_names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} | {
        (a.asname or a.name).split(".")[0] for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names}
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        returned = function.body[-1]
        names = sorted({n.id for n in ast.walk(returned) if isinstance(n, ast.Name)} - module_names)
        if not isinstance(returned, ast.Return) or not names:
            continue
        extra = ast.parse(f"res = 0\n{statement.replace('NAMES', ', '.join(names))}\nreturn res").body
        extra[0].value = returned.value
        function.body[-1:] = extra
    return ast.unparse(tree)


def test_del_and_statements_that_only_read_hide_no_copy():
    """Found by trying the grader from outside: a copy with one `del NAME` per function scored 0.49 against its
    source, none of its functions matched (1.00 without the `del` lines), and so did one with a bare `(a, b)` in
    their place: each counted as a read, so the temporaries it named were no longer inlined."""
    expected = function_tokens(ORIGINAL)
    assert function_tokens(_result_in_a_temporary_then("pass")) == expected  # the temporary `res` alone is inlined
    for statement in ("del NAMES", "del (NAMES)", "(NAMES)", "[NAMES]", "NAMES, res.shape",
                      "res[0], res[..., -1:]", "res + 1 < 2 * res", "...", "pass", "if res is None:\n    (NAMES)"):
        assert function_tokens(_result_in_a_temporary_then(statement)) == expected, statement


def test_a_del_of_an_item_and_a_statement_that_calls_are_kept():
    """Only what changes nothing is dropped: `del S[0]` changes `S`, `S.sort()` and `np.add(S, 1, out=S)` too."""
    plain = "import numpy as np\ndef softmax(S):\n    e = np.exp(S)\n    return e / e.sum()\n"
    for statement in ("del S[0]", "del S.flags", "S.sort()", "np.add(S, 1, out=S)", "[s for s in S]"):
        changed = plain.replace("    return", f"    {statement}\n    return")
        assert function_tokens(changed) != function_tokens(plain), statement


def _after_first_temporary(kind: str, text: str) -> str:
    """`text` with one line of `kind` after the first `name = ...` of each top-level function, NAME standing for
    that name: the disguise one line per function that the tests below try."""
    lines, inserts = text.splitlines(), []
    for function in (n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)):
        first = next((s for s in function.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                      and isinstance(s.targets[0], ast.Name)), None)
        if first is not None:
            indent = " " * first.col_offset
            code = kind.replace("NAME", first.targets[0].id).splitlines()
            inserts.append((first.end_lineno, [indent + line for line in code]))
    for line, code in sorted(inserts, reverse=True):
        lines[line:line] = code
    return "\n".join(lines) + "\n"


NO_OP_LINES = {
    "builtin calls": "len(NAME)\nid(NAME)\ntype(NAME)\nisinstance(NAME, tuple)\nrepr(NAME)",
    "conversions": "np.asarray(NAME)\nnp.shape(NAME)\nlist(tuple(NAME.shape))\nint(len(NAME))",
    "methods": "NAME.copy()\n(NAME.copy(), id(NAME))",
    "while false": "while False:\n    NAME = NAME * 2",
    "while zero": "while 0:\n    NAME = NAME * 2",
    "times one": "NAME = NAME * 1", "plus zero": "NAME = NAME + 0", "one times": "NAME = 1 * NAME",
    "zero plus": "NAME = 0 + NAME", "minus zero": "NAME = NAME - 0", "over one": "NAME = NAME / 1.0",
    "power one": "NAME = NAME ** 1", "in place": "NAME *= 1",
}


def test_calls_that_change_nothing_a_false_loop_and_arithmetic_that_gives_back_its_operand_hide_no_copy():
    """Found by trying the grader from outside: one such line per function after the first temporary kept a copy
    of a whole file under the highest honest pair of the 20 independent solutions (0.68): `len(x)` or `id(x)` at
    0.56 against its source, `while False:` 0.55, `x = x * 1` 0.51. Each counted as a read (and a bare call as a
    change) of the temporary, which was then no longer inlined."""
    for source in ("i01_einsum.py", "i03_logsumexp.py", "i16_scaled_first.py"):
        original = (CLASS / source).read_text()
        expected = function_tokens(original)
        for kind, code in NO_OP_LINES.items():
            assert function_tokens(_after_first_temporary(code, original)) == expected, (source, kind)


def test_a_false_loop_s_else_runs_and_calls_that_may_change_their_arguments_are_kept():
    plain = "import numpy as np\ndef softmax(S):\n    e = np.exp(S)\n    return e / e.sum()\n"
    looped = plain.replace("    return", "    while False:\n        pass\n    else:\n        e = e + 1\n    return")
    assert function_tokens(looped) == function_tokens(plain.replace("    return", "    e = e + 1\n    return"))
    for statement in ("len(S.sort())", "S.fill(0)", "np.copyto(S, 0)", "e.copy(order='F')", "e = e * 2",
                      "e = 1 - e", "e = e ** 2", "while True:\n        break"):
        changed = plain.replace("    return", f"    {statement}\n    return")
        assert function_tokens(changed) != function_tokens(plain), statement
