"""Configuration: defaults < TOML file < ``KB_*`` environment < command-line flags.

The file is ``--config PATH``, else ``$KB_CONFIG``, else ``config.toml`` in the platform's config
directory (if it exists). Environment overrides name a key with double underscores:
``KB_SEARCH__DEFAULT_K=20``, ``KB_MODELS__LLM__BACKEND=ollama``. ``KB_HOME`` (or ``--kb DIR``)
chooses the knowledge base directory. :func:`load_config` records where every value came from,
for ``kb config show``, and checks every value against :mod:`kb_core.config_schema` (a key's type,
range or choices): a bad one is a one-line ConfigError naming the key, the value and its source.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import attrs
import cattrs
import platformdirs

from kb_core.config_schema import RULES, check, text_keys
from kb_core.errors import ConfigError

APP = "kb"


@attrs.define
class IngestConfig:
    """How files become chunks."""

    max_file_bytes: int = 20_000_000
    chunk_target_tokens: int = 240
    chunk_max_tokens: int = 256
    chunk_overlap_tokens: int = 64
    ignore: list[str] = attrs.field(factory=list)
    batch_documents: int = 256
    follow_symlinks: bool = False  # follow links that lead outside the ingested folder
    ocr: str = "auto"  # the OCR engine for page images: "auto" (the one installed), "off", or its name


@attrs.define
class EmbeddingConfig:
    """The embedder that vector indexes use (and whose tokenizer sizes chunks)."""

    name: str = "minilm"
    path: str = ""
    threads: int = 0
    batch_size: int = 32


@attrs.define
class LlmConfig:
    """The language model that answers questions."""

    backend: str = "llamacpp"
    model: str = ""
    temperature: float = 0.0
    seed: int = 0
    context_tokens: int = 4096
    max_tokens: int = 384
    threads: int = 0
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 120.0
    total_timeout_s: float = 600.0


@attrs.define
class ModelsConfig:
    """Models by role."""

    embedding: EmbeddingConfig = attrs.field(factory=EmbeddingConfig)
    llm: LlmConfig = attrs.field(factory=LlmConfig)


@attrs.define
class SearchConfig:
    """Retrieval defaults."""

    default_k: int = 10
    mode: str = "hybrid"
    rrf_k: int = 60
    fanout: int = 50


#: The score gate per search mode, measured on the fixture corpus and on SciFact with off-topic
#: questions: on-topic questions score above it, clearly off-topic ones below. Lexical scores
#: separate less well (chance word matches), hence its lower gate. See README "Search scores".
DEFAULT_GATES: dict[str, float] = {"lexical": 0.15, "vector": 0.35, "hybrid": 0.3}


@attrs.define
class RagConfig:
    """The answer pipeline. ``score_gate`` overrides the per-mode gates when set."""

    score_gate: float | None = None
    score_gates: dict[str, float] = attrs.field(factory=lambda: dict(DEFAULT_GATES))
    max_context_tokens: int = 2048
    prompt_template_version: str = "auto"
    constrained: bool = False
    max_chunks: int = 3  # evidence entries packed at most
    min_relative_score: float = 0.75  # a hit behind the first is packed when it scores this share of the top
    # (or, for a yes/no question, is from the first hit's document)
    answer_check: float = 0.62  # the least P("the passages state the answer") the judge gives an answer; 0 = off
    verdict_no_share: float = 0.1  # a yes/no answer opens "No." when P(No)/(P(Yes)+P(No)) >= this; 0.5 = as the model
    verdict_confidence: float = 0.5  # the least confidence of a stated verdict (kb_core.answers.verdicts); 0 = all
    unsupported_claims: str = "refuse"  # "refuse" the answer, or "drop" the unsupported sentences with a note
    computations: bool = True  # a number to be worked out is computed by kb from the model's expression, or
    # kept from the ordinary path only when a passage states it for what is asked (docs/evaluation.md)

    def gate(self, mode: str) -> float:
        """The score a top hit must reach in ``mode`` for the model to be asked."""
        if self.score_gate is not None:
            return self.score_gate
        return self.score_gates.get(mode, DEFAULT_GATES["hybrid"])


@attrs.define
class ConversationsConfig:
    """Follow-up questions in a thread (:mod:`kb_core.conversations`)."""

    standalone: str = "model"  # how a follow-up is made standalone: "model", "previous_turn" or "as_asked"
    history_tokens: int = 0  # the most tokens of the turns before a follow-up shown to the model; 0 = none
    # (measured: no better answers for ~1.5 s more a turn, docs/evaluation.md "Conversations")


@attrs.define
class IndexesConfig:
    """Which registered indexes follow the store of record."""

    enabled: list[str] = attrs.field(factory=lambda: ["tantivy", "sqlitevec"])


@attrs.define
class StoreConfig:
    """Which registered store of record keeps the knowledge base (``register_stores``)."""

    backend: str = "sqlite"


@attrs.define
class Config:
    """The effective configuration of one invocation."""

    kb_dir: str = ""
    ingest: IngestConfig = attrs.field(factory=IngestConfig)
    models: ModelsConfig = attrs.field(factory=ModelsConfig)
    search: SearchConfig = attrs.field(factory=SearchConfig)
    rag: RagConfig = attrs.field(factory=RagConfig)
    conversations: ConversationsConfig = attrs.field(factory=ConversationsConfig)
    indexes: IndexesConfig = attrs.field(factory=IndexesConfig)
    store: StoreConfig = attrs.field(factory=StoreConfig)
    backends: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    sources: dict[str, str] = attrs.field(factory=dict, eq=False)

    @property
    def kb_path(self) -> Path:
        """The knowledge base directory."""
        return Path(self.kb_dir)

    def backend_options(self, name: str) -> dict[str, Any]:
        """The free-form ``[backends.NAME]`` table of a plugin (empty when absent)."""
        return dict(self.backends.get(name, {}))


_converter = cattrs.Converter(forbid_extra_keys=True)


def default_config_path() -> Path:
    """The platform's config file path (it need not exist)."""
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def default_kb_dir() -> Path:
    """The platform's data directory for the default knowledge base."""
    return Path(platformdirs.user_data_dir(APP)) / "default"


#: The deepest a setting's value may nest tables and arrays (a ``[backends.NAME]`` table in a table is 2).
MAX_DEPTH = 16
#: The dotted names of the configuration's tables (``search``, ``models.llm``, ``rag.score_gates``): what a
#: file's table fills key by key, the rest keeping their defaults.
_TABLES = frozenset(".".join(key.split(".")[:n]) for key in RULES for n in range(1, key.count(".") + 1)) | {
    key for key, rule in RULES.items() if rule.kind == "gates"
}


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``data``'s settings by dotted key: a table of the configuration is entered, any other value (a table
    given where a setting is, a plugin's ``[backends]`` tables) is one setting, checked as a whole."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and dotted in _TABLES:
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def _set(data: dict[str, Any], dotted: str, value: Any, source: str) -> None:
    """Set ``dotted`` in ``data``; a ConfigError when a part of its name is a setting, not a table
    (``KB_SEARCH__FANOUT__X`` while ``search.fanout`` is a number)."""
    *parents, leaf = dotted.split(".")
    for depth, part in enumerate(parents):
        node = data.setdefault(part, {})
        if not isinstance(node, dict):
            parent = ".".join(parents[: depth + 1])
            raise ConfigError(
                f"invalid configuration: {dotted[:80]} ({source}) names a key inside {parent}, which is a setting, "
                "not a table",
                hint=f"set {parent} itself",
            )
        data = node
    data[leaf] = value


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests tables and arrays deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _parsed(text: str, what: str) -> dict[str, Any]:
    """``text`` as TOML, within :data:`MAX_DEPTH`; a ConfigError naming ``what`` (the file) when it is not."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} is not valid TOML: {exc}", hint="fix it and run again") from None
    except (RecursionError, MemoryError):  # arrays nested thousands deep
        raise ConfigError(f"{what} nests arrays or tables too deep", hint=_DEPTH_HINT) from None
    except ValueError as exc:  # an integer past Python's 4,300 digits
        raise ConfigError(
            f"{what} holds a value kb cannot read: {str(exc)[:80]}", hint="fix it and run again"
        ) from None
    if _too_deep(data):
        raise ConfigError(f"{what} nests arrays or tables too deep", hint=_DEPTH_HINT)
    return data


_DEPTH_HINT = f"no setting needs more than {MAX_DEPTH} levels"


def _record(sources: dict[str, str], key: str, source: str) -> None:
    """``key`` was set from ``source``: a table set whole replaces what its keys came from."""
    for known in [k for k in sources if k.startswith(key + ".")]:
        del sources[known]
    sources[key] = source


def parse_value(raw: str) -> Any:
    """A setting given as text (``KB_*`` variables, ``--config key=value``): a TOML value, else the text.

    >>> parse_value("3"), parse_value('["a"]'), parse_value("hybrid")
    (3, ['a'], 'hybrid')
    """
    try:
        return _parsed(f"v = {raw}", "the value")["v"]
    except ConfigError:
        return raw


def _is_file(path: Path) -> bool:
    """Whether the default config file exists (a folder we may not enter has none for us)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _read_file(path: Path) -> dict[str, Any]:
    try:
        return _parsed(path.read_text(encoding="utf-8"), f"config file {path}")
    except FileNotFoundError:
        raise ConfigError(
            f"config file not found: {path}", hint="check the path given to --config or KB_CONFIG"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}", hint="fix the file and run again") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None


def load_config(
    config_path: str | Path | None = None,
    kb_dir: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Config:
    """Build the effective configuration and remember where each value came from."""
    env = os.environ if environ is None else environ
    data: dict[str, Any] = _converter.unstructure(Config())
    data.pop("sources")
    sources = dict.fromkeys(_flatten(data), "default")

    explicit = config_path or env.get("KB_CONFIG")
    path = Path(explicit).expanduser() if explicit else default_config_path()
    if explicit or _is_file(path):
        for key, value in _flatten(_read_file(path)).items():
            _set(data, key, value, f"file:{path}")
            _record(sources, key, f"file:{path}")

    texts = text_keys()
    for name, raw in sorted(env.items()):
        if name.startswith("KB_") and "__" in name:
            key = name[3:].lower().replace("__", ".")
            value = parse_value(raw)
            text = key in texts and not isinstance(value, str)  # MODEL=7 is the text 7
            _set(data, key, raw if text else value, f"env:{name}")
            _record(sources, key, f"env:{name}")
    if env.get("KB_HOME"):
        data["kb_dir"], sources["kb_dir"] = env["KB_HOME"], "env:KB_HOME"

    for key, value in (overrides or {}).items():
        if value is not None:
            _set(data, key, value, "flag")
            _record(sources, key, "flag")
    if kb_dir is not None:
        data["kb_dir"], sources["kb_dir"] = str(kb_dir), "flag:--kb"
    check(data, sources, _defaults())
    if not data.get("kb_dir"):
        data["kb_dir"] = str(default_kb_dir())
    try:
        data["kb_dir"] = str(Path(data["kb_dir"]).expanduser().resolve())
    except (OSError, RuntimeError, ValueError) as exc:  # ~nobody, a name too long
        raise ConfigError(
            f"invalid configuration: kb_dir {data['kb_dir'][:80]!r} ({sources['kb_dir']}): {exc}"
        ) from None
    config = _structure(data)
    config.sources = sources
    return config


def _defaults() -> dict[str, Any]:
    """Every key's default value, dotted."""
    data = _converter.unstructure(Config())
    data.pop("sources")
    return _flatten(data)


def _structure(data: dict[str, Any]) -> Config:
    """``data`` (checked by :func:`kb_core.config_schema.check`) as a Config; an unknown key is one error line."""
    try:
        return _converter.structure(data, Config)
    except cattrs.BaseValidationError as exc:
        details = "; ".join(_describe(e) for e in cattrs.transform_error(exc))
        raise ConfigError(f"invalid configuration: {details}", hint="see 'kb config show'") from None


def _describe(message: str) -> str:
    return message.replace("$.", "").replace(" @ $", " at top level")


#: Parts of a setting's name that mark a secret: its value is shown as ``***`` by ``kb config show``.
SECRET_MARKERS = ("api_key", "apikey", "token", "secret", "password")
MASK = "***"


def _shown_value(key: str, value: Any) -> Any:
    """``value`` with every secret in it (a nested table's too) replaced by ``***``; no key of the schema is one."""
    if isinstance(value, dict):
        return {k: _shown_value(f"{key}.{k}", v) for k, v in value.items()}
    last = key.rsplit(".", 1)[-1].lower()
    secret = key not in RULES and any(marker in last for marker in SECRET_MARKERS) and not last.endswith("_env")
    return MASK if secret and value not in (None, "") else value


def effective_values(config: Config) -> list[tuple[str, Any, str]]:
    """(key, value, source) for every setting, sorted by key; secrets (``api_key``, tokens) masked."""
    data = _converter.unstructure(config)
    data.pop("sources")
    flat = sorted(_flatten(data).items())
    return [(key, _shown_value(key, value), config.sources.get(key, "default")) for key, value in flat]


def config_to_json(config: Config) -> str:
    """``config`` as JSON, for a child process (:func:`config_from_json` reads it back)."""
    return json.dumps(_converter.unstructure(config))


def config_from_json(text: str) -> Config:
    """The configuration :func:`config_to_json` wrote, checked as :func:`load_config` checks one."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ConfigError("invalid configuration: not a JSON object")
    sources = data.get("sources")
    check(data, sources if isinstance(sources, dict) else {}, _defaults(), fallback="json")
    return _structure(data)
