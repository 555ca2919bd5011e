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
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import types

SHOWN = ("Markdown", "HTML", "Latex", "Math", "Image", "SVG", "JSON", "Javascript", "Audio", "Video")
MADE = ("google", "google.colab", "IPython", "IPython.display")  # the modules a notebook is given, where missing
PACKAGES = {"google", "google.colab", "IPython"}


def made(name: str) -> bool:
    """Whether a notebook importing `name` (a module, or a name taken from one) is given it here: `google` and
    `IPython` are made for what they hold, so `google.protobuf` is not."""
    return name in MADE or name.rpartition(".")[0] in ("google.colab", "IPython.display")


def install(display) -> None:
    """Let a notebook's cells import these modules; display: the notebook's own `display`."""
    sys.meta_path.append(NotebookModules(display))


class Shown:
    """What IPython.display's Markdown, HTML, Image... make of their data: its plain repr when displayed."""

    def __init__(self, data=None, *args, **kwargs):
        self.data = data

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.data!r:.60}>"


class NotebookModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds google.colab and IPython.display where no installed package does, and makes them."""

    def __init__(self, display):
        self._makers = {"google": lambda: _package("google"), "google.colab": _colab,
                        "IPython": _ipython, "IPython.display": lambda: _ipython_display(display)}

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


def _ipython() -> types.ModuleType:
    ipython = _package("IPython")
    ipython.get_ipython = lambda: None  # not running in IPython, as a script's get_ipython() says
    return ipython


def _ipython_display(display) -> types.ModuleType:
    module = types.ModuleType("IPython.display")
    vars(module).update({name: type(name, (Shown,), {}) for name in SHOWN}, display=display, clear_output=_nothing)
    return module
