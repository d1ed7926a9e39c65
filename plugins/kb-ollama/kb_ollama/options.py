"""The options of ``[backends.ollama]``, declared to kb when the plugin registers: checked at start."""

from __future__ import annotations

from kb_core.plugin.options import Option
from kb_core.plugin.remote import SERVER_URL_PATTERN, SERVER_URL_SHAPE

DEFAULT_URL = "http://127.0.0.1:11434"

OPTIONS: dict[str, Option] = {
    "url": Option.text(
        DEFAULT_URL,
        "where the server listens (host:port alone means http on that port); KB_OLLAMA_URL overrides",
        nonempty=True,
        pattern=SERVER_URL_PATTERN,
        shape=SERVER_URL_SHAPE,
    ),
    "model": Option.text("", "the Ollama model name, e.g. llama3.2 ('': [models.llm] model)"),
}
