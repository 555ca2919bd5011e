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


def test_the_authoring_api_has_no_process_code():
    process = {"subprocess", "socket", "selectors", "multiprocessing", "ctypes", "resource"}
    used = {str(p.relative_to(ROOT)): _imports(p) & process for p in (PACKAGE / "authoring").rglob("*.py")}
    assert {path: names for path, names in used.items() if names} == {}


def test_no_engine_file_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_worker_runs_only_modules_shipped_to_it():
    """The worker's modules import nothing of the grader's but each other (sandbox.zygote.WORKER_MODULES)."""
    from autograder.sandbox.zygote import WORKER_MODULES
    shipped = {f"autograder.{name}" for name in WORKER_MODULES}
    reached = {module for name in WORKER_MODULES
               for module in _imports(PACKAGE / f"{name.replace('.', '/')}.py") if module.startswith("autograder")}
    assert reached - shipped - {"autograder.sandbox"} == set()


def test_the_suite_version_covers_the_code_that_grades():
    """After an upgrade of any of it, a rerun regrades rather than skips (grading.suite._grading_code)."""
    from autograder.grading.suite import _grading_code
    covered = {str(p.relative_to(PACKAGE)) for p in _grading_code()}
    for verdict in ("grading/grader.py", "sandbox/session.py", "sandbox/worker.py", "sandbox/wire.py",
                    "sandbox/replies.py", "authoring/compare.py", "authoring/checks.py", "grading/diagnosis.py",
                    "grading/shrink.py", "grading/examples.py", "text.py"):
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
