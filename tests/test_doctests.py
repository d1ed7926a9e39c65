"""The examples in the docstrings (``>>>``) of kb_core and of kb's plugins run and give what they show: an example
that rots is a lie in the docs a reader trusts (none ran before; one had rotted)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import kb_core

MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(kb_core.__path__, "kb_core.")
    if ".testing" not in name and not name.endswith("__main__") and name != "kb_core.remote"  # (moved, deprecated)
)


#: kb's own plugins' packages (each under plugins/).
PLUGINS = sorted(path.parent.name for path in (Path(__file__).parents[1] / "plugins").glob("kb-*/kb_*/__init__.py"))


def _failures(name: str) -> str:
    """What fails among the docstring examples of module ``name`` ('' when none does)."""
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    return f"{name}: {result.failed} of {result.attempted} docstring examples fail" if result.failed else ""


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    assert _failures(name) == ""


@pytest.mark.needs_plugins
@pytest.mark.parametrize("package", PLUGINS)
def test_the_plugins_docstring_examples_hold(package: str) -> None:
    plugin = pytest.importorskip(package, reason=f"{package} is not installed")
    names = [name for _, name, _ in pkgutil.walk_packages(plugin.__path__, f"{package}.") if ".testing" not in name]
    assert [failed for failed in map(_failures, names) if failed] == []
