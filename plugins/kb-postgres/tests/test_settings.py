"""``[backends.postgres]``: declared once, checked at start, and a connection string never shown with its password."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kb_postgres.settings import OPTIONS, URL_ENV, PostgresSettings, describe
from psycopg.conninfo import make_conninfo

from kb_core import ConfigError
from kb_core.testing import load_registry

WORDS = st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=20)


def test_the_store_and_its_options_are_registered() -> None:
    registry = load_registry()
    assert "postgres" in registry.names("stores")
    assert registry.options["postgres"] == OPTIONS and {"url", "schema"} <= set(OPTIONS)
    assert registry.options_plugins["postgres"] == "postgres"  # declared by this plugin (its entry point's name)


def test_a_url_is_required_and_the_environment_overrides_it() -> None:
    with pytest.raises(ConfigError, match=r"url is not set .*pip install pgserver"):
        PostgresSettings.resolve({}, {})
    settings = PostgresSettings.resolve({"url": "postgresql://a@one/kb"}, {URL_ENV: "postgresql://b@two/kb"})
    assert (settings.where, settings.connect_timeout) == ("postgresql://b@two/kb (schema kb)", 10)
    with pytest.raises(ConfigError, match="not a libpq connection string"):
        PostgresSettings.resolve({"url": "host='unterminated password=x"}, {})


@given(password=st.text(st.characters(blacklist_categories=["Cs"]), min_size=6, max_size=30), user=WORDS, host=WORDS)
def test_a_described_connection_string_is_one_line_without_the_password(password: str, user: str, host: str) -> None:
    marked = "\x00" not in password and password.strip() and password not in f"postgresql://{user}@{host}:5432/kb"
    if not marked:
        return
    for url in (
        make_conninfo(user=user, password=password, host=host, port="5432", dbname="kb"),
        make_conninfo(f"postgresql://{quote(user, safe='')}:{quote(password, safe='')}@{quote(host, safe='')}/kb"),
    ):
        shown = describe(url)
        assert password not in shown and "\n" not in shown and shown.startswith("postgresql://")
