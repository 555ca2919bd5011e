"""Can this machine's sandbox grade an assignment? Asked before anything is graded or stored.

An environment that cannot grade must refuse to, not store wrong grades: a
build of a library whose mappings exceed the workers' memory limit, or a
Python without the assignment's preload, fails every student the same way.
So every command that grades (`grade`'s jobs, `check`, `gradescope-run`, each
Dask worker, `doctor`) first asks the sandbox it will grade with:

1. the zygote starts and imports the assignment's preload;
2. a child, under the submission limits, imports the preload too and answers
   a call whose array travels in shared memory, as every check's arguments do;
3. where the suite has a reference, the reference's own source is graded as a
   submission through the normal session and checks, and must pass them all.

The reference goes into one child only; the zygote never holds it, so no later
child inherits it. Time limits are course.yaml's plain `call_seconds`: the
probe asks whether the environment can grade, not how fast this machine is.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.attempt import suite_fault_in
from autograder.grading.class_imports import PIP_NAMES
from autograder.grading.course import COURSE_FILE, Course
from autograder.grading.echo_child import last_line, preload_in_child
from autograder.grading.grader import Grader
from autograder.grading.results import SubmissionResult
from autograder.grading.submission import read_submission
from autograder.grading.suite import REFERENCE_FILE, Suite
from autograder.sandbox.protections import SandboxError
from autograder.sandbox.zygote import Sandbox

# PyTorch's CPU-only wheels: ~200 MB, against several GB of CUDA libraries in the default build from PyPI.
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROBE_STUDENT = "(environment probe)"


class EnvironmentRefused(SandboxError):
    """This machine's sandbox cannot grade the assignment; the message says why and what fixes it."""


@dataclass(frozen=True)
class ProbeReport:
    """What the probe found for one assignment.

    problem: what failed, empty when the environment can grade; fix: the command or step that fixes it.
    mapped_mib: a worker child's address space after the preload, as the child reported it (for
    `doctor` only: the limit itself is counted inside each child, see worker._set_limits).
    """

    assignment: str
    problem: str = ""
    fix: str = ""
    mapped_mib: float | None = None
    checks: int = 0  # reference checks that passed
    check_fault: bool = False  # the problem is a bug in one of the assignment's checks, not in this environment
    reference_fault: bool = False  # the reference gives wrong answers (or its checks expect them), here as anywhere

    @property
    def ok(self) -> bool:
        return not self.problem

    @property
    def cause(self) -> str:
        """Who cannot grade, before the problem: this environment, or the assignment's own checks."""
        if self.reference_fault:
            return f"the reference solution of {self.assignment} fails its checks"
        return (f"{self.assignment}'s checks cannot grade" if self.check_fault
                else f"this environment cannot grade {self.assignment}")

    def refusal(self, command: str) -> str:
        return (f"{command} refused: {self.cause}: {self.problem.rstrip('.')}. To fix it: "
                f"{self.fix}; then run again. Nothing was graded")


def probe_environment(course: Course, suite: Suite, sandbox: Sandbox, alongside: Grader | None = None) -> ProbeReport:
    """Run the three steps above in `sandbox` (started here if it is not); never raises for what it finds.

    alongside: the Grader that will grade in this process once the probe passes; the probe's own Grader
    (plain limits) shares its class-wide cases and the reference's cached answers, so they are built once.
    """
    assignment = suite.assignment
    python = sandbox.protections.python.path
    try:
        sandbox.start()
    except SandboxError as error:
        problem, fix = _start_problem(str(error), course, assignment, python)
        return ProbeReport(assignment.name, problem, fix)
    mapped, problem = preload_in_child(suite, sandbox)
    if problem:
        return ProbeReport(assignment.name, problem, _fix_for(problem, course, assignment, python, mapped), mapped)
    if suite.reference is None:
        return ProbeReport(assignment.name, mapped_mib=mapped)
    path = assignment.solution_dir / REFERENCE_FILE
    result = Grader(course, suite, sandbox, shares_with=alongside).grade(read_submission(path, student=PROBE_STUDENT))
    fault = suite_fault_in(result.internal_error)
    if fault:
        return ProbeReport(assignment.name, *_check_fault(fault, assignment.name, path), mapped, check_fault=True)
    wrong = _wrong_answers(result)
    if wrong:
        return ProbeReport(assignment.name, *_reference_fault(wrong, len(result.tests), assignment.name, path),
                           mapped, len(result.tests) - len(wrong), reference_fault=True)
    problem, passed = _reference_passes(result, path)
    fix = _fix_for(problem, course, assignment, python, mapped) if problem else ""
    return ProbeReport(assignment.name, problem, fix, mapped, passed)


def require_environment(course: Course, suite: Suite, sandbox: Sandbox, command: str,
                        alongside: Grader | None = None) -> ProbeReport:
    """probe_environment, raising EnvironmentRefused (a SandboxError) with the cause and the fix if it fails."""
    report = probe_environment(course, suite, sandbox, alongside)
    if not report.ok:
        raise EnvironmentRefused(report.refusal(command))
    return report


# ---------------------------------------------------------------- the steps

def _reference_passes(result: SubmissionResult, path: Path) -> tuple[str, int]:
    """The reference's result as a submission: ("", checks passed) or (what failed, checks passed)."""
    passed = [test for test in result.tests if test.status == "passed"]
    if result.internal_error:
        return f"grading the reference ({path}) hit an internal error: {result.internal_error.strip()[-300:]}", 0
    failed = [test for test in result.tests if test.status != "passed"]
    if not failed and not result.problem:
        return "", len(passed)
    # A file that did not load fails every check "not run": the reason it did not load is the finding.
    what = result.problem or f"{failed[0].name} {failed[0].status}: {failed[0].message}"
    problem = (f"the reference solution ({path}) passed {len(passed)} of {len(result.tests)} checks in this "
               f"sandbox; {what}")
    last = last_line(result.printed)
    return problem + (f" (the worker printed: {last})" if last else ""), len(passed)


def _wrong_answers(result: SubmissionResult) -> list:
    """The reference's checks that failed on its answers (not a timeout or a crash, which the sandbox may
    cause), where every check that did not pass did so: [] where another cause is the finding."""
    failed = [test for test in result.tests if test.status != "passed"]
    if result.internal_error or result.problem or any(test.status != "failed" for test in failed):
        return []
    return failed


# ---------------------------------------------------------------- causes and fixes

def _reference_fault(wrong: list, checks: int, assignment: str, reference: Path) -> tuple[str, str]:
    """(problem, fix) for a reference whose answers fail checks: each check named with its message's first line."""
    named = "; ".join(f"{test.name}: {(test.message.strip().splitlines() or [''])[0][:200]}" for test in wrong)
    return (f"{reference} failed {len(wrong)} of {checks} checks on its own answers ({named}), which no "
            "environment changes",
            f"fix {reference} so that it gives the right answers, or, where a check expects a wrong one, fix that "
            f"check (`autograder checks {assignment}` lists every check with what it verifies)")


def _check_fault(fault: str, assignment: str, reference: Path) -> tuple[str, str]:
    """(problem, fix) for a check that raised while grading the reference: the check's bug, named where it is."""
    return (f"grading the reference solution, {fault}: a fault in that check, not in this environment or in the "
            f"reference",
            f"fix the check at the line named; `autograder checks {assignment}` lists every check with what it "
            f"verifies, and `autograder grade {assignment} {reference}` grades the reference first, so it runs the "
            f"fixed check before any student")

def _start_problem(error: str, course: Course, assignment, python: str) -> tuple[str, str]:
    error = error.replace(" Run `autograder doctor` to see what this machine supports.", "").rstrip(".")
    missing = _MISSING.search(error)
    if missing:
        return _missing_module(missing.group(1), course, assignment, python)
    preload = assignment.preload
    if preload and re.search(r"(ImportError|OSError|Error):", error):
        return _preload_broken(error, course, assignment, python)
    return error, "`autograder doctor` lists which sandbox protections work here and why one does not"


def _fix_for(problem: str, course: Course, assignment, python: str, mapped: float | None) -> str:
    if "Cannot allocate memory" in problem or "MemoryError" in problem:
        now = f"{assignment.limits.memory_mib} MiB"
        base = f" on top of the {mapped:.0f} MiB a worker maps after its preload" if mapped else ""
        return (f"raise `memory_mib` in course.yaml (now {now}{base}), or install a smaller build of the "
                f"preload: `{install_command('torch', python, reinstall=True)}`" if "torch" in assignment.preload
                else f"raise `memory_mib` in course.yaml (now {now}{base})")
    missing = _MISSING.search(problem)
    if missing:
        return _missing_module(missing.group(1), course, assignment, python)[1]
    return ("run `autograder doctor` for the sandbox's state, and `autograder grade "
            f"{assignment.name} {assignment.solution_dir / REFERENCE_FILE}` to see every check's message")


# Any name Python's error quotes: a preload entry may be a pip name (`scikit-learn`) or a typo with any character.
_MISSING = re.compile(r"No module named '([^']+)'")
# Run in the workers' Python: what it has, not what this process has (AUTOGRADER_WORKER_PYTHON may be another one).
_INSTALLED = "import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)"
_FIRST_FAILING = ("import importlib, sys\nfor name in sys.argv[1:]:\n    try:\n        importlib.import_module(name)\n"
                  "    except BaseException:\n        print(name)\n        break")
_NEARBY = """import importlib.metadata, importlib.util, json, pkgutil, sys
parts, parent, places = sys.argv[1].split("."), "", None
for end in range(1, len(parts)):
    try:
        spec = importlib.util.find_spec(".".join(parts[:end]))
    except Exception:
        break
    if spec is None or not spec.submodule_search_locations:
        break
    parent, places = ".".join(parts[:end]), list(spec.submodule_search_locations)
names = [(parent + "." if parent else "") + info.name for info in pkgutil.iter_modules(places)]
pip = {}
for module, dists in ({} if parent else importlib.metadata.packages_distributions()).items():
    for dist in dists:
        pip.setdefault(dist.lower().replace("_", "-"), []).append(module)
print(json.dumps({"names": names + ([] if parent else list(sys.builtin_module_names)), "pip": pip}))"""


def _missing_module(name: str, course: Course, assignment, python: str) -> tuple[str, str]:
    """(problem, fix) for `name`, which the workers' Python could not find. pip is offered only for a package this
    project pins or knows, named exactly as it is imported, that is really not installed there, and then for that
    package: any other name is a preload entry to correct (`Torch`, `scikit-learn`, `torch.nn.functionl`), or a
    library that a preload's import needs, which no pip command of ours should fetch from PyPI by a guessed name."""
    preload = assignment.preload
    top = name.split(".")[0]
    if _known(top) and not _runs(python, _INSTALLED, top):
        needed = f"the assignment preloads {', '.join(preload)}" if preload else "the worker needs it"
        what = (f"{needed}, and {top} is not installed in the workers' Python ({python})" if top in preload
                else f"{needed}, whose import needs {top}, which is not installed in the workers' Python ({python})")
        return what, f"`{install_command(top, python)}`"
    entry = next((entry for entry in preload if entry == name or entry.startswith(name + ".")), None)
    if entry is not None:
        return _preload_misnamed(entry, course, assignment, python)
    return (f"the workers' Python ({python}) could not import the assignment's preload ({', '.join(preload)}): its "
            f"import needs {name!r}, which cannot be imported there",
            f"install the library that provides {name} into {python} from a source you trust, or reinstall the "
            "preload entry that needs it")


def _preload_broken(error: str, course: Course, assignment, python: str) -> tuple[str, str]:
    """(problem, fix) for a preload that is there but fails to import (a broken build, a missing shared library):
    the entry that fails is found by importing each in turn in the workers' Python, and only it is named."""
    import subprocess  # here: only a refusal needs it

    preload = assignment.preload
    problem = (f"the workers' Python ({python}) could not import the assignment's preload ({', '.join(preload)}): "
               f"{error}")
    try:
        failing = subprocess.run([python, "-c", _FIRST_FAILING, *preload], capture_output=True, text=True,
                                 timeout=120).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        failing = ""
    if not failing:  # every entry imports outside the sandbox: the sandbox is the cause, not a package
        return problem, "`autograder doctor` lists which sandbox protections work here and why one does not"
    top = failing.split(".")[0]
    if _known(top):
        return problem, f"reinstall {top}: `{install_command(top, python, reinstall=True)}`"
    return problem, f"reinstall {failing!r}, the preload entry that fails, into {python} from a source you trust"


def _known(module: str) -> bool:
    """Whether `module`, exactly as `import` spells it (case and all), is one this project pins or knows."""
    return module in PIP_NAMES or module in _pinned_modules()


def _runs(python: str, script: str, *args: str) -> bool:
    """Whether `script` exits 0 in `python`; False where it cannot be run."""
    import subprocess  # here: only a refusal needs it
    try:
        return subprocess.run([python, "-c", script, *args], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _preload_misnamed(entry: str, course: Course, assignment, python: str) -> tuple[str, str]:
    """The problem and fix for a preload entry that cannot be imported and that no pip command is offered for: in
    course.yaml, the instructor's to correct; in a released folder's manifest, the course staff's, not the student's."""
    close = _closest(entry, python)
    meant = f" (most likely {close!r} is meant)" if close else ""
    if course.path.name != COURSE_FILE:  # a released folder: its manifest came from the course staff
        return (f"{course.path}: the assignment preloads {entry!r}, which cannot be imported in the workers' Python "
                f"({python})", f"tell the course staff that the released assignment names {entry!r}{meant}; no "
                "install on your side fixes a misspelled name")
    key = f"assignments.{assignment.name}.preload"
    return (f"{COURSE_FILE}: {key}: {entry!r} cannot be imported in the workers' Python ({python})",
            f"correct the name under {key} in {COURSE_FILE}{meant}, as `import` names the module (case-sensitive, "
            f"and not always the name pip knows it by: `sklearn` for scikit-learn); if it is a library the course "
            f"needs, install it into {python} from a source you trust")


def _closest(entry: str, python: str) -> str:
    """The real module or submodule `entry` most likely means, in the workers' Python: the import name of a pip name
    (`scikit-learn`: `sklearn`), else the nearest name beside it (`Torch`: `torch`; `torch.nn.functionl`:
    `torch.nn.functional`; `torch-cpu`: `torch`); "" where none is near."""
    import difflib  # here: only a refusal needs it
    import json
    import subprocess

    try:
        nearby = json.loads(subprocess.run([python, "-c", _NEARBY, entry], capture_output=True, text=True,
                                           timeout=120).stdout or "{}")
    except (OSError, subprocess.SubprocessError, ValueError):
        nearby = {}
    names, pip = set(nearby.get("names", [])), nearby.get("pip", {})
    same = [name for name in names if name.lower() == entry.lower()]  # `Torch`: only its case is wrong
    if same:
        return same[0]
    as_pip = entry.lower().replace("_", "-")
    provided = pip.get(as_pip) or [module for module, name in PIP_NAMES.items() if name == as_pip]
    if provided:  # a distribution may provide several modules (torch: torch, torchgen, functorch)
        return (difflib.get_close_matches(as_pip, provided, n=1, cutoff=0) or sorted(provided))[0]
    before_hyphen = entry.split("-")[0]
    if "-" in entry and before_hyphen in names:
        return before_hyphen
    close = difflib.get_close_matches(entry, sorted(names | set(PIP_NAMES)), n=1, cutoff=0.75)
    return close[0] if close else ""


def _pinned_modules() -> list[str]:
    """The names this package's requirements (its extras too) give, lowercased: the libraries it knows."""
    return [re.split(r"[<>=!~\[ ;]", line, maxsplit=1)[0].strip().lower() for line in _requirements()]


def install_command(module: str, python: str, reinstall: bool = False) -> str:
    """The pip command that installs `module` for the workers' Python, at this package's own pin if it has one.

    PyTorch comes from its CPU index: the default build from PyPI grades too, but brings several GB of CUDA
    libraries that a grader without a GPU never uses.
    """
    requirement = _pinned(module) or PIP_NAMES.get(module, module)
    force = " --force-reinstall" if reinstall else ""
    index = f" --index-url {CPU_INDEX}" if module == "torch" else ""
    return f"{python} -m pip install{force} '{requirement}'{index}"


def _pinned(module: str) -> str:
    """This package's requirement for `module` (e.g. "torch==2.13.0" from the torch extra), or ""."""
    for line in _requirements():
        spec = line.split(";")[0].strip()
        if re.split(r"[<>=!~\[ ]", spec, maxsplit=1)[0].lower() == module.lower():
            return spec
    return ""


def _requirements() -> list[str]:
    """This package's requirements as its metadata states them, extras included; [] where it is not installed."""
    import importlib.metadata  # here: its import costs every command ~20 ms, and only a refusal needs it
    names = importlib.metadata.packages_distributions().get(__name__.split(".")[0]) or []
    try:
        return (importlib.metadata.requires(names[0]) or []) if names else []
    except importlib.metadata.PackageNotFoundError:
        return []
