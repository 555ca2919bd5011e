"""What a notebook's own environment gives it and the workers may lack, made only when a cell imports it.

Shipped to the worker with `loader` (sandbox.boot): standard library only.

- `google.colab`: a notebook written in Colab often opens with `from google.colab import drive` and
  `drive.mount(...)` in the cell that imports NumPy. Without Colab that cell stops at its first line,
  and every function fails for the missing `np`, although it ran in Colab. Here its helpers do
  nothing; the files on the student's Drive are still not here, and a cell that reads them fails as
  any missing file does.
- `IPython.display`: Jupyter always has it, and a Gradescope image installs no IPython. Where IPython
  is installed, the real one is imported.

A finder at the end of `sys.meta_path` makes them: it is asked only for what nothing installed
provides, so a child that imports neither pays nothing for it.

- `get_ipython()`: Jupyter gives every notebook the running shell, and code that nbconvert wrote from
  magics calls it (`get_ipython().run_line_magic('matplotlib', 'inline')`, `.system('pip install ...')`).
  `Shell` does with those calls what the grader does with the magics themselves (grading.ipython_cells):
  nothing, but for `%pylab`, a cell magic whose body is Python (`%%time`), and `%%writefile`.
  `IPython.get_ipython` gives it too, as in Jupyter (`from IPython import get_ipython`), whether
  IPython is installed (its module is given the notebook's once imported) or made here.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import shlex
import sys
import types

SHOWN = ("Markdown", "HTML", "Latex", "Math", "Image", "SVG", "JSON", "Javascript", "Audio", "Video")
MADE = ("google", "google.colab", "IPython", "IPython.display")  # the modules a notebook is given, where missing
PACKAGES = {"google", "google.colab", "IPython"}
PYTHON_CELL_MAGICS = ("time", "timeit", "capture", "prun")  # as grading.ipython_cells: their body runs


def made(name: str) -> bool:
    """Whether a notebook importing `name` (a module, or a name taken from one) is given it here: `google` and
    `IPython` are made for what they hold, so `google.protobuf` is not."""
    return name in MADE or name.rpartition(".")[0] in ("google.colab", "IPython.display")


def install(display, get_ipython) -> None:
    """Let a notebook's cells import these modules; display, get_ipython: the notebook's own."""
    sys.meta_path.append(NotebookModules(display, get_ipython))
    if "IPython" in sys.modules:  # imported by the zygote for the class (grading.class_imports)
        sys.modules["IPython"].get_ipython = get_ipython
    else:
        sys.meta_path.insert(0, _ShellGiver(get_ipython))


class _ShellGiver(importlib.abc.MetaPathFinder):
    """Gives an installed IPython, as it is first imported, the notebook's `get_ipython`: outside a kernel
    its own returns None, and `from IPython import get_ipython` then `.run_line_magic(...)` stopped the cell."""

    def __init__(self, get_ipython):
        self._get_ipython = get_ipython

    def find_spec(self, name, path=None, target=None):
        if name != "IPython":
            return None
        sys.meta_path.remove(self)  # once, and the rest of the path finds the installed one (or none)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute, given = spec.loader.exec_module, self._get_ipython

        def exec_module(module):
            execute(module)
            module.get_ipython = given
        spec.loader.exec_module = exec_module  # this spec's own loader: no other import sees the change
        return spec


class Shown:
    """What IPython.display's Markdown, HTML, Image... make of their data: its plain repr when displayed."""

    def __init__(self, data=None, *args, **kwargs):
        self.data = data

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.data!r:.60}>"


class NotebookModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds google.colab and IPython.display where no installed package does, and makes them."""

    def __init__(self, display, get_ipython):
        self._makers = {"google": lambda: _package("google"), "google.colab": _colab,
                        "IPython": lambda: _ipython(get_ipython), "IPython.display": lambda: _ipython_display(display)}

    def find_spec(self, name, path=None, target=None):
        if name not in self._makers:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=name in PACKAGES)

    def create_module(self, spec):
        return self._makers[spec.name]()

    def exec_module(self, module) -> None:
        pass  # made whole by create_module


def _nothing(*args, **kwargs):
    return None


def _package(name: str) -> types.ModuleType:
    package = types.ModuleType(name)
    package.__path__ = []
    return package


def _colab() -> types.ModuleType:
    colab = _package("google.colab")
    helpers = {"drive": {"mount": _nothing, "flush_and_unmount": _nothing},
               "files": {"upload": lambda *args, **kwargs: {}, "download": _nothing},  # no file: {name: bytes}
               "output": {"clear": _nothing}, "auth": {"authenticate_user": _nothing}}
    for name, functions in helpers.items():
        helper = types.ModuleType(f"google.colab.{name}")
        vars(helper).update(functions)
        setattr(colab, name, helper)
        sys.modules[helper.__name__] = helper
    return colab


def _ipython(get_ipython) -> types.ModuleType:
    ipython = _package("IPython")
    ipython.get_ipython = get_ipython
    return ipython


def _ipython_display(display) -> types.ModuleType:
    module = types.ModuleType("IPython.display")
    vars(module).update({name: type(name, (Shown,), {}) for name in SHOWN}, display=display, clear_output=_nothing)
    return module


class Events:
    """A shell's `events`: callbacks registered for its loop (pyplot's redraw after each cell, once IPython is
    imported and a figure is made). Grading runs no loop, so none is ever called."""

    def register(self, event, function) -> None:
        pass

    def unregister(self, event, function) -> None:
        pass

    def trigger(self, event, *args, **kwargs) -> None:
        pass


class Shell:
    """What a notebook's `get_ipython()` returns here. namespace: the notebook's own (IPython's `user_ns`)."""

    def __init__(self, namespace: dict):
        self.user_ns = namespace
        self.events = Events()

    def enable_gui(self, gui=None) -> None:
        pass  # no window here; the pyplot a notebook draws with draws to no screen (matplotlib asks for one)

    def enable_matplotlib(self, gui=None):
        return gui, None

    def run_line_magic(self, name, line="", *args, **kwargs):
        if name == "pylab":
            pylab(self.user_ns)

    def run_cell_magic(self, name, line, cell, *args, **kwargs):
        if name in PYTHON_CELL_MAGICS:
            exec(compile(cell, f"<%%{name}>", "exec", dont_inherit=True), self.user_ns)
        elif name in ("writefile", "file"):
            words = shlex.split(line)
            names = [word for word in words if not word.startswith("-")]
            if names:
                with open(names[0], "a" if {"-a", "--append"} & set(words) else "w", encoding="utf-8") as written:
                    written.write(cell)

    def magic(self, line, *args, **kwargs):
        name, _, rest = str(line).lstrip("%").partition(" ")
        return self.run_line_magic(name, rest)

    def system(self, command, *args, **kwargs):
        return None

    def getoutput(self, command, *args, **kwargs):
        return []  # what a shell line with no output gives (x = !ls)


def pylab(namespace: dict) -> None:
    """`%pylab`: NumPy's names in the notebook, and pyplot's where matplotlib is installed, with np and plt, as
    IPython puts them there (pyplot's first, then `from numpy import *`, so NumPy's win)."""
    numpy = importlib.import_module("numpy")
    try:
        pyplot = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        pyplot = None
    for module in (pyplot, numpy):
        if module is not None:
            names = getattr(module, "__all__", None) or [name for name in dir(module) if not name.startswith("_")]
            namespace.update({name: getattr(module, name) for name in names if hasattr(module, name)})
    namespace.update(numpy=numpy, np=numpy, **({"pyplot": pyplot, "plt": pyplot} if pyplot is not None else {}))
