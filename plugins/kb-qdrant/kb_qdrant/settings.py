"""Where the Qdrant index lives: a server or cluster (``url`` + ``api_key``), or local mode in a folder.

Read from ``[backends.qdrant]``:

| key | default | meaning |
|---|---|---|
| ``url`` | unset | a Qdrant server or cluster (``http://127.0.0.1:6333``); env ``KB_QDRANT_URL`` overrides |
| ``api_key`` / ``api_key_env`` | env ``KB_QDRANT_API_KEY`` | the key for ``url`` (prefer the environment) |
| ``path`` | ``<kb>/indexes/qdrant/local`` | local mode's folder, when no ``url`` is set |
| ``collection_prefix`` | ``kb`` | collections are ``<prefix>_<model>_<dims>``; one per knowledge base on a server |
| ``timeout_s`` | ``30`` | seconds one request to a server may take |
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from kb_core import ConfigError
from kb_core.plugin.options import Option, checked_options

URL_ENV = "KB_QDRANT_URL"
KEY_ENV = "KB_QDRANT_API_KEY"
LOCAL_FOLDER = "local"
URL_PATTERN = r"https?://\S+"

#: The options of ``[backends.qdrant]``, declared to kb (``register_options``): checked at start.
OPTIONS: dict[str, Option] = {
    "url": Option.text(
        "",
        f"a Qdrant server or cluster, http://127.0.0.1:6333 ('': local mode); {URL_ENV} overrides",
        pattern=f"({URL_PATTERN})?",
        shape="an http:// or https:// URL, or '' for local mode",
    ),
    "api_key": Option.text("", f"the key for url (prefer the environment, {KEY_ENV})", secret=True),
    "api_key_env": Option.text(
        KEY_ENV,
        "the environment variable that holds the key",
        pattern=r"[A-Za-z_][A-Za-z0-9_]{0,127}",
        shape="an environment variable's name",
    ),
    "path": Option.path("", "local mode's folder ('': <kb>/indexes/qdrant/local)"),
    "collection_prefix": Option.text(
        "kb",
        "collections are <prefix>_<model>_<dims>: one prefix per knowledge base on a server",
        pattern=r"[A-Za-z0-9_-]{1,32}",
        shape="1-32 letters, digits, '_' or '-'",
    ),
    "timeout_s": Option.timeout(30.0, "seconds one request to a server may take (0: no limit)"),
}


@attrs.frozen
class QdrantSettings:
    """A resolved location: ``url`` (server mode) or ``path`` (local mode), never both."""

    url: str | None
    path: Path | None
    api_key: str = attrs.field(default="", repr=False)
    collection_prefix: str = "kb"
    timeout_s: float = 30.0

    @classmethod
    def resolve(cls, directory: Path, options: Mapping[str, object], environ: Mapping[str, str]) -> QdrantSettings:
        """Settings for an index whose own folder is ``directory``; ConfigError for invalid values."""
        values = checked_options("qdrant", OPTIONS, options)
        url = str(environ.get(URL_ENV) or values["url"]).strip().rstrip("/")
        prefix, timeout = str(values["collection_prefix"]), float(values["timeout_s"])
        if url:
            if not url.startswith(("http://", "https://")):
                raise ConfigError(
                    f"invalid Qdrant URL {url!r}",
                    hint=f"set [backends.qdrant] url (or {URL_ENV}) like http://127.0.0.1:6333",
                )
            key = str(values["api_key"] or environ.get(str(values["api_key_env"])) or "")
            return cls(url=url, path=None, api_key=key, collection_prefix=prefix, timeout_s=timeout)
        path = Path(str(values["path"])).expanduser() if values["path"] else directory / LOCAL_FOLDER
        return cls(url=None, path=path, collection_prefix=prefix, timeout_s=timeout)

    @property
    def where(self) -> str:
        """Where the vectors are, for messages and the fingerprint (never the key)."""
        return self.url if self.url else f"local:{self.path}"
