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
