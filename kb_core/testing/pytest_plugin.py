"""kb's pytest plugin (entry point ``pytest11``, installed with kb-core): test support for any plugin's tests.

Turn the isolated environment on in the project's pytest configuration::

    [tool.pytest.ini_options]
    kb_isolated_environment = true
    kb_keep_environment = ["KB_OLLAMA_URL"]   # KB_* variables a test run may keep (optional)

Every test then runs with no user configuration, no stray ``KB_*`` variables and the platform's
folders (configuration, data, state) under a temporary home (:func:`isolate_environment`). It is off
unless asked for, so installing kb-core changes no other project's tests.

Fixtures, whether isolation is on or not:

- ``kb_test_plugins``: the ``KB_PLUGIN_MODULES`` value that gives a ``kb`` subprocess the test indexes;
- ``make_test_kb``: a factory of knowledge bases in temporary folders on the test indexes
  (``make_test_kb()``, ``make_test_kb("other", search__mode="lexical")``: dotted overrides with ``__``),
  closed after the test;
- ``fake_chat_server``: a running :class:`~kb_core.testing.chat_server.FakeChatServer` (Ollama's API and
  the OpenAI-compatible one on a loopback port), stopped after the test;
- ``closed_port``: a loopback port nothing listens on; ``unanswered_port``: one whose connections hang.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.testing import chat_server, fakes
from kb_core.testing.fakes import isolate_environment

#: ``KB_PLUGIN_MODULES`` for the test indexes (``test-lexical``, ``test-vector``).
TEST_PLUGIN_MODULES = "kb_core.testing.indexes:TestIndexesPlugin"
#: Both test indexes, as a configuration override.
TEST_INDEXES = {"indexes.enabled": ["test-lexical", "test-vector"]}


def pytest_addoption(parser: pytest.Parser) -> None:
    """The two settings of the plugin."""
    parser.addini("kb_isolated_environment", type="bool", default=False, help="kb: isolate every test's environment")
    parser.addini("kb_keep_environment", type="args", default=[], help="kb: KB_* variables an isolated test keeps")


@pytest.fixture(autouse=True)
def _kb_isolated_environment(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    if request.config.getini("kb_isolated_environment"):
        keep = tuple(request.config.getini("kb_keep_environment"))
        isolate_environment(monkeypatch, tmp_path_factory.mktemp("home"), keep=keep)


@pytest.fixture
def kb_test_plugins() -> str:
    """``KB_PLUGIN_MODULES`` that loads the test indexes into a ``kb`` subprocess."""
    return TEST_PLUGIN_MODULES


@pytest.fixture
def make_test_kb(tmp_path: Path) -> Iterator[Callable[..., KnowledgeBase]]:
    """Factory: a KnowledgeBase in a temporary folder on the test indexes; keyword args are dotted overrides."""
    from kb_core.extend.registry import load_registry, registry
    from kb_core.testing.indexes import TestIndexesPlugin

    opened: list[KnowledgeBase] = []
    plugins = registry()  # the process's, when KB_PLUGIN_MODULES already loads the test indexes
    if "test-lexical" not in plugins.names("indexes"):
        plugins = load_registry(extra_plugins=[("kb-test-indexes", TestIndexesPlugin())])

    def factory(name: str = "kb", **overrides: object) -> KnowledgeBase:
        dotted = TEST_INDEXES | {key.replace("__", "."): value for key, value in overrides.items()}
        kb = KnowledgeBase(load_config(kb_dir=tmp_path / name, overrides=dotted, environ={}), plugins)
        opened.append(kb)
        return kb

    yield factory
    for kb in opened:
        kb.close()


@pytest.fixture
def fake_chat_server() -> Iterator[chat_server.FakeChatServer]:
    """A fake Ollama and OpenAI-compatible chat server on a free loopback port (see ``chat_server``)."""
    with chat_server.serve_chat() as fake:
        yield fake


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening on it."""
    return fakes.free_port()


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A loopback port whose accept queue is full, so new connections hang until they time out."""
    with fakes.unanswered_port() as port:
        yield port
