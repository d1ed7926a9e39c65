"""The options of ``[backends.ollama]``, declared to kb when the plugin registers: checked at start."""

from __future__ import annotations

from kb_core.plugin.options import Option

DEFAULT_URL = "http://127.0.0.1:11434"

OPTIONS: dict[str, Option] = {
    "url": Option.text(
        DEFAULT_URL,
        "where the server listens (host:port alone means http on that port); KB_OLLAMA_URL overrides",
        nonempty=True,
    ),
    "model": Option.text("", "the Ollama model name, e.g. llama3.2 ('': [models.llm] model)"),
}
