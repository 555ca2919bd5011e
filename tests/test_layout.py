"""Issue 14: the package's architecture holds: the engine knows no lesson, the layers import downwards.

These read the package's own source (imports, lines) rather than run it.
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "autograder"
# Lower layers never import higher ones: authoring (what checks are written against) knows no process,
# no grading and no output; the sandbox knows no grading or output; grading writes no reports.
LAYERS = {"authoring": set(), "sandbox": {"authoring"}, "grading": {"authoring", "sandbox"},
          "outputs": {"authoring", "sandbox", "grading"}, "nbgrader": {"authoring", "sandbox", "grading", "outputs"},
          # Beside grading and outputs: grading on a Dask cluster, which only the command line uses.
          "cluster": {"authoring", "sandbox", "grading"},
          # Beside outputs: the code-similarity report, from the hand-ins (read as grading reads them).
          "similarity": {"grading", "outputs"}}
LESSON = re.compile(r"softmax|attention|causal|queries|slides?\b", re.IGNORECASE)
MAX_LINES = 400
# Modules that start, signal or talk to processes, and os's calls that do (fork, exec*, spawn*, kill, wait*, ...).
PROCESS_MODULES = {"subprocess", "multiprocessing", "socket", "selectors", "signal", "threading", "_thread", "pty",
                   "ctypes", "resource", "asyncio"}
OS_PROCESS_CALLS = re.compile(r"fork|forkpty|exec[lv]p?e?|spawn|posix_spawnp?|kill|killpg|system|popen|wait|setsid"
                              r"|setuid|setgid|pidfd_open|_exit$")
# A score's words (grading.results.CheckResult's score, max_score and status; course.yaml's points), which no
# frame key, attribute or keyword of the worker's modules may name.
SCORE_WORDS = {"score", "scores", "max_score", "points", "status", "passed", "failed", "misconception"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "templates" not in p.parts)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_line_of_the_engine_names_the_lesson():
    named = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in PACKAGE.rglob("*")
             if p.is_file() and p.suffix in (".py", ".html", ".md")
             for n, line in enumerate(p.read_text().splitlines(), 1) if LESSON.search(line)]
    assert named == []


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_layer_imports_only_the_layers_below_it(layer):
    upward = []
    for path in (PACKAGE / layer).rglob("*.py"):
        for module in _imports(path):
            parts = module.split(".")
            if parts[0] == "autograder" and len(parts) > 1 and parts[1] in LAYERS and parts[1] != layer \
                    and parts[1] not in LAYERS[layer]:
                upward.append(f"{path.relative_to(ROOT)} imports {module}")
    assert upward == []


def test_only_the_command_line_uses_the_cluster_and_only_the_cluster_imports_dask():
    """Dask is an extra: grading, reports and exports must work without it (cli imports cluster lazily)."""
    users = {str(p.relative_to(ROOT)) for p in _modules()
             if any(m == "autograder.cluster" or m.startswith("autograder.cluster.") for m in _imports(p))}
    assert {path for path in users if not path.startswith(("autograder/cli/", "autograder/cluster/"))} == set()
    dask = {str(p.relative_to(ROOT)) for p in _modules()
            if any(m.split(".")[0] in ("dask", "distributed") for m in _imports(p))}
    assert {path for path in dask if not path.startswith("autograder/cluster/")} == set()
    assert not [m for m in _imports(PACKAGE / "cluster" / "__init__.py") if m.split(".")[0] in ("dask", "distributed")]


def _process_code(path: Path) -> set[str]:
    """What of `path` starts, stops or talks to processes: such imports, and os's process calls."""
    tree = ast.parse(path.read_text())
    found = {m for m in _imports(path) if m.split(".")[0] in PROCESS_MODULES or m == "concurrent.futures"}
    found |= {f"os.{node.attr}" for node in ast.walk(tree) if isinstance(node, ast.Attribute)
              and isinstance(node.value, ast.Name) and node.value.id == "os" and OS_PROCESS_CALLS.match(node.attr)}
    found |= {f"os.{alias.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "os"
              for alias in node.names if OS_PROCESS_CALLS.match(alias.name)}
    return found


def _reached_from(start: set[str]) -> set[str]:
    """The autograder modules `start` imports, and theirs, as dotted names; `start` included."""
    reached, todo = set(), list(start)
    while todo:
        module = todo.pop()
        path = _module_path(module)
        if module in reached or path is None:
            continue
        reached.add(module)
        todo += [m for m in _imports(path) | _imported_submodules(path) if m.startswith("autograder.")]
    return reached


def _imported_submodules(path: Path) -> set[str]:
    """`from autograder.x import y`'s `autograder.x.y`, which is a module when y is one."""
    return {f"{node.module}.{alias.name}" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}


def _module_path(module: str) -> Path | None:
    relative = Path(*module.split(".")[1:])
    return next((p for p in (PACKAGE / relative.with_suffix(".py"), PACKAGE / relative / "__init__.py")
                 if p.is_file()), None)


def test_the_authoring_api_has_no_process_code():
    """What a check file imports runs in the grader, the kernel and a student's `check`: no processes, no sandbox.

    Every module the authoring API reaches, not only its own files: a helper it imported could start one.
    """
    own = {f"autograder.authoring.{p.stem}" for p in (PACKAGE / "authoring").glob("*.py") if p.stem != "__init__"}
    reached = _reached_from(own | {"autograder.authoring"})
    assert {m for m in reached if not m.startswith(("autograder.authoring", "autograder.text"))} == set()
    used = {module: _process_code(_module_path(module)) for module in reached}
    assert {module: names for module, names in used.items() if names} == {}


def test_the_process_code_rule_finds_what_it_looks_for(tmp_path):
    """The rule above on a file that breaks it, so it cannot pass by finding nothing."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nimport subprocess\nfrom concurrent.futures import Future\nfrom os import fork\n"
                   "os.kill(1, 9)\nos.execv('x', [])\nos.path.join('a')\n")
    assert _process_code(bad) == {"subprocess", "concurrent.futures", "os.fork", "os.kill", "os.execv"}


def _code_words(path: Path) -> set[str]:
    """The words code can carry data under: string constants (not docstrings), attribute and keyword names."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.add(node.value)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            words.add(node.arg)
    return words


def _knows_scores(path: Path) -> set[str]:
    """What in `path` touches a score: the grader's modules that hold one, or a score's words in code."""
    found = {m for m in _imports(path) if m.split(".")[0] in ("yaml", "sqlite3")
             or m.startswith(("autograder.grading", "autograder.outputs", "autograder.nbgrader"))}
    words = _code_words(path)
    found |= words & SCORE_WORDS
    found |= {word for word in words if "course.yaml" in word}
    return found


def test_the_untrusted_side_knows_no_scores():
    """The worker's modules (sandbox.boot.WORKER_MODULES) never see a score: they import nothing that holds
    one (grading, outputs, the store, course.yaml's reader), read no course.yaml, and carry no score's word in a
    frame key, an attribute or a keyword. Scores exist only in the grader (README: the grading boundary)."""
    from autograder.sandbox.boot import WORKER_MODULES
    paths = {name: PACKAGE / f"{name.replace('.', '/')}.py" for name in WORKER_MODULES}
    assert all(path.is_file() for path in paths.values()), paths
    known = {name: _knows_scores(path) for name, path in paths.items()}
    assert {name: words for name, words in known.items() if words} == {}


def test_the_score_rule_finds_what_it_looks_for(tmp_path):
    """The rule above on a file that breaks it, so it cannot pass by finding nothing."""
    bad = tmp_path / "bad.py"
    bad.write_text('"""Reads course.yaml: a docstring may say so."""\nimport yaml\n'
                   'from autograder.grading.results import CheckResult\n'
                   'reply = {"score": 1}\nreply.update(points=2)\nopen("course.yaml")\nx = r.max_score\n')
    assert _knows_scores(bad) == {"yaml", "autograder.grading.results", "score", "points", "course.yaml", "max_score"}


def test_no_engine_file_is_over_400_lines():
    """Every .py under autograder/, the `autograder new` templates too."""
    files = sorted(PACKAGE.rglob("*.py"))
    assert PACKAGE / "sandbox" / "zygote.py" in files and PACKAGE / "nbgrader" / "templates" / "stub.py" in files
    long = {str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_worker_runs_only_modules_shipped_to_it():
    """The worker's modules import nothing of the grader's but each other (sandbox.boot.WORKER_MODULES)."""
    from autograder.sandbox.boot import WORKER_MODULES
    shipped = {f"autograder.{name}" for name in WORKER_MODULES}
    reached = {module for name in WORKER_MODULES
               for module in _imports(PACKAGE / f"{name.replace('.', '/')}.py") if module.startswith("autograder")}
    assert reached - shipped - {"autograder.sandbox"} == set()


def test_the_suite_version_covers_the_code_that_grades():
    """After an upgrade of any of it, a rerun regrades rather than skips (grading.suite._grading_code)."""
    from autograder.grading.suite import _grading_code
    covered = {str(p.relative_to(PACKAGE)) for p in _grading_code()}
    for verdict in ("grading/grader.py", "sandbox/session.py", "sandbox/worker.py", "sandbox/wire.py",
                    "sandbox/replies.py", "authoring/compare.py", "authoring/plain_values.py", "authoring/checks.py",
                    "grading/diagnosis.py", "grading/shrink.py", "grading/examples.py", "text.py"):
        assert verdict in covered, verdict


# Dotted names in the package that are not module paths, and what they are.
NOT_MODULES = {"autograder.zip": "the Gradescope bundle's file name",
               "autograder.nbgrader.autograde": "a logger's name, after nbgrader's autograde command"}


def _resolves(dotted: str) -> bool:
    """Whether `dotted` is a module, or a module's attribute (autograder.authoring.Check, autograder.text.safe)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_module_path_the_package_and_readme_name_exists():
    """Issue 23: messages, docstrings and comments name modules that exist, so an author who follows one finds it."""
    assert not _resolves("autograder.checks.Check") and _resolves("autograder.authoring.Check")  # the scan can fail
    named = {match.group(0): str(path.relative_to(ROOT))
             for path in [*PACKAGE.rglob("*"), ROOT / "README.md"] if path.suffix in (".py", ".html", ".md")
             for match in re.finditer(r"\bautograder(?:\.[A-Za-z_]\w*)+", path.read_text())}
    stale = [f"{where}: {name}" for name, where in sorted(named.items()) if name not in NOT_MODULES
             and not _resolves(name)]
    assert stale == []


def test_check_files_import_only_the_authoring_face():
    """Issue 23: assignments' checks, catalogues and the scaffold's templates use `autograder.authoring`, no module
    behind it, so the modules behind it can change."""
    files = [*ROOT.glob("assignments/*/*.py"), *ROOT.glob("solutions/*/*.py"),
             *(PACKAGE / "nbgrader" / "templates").glob("*.py")]
    inside = {f"{path.relative_to(ROOT)} imports {module}" for path in files for module in _imports(path)
              if module.startswith("autograder") and module != "autograder.authoring"}
    assert files and inside == set()


def test_importing_the_authoring_face_loads_no_process_code():
    """Issue 23: what a check file imports brings nothing of the sandbox, grading, or process modules with it."""
    import subprocess
    import sys
    shown = subprocess.run([sys.executable, "-c", "import sys, autograder.authoring; print(' '.join(sys.modules))"],
                           capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, timeout=120)
    loaded = set(shown.stdout.split())
    assert "autograder.authoring" in loaded, shown.stderr
    assert {m for m in loaded if m.startswith("autograder.") and not m.startswith("autograder.authoring")} == set()
    assert loaded & {"subprocess", "socket", "selectors", "multiprocessing", "resource"} == set()  # NumPy loads ctypes


# Deciding by what a message says, not by a value (sandbox.replies.Stopped, grading.statuses): a word searched
# for in an exception's text or in a message, or a message taken apart.
DECIDES_BY_TEXT = re.compile(r"""in str\(|["'][^"']*["'] in (message|reason|output|text)\b"""
                             r"|\.(output|message|printed|reason)\.(startswith|endswith|partition|split)\(")


def test_no_module_decides_by_the_text_of_a_message():
    """Messages are for people and may change; how a call stopped, or what a status means, is a value."""
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in _modules()
             for n, line in enumerate(p.read_text().splitlines(), 1) if DECIDES_BY_TEXT.search(line)]
    assert found == []
    assert DECIDES_BY_TEXT.search('if "did not return within" in message:')  # what the rule is for
    assert DECIDES_BY_TEXT.search('busy = "locked" in str(error)')
    assert DECIDES_BY_TEXT.search('ways = {test.output.partition(" ")[2] for test in tests}')


# ---------------------------------------------------------------- issue 23: one place starts a grading station

STATION = "autograder/grading/station.py"  # grading.station: the one place outside the sandbox that builds one
# What runs code: a grading station or what starts one, the probe and the reference's timing, other processes.
RUNS_CODE = {"autograder.grading.station", "autograder.grading.grader", "autograder.grading.boundary",
             "autograder.grading.batch", "autograder.grading.probe", "autograder.grading.calibration",
             "subprocess", "multiprocessing", "concurrent.futures", "pty"}
PROCESS_CALLS = re.compile(r"fork|forkpty|system|popen|exec\w*|spawn\w*|posix_spawn\w*")


def _imported_names(path: Path) -> set[str]:
    """Every module `path` imports, counting `from a import b` as a.b too (b may be a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _within(path: Path, *folders: str) -> bool:
    return path.relative_to(PACKAGE).parts[0] in folders


def _builds_a_sandbox(path: Path) -> bool:
    return any(isinstance(node, ast.Call) and (getattr(node.func, "id", None) == "Sandbox"
                                               or getattr(node.func, "attr", None) == "Sandbox")
               for node in ast.walk(ast.parse(path.read_text())))


def test_only_grading_starts_a_sandbox():
    """Outside the sandbox itself, grading.station builds every Sandbox, and only grading/ imports the zygote."""
    zygote = {str(p.relative_to(ROOT)) for p in _modules() if not _within(p, "grading", "sandbox")
              and any(m.startswith("autograder.sandbox.zygote") for m in _imported_names(p))}
    assert zygote == set()
    builders = {str(p.relative_to(ROOT)) for p in _modules() if not _within(p, "sandbox") and _builds_a_sandbox(p)}
    assert builders == {STATION}


@pytest.mark.parametrize("layer", ["cli", "cluster", "outputs"])
def test_the_face_the_cluster_and_the_outputs_import_nothing_from_the_sandbox(layer):
    """They take the sandbox's error and protections from grading.station, so a new sandbox kind touches none."""
    used = {f"{p.relative_to(ROOT)} imports {m}" for p in (PACKAGE / layer).rglob("*.py") for m in _imported_names(p)
            if m == "autograder.sandbox" or m.startswith("autograder.sandbox.")}
    assert used == set()


def test_outputs_never_run_code():
    """outputs/ format what grading stored: no grading station, no probe, no process of their own."""
    running = {f"{p.relative_to(ROOT)} imports {m}" for p in (PACKAGE / "outputs").rglob("*.py")
               for m in _imported_names(p) & RUNS_CODE}
    assert running == set()
    calls = {f"{p.relative_to(ROOT)}:{node.lineno} calls os.{node.func.attr}"
             for p in (PACKAGE / "outputs").rglob("*.py") for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and getattr(node.func.value, "id", None) == "os" and PROCESS_CALLS.fullmatch(node.func.attr)}
    assert calls == set()
