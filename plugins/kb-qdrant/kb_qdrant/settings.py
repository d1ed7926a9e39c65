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

import re
from collections.abc import Mapping
from pathlib import Path

import attrs

from kb_core import ConfigError

URL_ENV = "KB_QDRANT_URL"
KEY_ENV = "KB_QDRANT_API_KEY"
LOCAL_FOLDER = "local"
_PREFIX_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


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
        url = str(environ.get(URL_ENV) or options.get("url") or "").strip().rstrip("/")
        prefix = str(options.get("collection_prefix") or "kb")
        if not _PREFIX_RE.match(prefix):
            raise ConfigError(
                f"[backends.qdrant] collection_prefix = {prefix!r} is not 1-32 letters, digits, '_' or '-'",
                hint="set it to a short name such as 'kb' or 'notes'",
            )
        try:
            timeout = float(options.get("timeout_s", 30.0))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ConfigError("[backends.qdrant] timeout_s must be a number of seconds") from None
        if url:
            if not url.startswith(("http://", "https://")):
                raise ConfigError(
                    f"invalid Qdrant URL {url!r}",
                    hint=f"set [backends.qdrant] url (or {URL_ENV}) like http://127.0.0.1:6333",
                )
            key_env = str(options.get("api_key_env") or KEY_ENV)
            key = str(options.get("api_key") or environ.get(key_env) or "")
            return cls(url=url, path=None, api_key=key, collection_prefix=prefix, timeout_s=timeout)
        path = Path(str(options["path"])).expanduser() if options.get("path") else directory / LOCAL_FOLDER
        return cls(url=None, path=path, collection_prefix=prefix, timeout_s=timeout)

    @property
    def where(self) -> str:
        """Where the vectors are, for messages and the fingerprint (never the key)."""
        return self.url if self.url else f"local:{self.path}"
