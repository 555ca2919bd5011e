"""A notebook's IPython syntax does what Jupyter does with it: `%%writefile` writes the student's code to a file
a later cell imports or `%run`s, and the notebook runs as __main__ with its folder on sys.path. Translated in
the grader (grading.ipython_cells), run in the real sandbox. And code that reads its own source (TorchScript)
finds it, as it would in the student's file."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import nbformat
import pytest

from autograder.grading.ipython_cells import read_cell
from autograder.grading.statuses import PASSED

from conftest import PLAIN, ROOT

CODE = PLAIN.read_text()


def _notebook(tmp_path, name: str, cells: list[str]):
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    return path


def test_each_cell_keeps_its_line_count_and_names_reach_the_worker_only_as_literals():
    written = read_cell("code cell 1", "%%writefile -a 'my file.py'\nx = 1\ny = 2")
    assert (written.writes, written.append, written.source) == ("my file.py", True, "\nx = 1\ny = 2")
    assert written.code().count("\n") == 2 and "'my file.py'" in written.code() and "'x = 1\\ny = 2'" in written.code()
    quoted = read_cell("code cell 2", "%%writefile x.py\n')\nimport os  # a quote in the text stays text")
    assert quoted.code().splitlines()[0].endswith(".write(\"')\\nimport os  # a quote in the text stays text\")")
    ran = read_cell("code cell 3", "%matplotlib inline\n%run -i helpers.py\n!pip install numpy")
    lines = ran.code().split("\n")
    assert lines[0].startswith("pass") and lines[2].startswith("pass") and "'helpers.py'" in lines[1]
    assert read_cell("code cell 4", "%%bash\nrm -rf /").code() == ""
    assert read_cell("code cell 5", "%%time\nx = 1").code() == "\nx = 1"
    assert read_cell("code cell 6", "%%writefile\nx = 1").code() == ""  # no file named: IPython refuses it too


def test_ipython_only_lines_become_python_and_a_cell_that_parses_is_kept_as_written():
    assert read_cell("c", "files = !ls\nd['k'], n = %sx ls").code() == (
        "files = []  # files = !ls\nd['k'], n = []  # d['k'], n = %sx ls")
    assert read_cell("c", "np.dot?\n?np.dot\nnp.*load*??").code().split("\n") == [
        "pass  # np.dot?", "pass  # ?np.dot", "pass  # np.*load*??"]
    assert read_cell("c", "pip install torch\ncd ..\ntime = 5").code() == (
        "pass  # pip install torch\npass  # cd ..\ntime = 5")  # automagic only where the line is not Python
    assert read_cell("c", "for i in range(2):\n    %time y = i").code() == "for i in range(2):\n    y = i"
    # A line that only looks like IPython, in a cell that parses or beside a real magic, stays as written.
    assert read_cell("c", 'x = """\n!not a shell line\n"""').code() == 'x = """\n!not a shell line\n"""'
    assert read_cell("c", "!ls\nprint('total = %d' % 3)").code() == "pass  # !ls\nprint('total = %d' % 3)"


@pytest.mark.parametrize("name,cells", [
    ("imports_beside_ipython_only_lines", ["import math\nimport numpy as np\nimport torch\npip install torch\n"
                                           "files = !ls\nnp.dot?", CODE.replace("import math\n", "")]),
    ("writes_and_imports", ["%%writefile my_attention.py\n" + CODE, "from my_attention import *"]),
    ("writes_the_module_name", ["%%writefile attention.py\n" + CODE, "from attention import *"]),
    ("writes_and_runs", ["%%writefile helpers.py\n" + CODE, "%run helpers.py"]),
    ("writes_in_parts", ["%%writefile parts.py\n" + CODE[:CODE.index("def softmax")],
                         "%%writefile -a parts.py\n" + CODE[CODE.index("def softmax"):], "%run -i parts.py"]),
])
def test_code_written_by_one_cell_and_run_by_another_is_graded(grade_once, tmp_path, name, cells):
    result = grade_once(_notebook(tmp_path, name, cells))
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != PASSED]


def test_code_written_and_never_run_is_named_with_what_to_do(grade_once, tmp_path):
    result = grade_once(_notebook(tmp_path, "written_only", ["import numpy as np", "%%writefile mine.py\n" + CODE]))
    assert result.score == 0
    softmax = next(t for t in result.tests if t.name == "softmax.lecture_example")
    assert "softmax() is in code cell 2 at line" in softmax.message, softmax.message
    assert "writes its code to mine.py (%%writefile) without running it" in softmax.message
    assert "`%run mine.py`" in softmax.message


def test_a_copy_written_out_for_export_is_not_a_second_definition(grade_once, tmp_path):
    result = grade_once(_notebook(tmp_path, "exported", [CODE, "%%writefile attention.py\n" + CODE]))
    assert result.score == result.max_score
    assert not [note for note in result.notes if "is defined" in note], result.notes


def test_a_notebook_runs_as_main_and_a_py_file_as_the_assignments_module(grade_once, tmp_path):
    guarded = CODE.replace("def softmax(", "def _unused(") + (
        '\nif __name__ == "__main__":\n    softmax = _unused\n')
    notebook = grade_once(_notebook(tmp_path, "guarded", [guarded]))
    assert notebook.score == notebook.max_score  # Jupyter runs the block: softmax is defined there
    module = tmp_path / "guarded.py"
    module.write_text(guarded)
    as_module = grade_once(module)
    assert {t.function for t in as_module.tests if t.status != PASSED} >= {"softmax"}  # imported: the block is not


def test_a_notebook_written_in_colab_runs_as_it_did_there(grade_once, tmp_path):
    """Colab's helpers import and do nothing: a drive mount above the imports no longer stops the cell that
    imports NumPy (every function failed for the missing `np`); a file upload gives no file."""
    imports, functions = CODE.split("\n\n\ndef score", 1)
    cells = ["from google.colab import drive, files\ndrive.mount('/content/drive')\n" + imports,
             "uploaded = files.upload()\nassert uploaded == {}\nimport google.colab.output as out\nout.clear()",
             "def score" + functions]
    result = grade_once(_notebook(tmp_path, "colab", cells))
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != PASSED]
    assert not [note for note in result.notes if "raised" in note], result.notes


def test_a_pylab_notebook_finds_numpy_s_names_as_in_jupyter(grade_once, tmp_path):
    """`%pylab inline` put NumPy's names (np among them) in the notebook; read as a magic that does nothing,
    every NumPy function failed for the missing `np`. Its hundreds of names leave the file's functions found."""
    assert read_cell("code cell 1", "%pylab inline\nx = 1").code() == (
        "get_ipython().run_line_magic('pylab', 'inline')  # %pylab inline\nx = 1")
    imports, functions = CODE.split("\n\n\ndef score", 1)
    imports = imports.replace("import numpy as np\n", "")
    cells = ["%pylab inline\n" + imports, "assert exp(0) == 1 and np is numpy", "def score" + functions]
    result = grade_once(_notebook(tmp_path, "pylab", cells))
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != PASSED]
    assert not result.notes, result.notes


def test_the_calls_nbconvert_writes_for_magics_run_as_the_magics_do(grade_once, tmp_path):
    """A notebook's code exported by nbconvert and pasted back calls get_ipython() for each magic and shell line:
    Jupyter's shell answers them, and so does the notebook's get_ipython() here."""
    shell = ("get_ipython().run_line_magic('matplotlib', 'inline')\nget_ipython().system('pip install numpy')\n"
             "listing = get_ipython().getoutput('ls')\nget_ipython().magic('load_ext autoreload')\n")
    cells = [shell + CODE.split("\n\n\ndef score", 1)[0],
             "get_ipython().run_cell_magic('writefile', 'helper.py', 'TWO = 2\\n')",
             "get_ipython().run_cell_magic('time', '', 'from helper import TWO\\nassert TWO == 2\\n')",
             "def score" + CODE.split("\n\n\ndef score", 1)[1]]
    result = grade_once(_notebook(tmp_path, "exported", cells))
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != PASSED]
    assert not result.notes, result.notes


def test_a_worker_without_ipython_or_colab_gives_a_notebook_their_modules_and_a_real_one_stays():
    """A Gradescope image installs no IPython: a notebook's `from IPython.display import display, Markdown` in its
    imports cell must not stop the cell there, nor Colab's drive mount. Run in a real interpreter without its
    site-packages (so without IPython), then with them: the installed IPython is the one imported."""
    script = textwrap.dedent("""
        import sys
        from autograder.sandbox import notebook_modules
        notebook_modules.install(lambda *shown: print(*map(repr, shown), sep="\\n"), lambda: "the shell")
        from IPython.display import HTML, Markdown, clear_output, display
        from IPython import get_ipython
        from google.colab import drive, files
        import google.colab.output
        display(Markdown("# weights"), HTML("<b>A</b>"), 3)
        clear_output(wait=True)
        drive.mount("/content/drive")
        print(get_ipython(), files.upload(), getattr(sys.modules["IPython"], "__file__", None) is not None)
        assert all(name in sys.modules for name in notebook_modules.MADE)  # each one named is one made
    """)
    bare = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT)})
    assert bare.returncode == 0, bare.stderr
    # get_ipython() from IPython is the notebook's own, as in Jupyter: made, or given to the installed IPython
    assert bare.stdout.splitlines() == ["<Markdown '# weights'>", "<HTML '<b>A</b>'>", "3", "the shell {} False"]
    installed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout.splitlines()[-1] == "the shell {} True"  # IPython's own module, from site-packages


SCRIPTED = '''
@torch.jit.script
def _scores(Q: torch.Tensor, K: torch.Tensor, s: float) -> torch.Tensor:
    return Q @ K.transpose(-2, -1) * s


def attention_torch(Q, K, V, allowed=None, scale=None):
    S = _scores(Q, K, float(Q.shape[-1] ** -0.5 if scale is None else scale))
    if allowed is not None:
        S = S.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(S, dim=-1)
    return A @ V, A
'''


def test_code_that_reads_its_own_source_finds_it_in_a_py_file_and_in_a_cell(grade_once, tmp_path):
    """torch.jit.script compiles a function from its source (inspect.getsource), which the sandbox holds only in
    memory: it had stopped the whole file from loading ("TorchScript requires source access")."""
    module = tmp_path / "scripted.py"
    module.write_text(CODE + "\n" + SCRIPTED)
    for graded in (grade_once(module), grade_once(_notebook(tmp_path, "scripted_cells", [CODE, SCRIPTED]))):
        assert graded.score == graded.max_score, (graded.problem, graded.notes)


def test_the_released_test_cells_without_their_nbgrader_metadata_are_not_the_students_code(grade_once, tmp_path):
    """A copy of the released notebook that lost its metadata (another editor, cells pasted into a new notebook):
    its test cells only import this package's checks and call them, which run in Jupyter, not in the sandbox."""
    from autograder.nbgrader.source import fill_answers

    released = nbformat.read(ROOT / "assignments/w07_attention/attention.ipynb", as_version=4)
    functions = ("score", "additive_score", "causal_mask", "padding_mask", "apply_mask", "softmax", "context",
                 "attention", "attention_torch")
    notebook = fill_answers(released, PLAIN.read_text(), functions)
    tests = [cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")
             and not cell.metadata["nbgrader"].get("solution")]
    assert len(tests) >= 9 and all("autograder" in cell.source for cell in tests[:9])
    for cell in notebook.cells:
        cell.metadata.pop("nbgrader", None)
    path = tmp_path / "attention.ipynb"
    nbformat.write(notebook, path)
    result = grade_once(path, "lost_metadata")
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != PASSED]
    assert not [note for note in result.notes if "autograder" in note], result.notes


def test_a_huge_line_is_not_parsed_in_the_grader():
    """`pwd = [1, 1, ...]`, 2 MB on one line, looks like the automagic `pwd`: telling it from one parsed the whole
    line in the grading process, which has no memory limit of its own (1.2 GB for this one). It is kept as the
    Python it is, for the worker to parse under its limit."""
    import tracemalloc

    line = "pwd = [" + "1," * (1 << 20) + "]"
    tracemalloc.start()
    try:
        cell = read_cell("code cell 1", line)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cell.source == line
    assert peak < 64 << 20, peak


def test_a_line_that_continues_a_statement_is_python_whatever_it_starts_with():
    # Beside a real magic the cell does not parse, so its lines are read one by one: before, each of these
    # continuation lines became `pass`, and the cell (with its imports or its def) failed.
    formatted = "%d of %d"
    cell = f'%matplotlib inline\nraise ValueError("{formatted}"\n                 % (1, 2))'
    assert read_cell("c", cell).code().split("\n")[1:] == cell.split("\n")[1:]
    black = "!pip install -q torch\nimport numpy as np\nx = (np.ones(2)\n     != True)"
    assert read_cell("c", black).code() == "pass  # !pip install -q torch\n" + black.split("\n", 1)[1]
    named = "%matplotlib inline\nhistory = dict(\n    scores=[],\n)\ntime (3)\nls, that = 1, 2\ncd .."
    assert read_cell("c", named).code().split("\n")[1:] == named.split("\n")[1:-1] + ["pass  # cd .."]
    strings = 's = """\n%not a magic\n"""\nx = 1 + \\\n  2\n!echo'
    assert read_cell("c", strings).code() == strings.replace("!echo", "pass  # !echo")


def test_a_cell_is_cleaned_as_ipython_cleans_it_before_it_runs():
    assert read_cell("c", "    def f():\n        return 1\n\n    x = f()").code() == "def f():\n    return 1\n\nx = f()"
    assert read_cell("c", ">>> def f():\n...     return 1\n").code() == "def f():\n    return 1\n"
    assert read_cell("c", "In [3]: def f():\n   ...:     return 1").code() == "def f():\n    return 1"
    assert read_cell("c", "\n%%bash\necho hi").code() == ""  # a cell magic after an empty line is the cell's
    assert read_cell("c", "%%capture out\nx = 1").code() == (
        "out = __import__('types').SimpleNamespace(stdout='', stderr='', outputs=[], show=lambda: None)"
        "  # %%capture out\nx = 1")


def test_notebooks_jupyter_runs_get_full_marks(grade_once, tmp_path):
    # Each had lost points, up to all of them: a continuation line taken for a magic, a cell pasted indented,
    # `from __future__ import annotations` of the grader's own loader making a student's annotations strings,
    # and an instructor's illustration whose import a later cell uses.
    body = CODE.replace("import math\n", "").replace("import numpy as np\n", "").replace("import torch\n", "")
    softmax = body[body.index("def softmax"):body.index("def context")]
    cells = ["!pip install -q numpy torch\nimport math\nimport numpy as np\nimport torch\nok = (np.ones(2)\n"
             "      != 0).all()",
             "%matplotlib inline\nhistory = dict(\n    scores=[],\n)",
             textwrap.indent(body.replace(softmax, ""), "    "),
             softmax.replace("def softmax(S):", "def softmax(S: np.ndarray):\n"
                             "    assert isinstance(softmax.__annotations__['S'], type)") + "\n%timeit -n 1 "
             "softmax(np.ones((2, 2)))",
             "import torch.nn.functional as F",
             "def attention_torch(Q, K, V, allowed=None, scale=None):\n"
             "    S = (Q @ K.transpose(-2, -1)) * (1.0 / math.sqrt(Q.shape[-1]) if scale is None else scale)\n"
             "    if allowed is not None:\n"
             "        S = S.masked_fill(~torch.as_tensor(allowed, dtype=torch.bool), float('-inf'))\n"
             "    A = F.softmax(S, dim=-1)\n"
             "    return A @ V, A"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.cells[4].metadata["tags"] = ["demo"]
    path = tmp_path / "jupyter_style.ipynb"
    nbformat.write(notebook, path)
    result = grade_once(path)
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != PASSED]


@pytest.mark.parametrize("copied", ["demo", "test"])
def test_a_helper_written_in_a_copy_of_a_course_cell_is_defined(grade_once, tmp_path, copied):
    """Jupyter's copy and paste keeps a cell's tags and nbgrader metadata: a student who copies the worked-example
    cell (tagged demo) or a test cell and writes a helper in it gets the helper, not a NameError in every check
    of the function that calls it. What else those cells do (plots, the course's checks) still does not run."""
    code = PLAIN.read_text().replace("e = np.exp(shifted)", "e = _stable_exp(shifted)")
    assert "_stable_exp" in code
    metadata = {"demo": {"tags": ["demo"]},
                "test": {"nbgrader": {"grade": True, "solution": False, "grade_id": "softmax_test", "points": 21}}}
    # The cell's own softmax (an illustration's naive one) never replaces the student's, defined in another cell.
    helper = ("@functools.lru_cache(maxsize=None)\ndef _unused():\n    return 1\n\n"
              "def _stable_exp(shifted):\n    return np.exp(shifted)\n\n"
              "def softmax(S):\n    return S\n\n"
              "raise RuntimeError('the rest of a course cell ran')")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in ("import functools", code)])
    notebook.cells.insert(1, nbformat.v4.new_code_cell(helper, metadata=metadata[copied]))
    path = tmp_path / f"copied_{copied}_cell.ipynb"
    nbformat.write(notebook, path)
    result = grade_once(path)
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != PASSED]
    assert not any("the rest of a course cell ran" in note for note in result.notes), result.notes
    assert not any("is defined 2 times" in note for note in result.notes), result.notes


def test_a_note_about_a_demo_cell_says_that_only_its_imports_and_definitions_ran(grade_once, tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PLAIN.read_text())])
    notebook.cells.append(nbformat.v4.new_code_cell("def show(x, w=WIDTH_NEVER_SET):\n    return x[:w]",
                                                    metadata={"tags": ["demo"]}))
    path = tmp_path / "demo_default.ipynb"
    nbformat.write(notebook, path)
    result = grade_once(path)
    assert result.score == result.max_score
    assert any(note.startswith("code cell 2 (tagged demo: only its imports, definitions and the examples other "
                               "cells use run) raised NameError") for note in result.notes), result.notes


def test_an_example_a_demo_cell_builds_is_there_for_the_students_cells_that_read_it(grade_once, tmp_path):
    """In Jupyter every demo cell ran whole before the student's: `print(A_causal.shape)` above a def found the
    example. Run for its imports alone, the demo left it undefined, the cell stopped at that line and its def never
    ran (86 points for a right notebook, and advice to Restart & Run All, which shows no error). The example and
    what it is built from run, and what the demo's own helper reads (`w=WIDTH`); nothing else of the demo does."""
    lines = PLAIN.read_text().split("\n")
    split = next(i for i, line in enumerate(lines) if line.startswith("def attention_torch"))
    demo = ("WIDTH = 2\nQ_x = np.eye(3)\nC_x, A_causal = attention(Q_x, Q_x, Q_x, allowed=causal_mask(3, 3))\n"
            "raise RuntimeError('the rest of the demo ran')\ndef show(x, w=WIDTH):\n    return x[:w]")
    cells = [nbformat.v4.new_code_cell("\n".join(lines[:split])),
             nbformat.v4.new_code_cell(demo, metadata={"tags": ["demo"]}),
             nbformat.v4.new_code_cell("print(A_causal.shape, show([1, 2, 3]))\n" + "\n".join(lines[split:]))]
    path = tmp_path / "demo_example.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    result = grade_once(path)
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != PASSED]
    assert "(3, 3) [1, 2]" in result.printed and not any("rest of the demo" in note for note in result.notes)


def test_more_of_what_ipython_reads_as_a_magic_and_what_as_python():
    # Each of these had cost a correct notebook its imports cell (0 points) or left an untrue note.
    hashed = '%matplotlib inline\nbanner = "week #%d" \\\n    % 7'  # a # in a string hides no backslash
    assert read_cell("c", hashed).code().split("\n")[1:] == hashed.split("\n")[1:]
    continued = "!pip install -q numpy \\\n    torch\nimport numpy as np"  # one shell command over two lines
    assert read_cell("c", continued).code().split("\n") == ["pass  # !pip install -q numpy", "", "import numpy as np"]
    commented = "    # week 7\nimport numpy as np\ndef f():\n    return np.ones(2)"  # only what every line shares
    assert read_cell("c", commented).code() == commented
    big = "%matplotlib inline\nDATA = [" + "0.5, " * 70_000 + "]"  # over the parse limit, its magic still read
    assert read_cell("c", big).code().startswith("pass  # %matplotlib inline\nDATA = [")
    assigned = "%matplotlib inline\nC = %time f(1)\nhere = %pwd\nn = %timeit -o f(1)"
    assert read_cell("c", assigned).code().split("\n")[1:] == [
        "C = f(1)  # C = %time f(1)", "here = __import__('os').getcwd()  # here = %pwd",
        "n = __import__('types').SimpleNamespace(best=0.0, worst=0.0, average=0.0, stdev=0.0, all_runs=[], "
        "timings=[], loops=1, repeat=1)  # n = %timeit -o f(1)"]
    assert read_cell("c", "%matplotlib inline\nfiles = %sx ls").code().endswith("files = []  # files = %sx ls")
    assert read_cell("c", "%%capture log --no-stderr\nx = 1").code().startswith("log = __import__('types')")
    assert read_cell("c", "%matplotlib inline\npwd\nls -la").code().split("\n")[1:] == ["pass  # pwd",
                                                                                       "pass  # ls -la"]
    assert read_cell("c", "fs[0]?").code() == "pass  # fs[0]?"
    many = "a?\n" * 20_000  # past MAX_CANDIDATES no line is parsed on its own: each is read as what it looks like
    assert read_cell("c", many).code() == "pass  # a?\n" * 20_000
