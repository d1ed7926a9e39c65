"""Where the server is, which model, which key: from ``[backends.openai]``, ``[models.llm]`` and the environment.

The API key is held in a :class:`Secret`, whose ``repr`` and ``str`` never show it, so it cannot
end up in a message, a log line, a ``--json`` payload or an answer by accident.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

import attrs

from kb_core import Config, ConfigError
from kb_core.plugin.options import Option, checked_options
from kb_core.plugin.remote import SERVER_URL_PATTERN, SERVER_URL_SHAPE, RemoteServer, Timeouts

DEFAULT_URL = "http://127.0.0.1:8080/v1"
URL_ENV = "KB_OPENAI_URL"
KEY_ENV = "KB_OPENAI_API_KEY"
MODEL_ENV = "KB_OPENAI_MODEL"
TOKENIZE_MODES = ("auto", "off")
#: The options of ``[backends.openai]``, declared to kb (``register_options``): checked at start.
OPTIONS: dict[str, Option] = {
    "url": Option.text(
        DEFAULT_URL,
        f"the base URL (host:port alone means http://host:port/v1); {URL_ENV} overrides",
        nonempty=True,
        pattern=SERVER_URL_PATTERN,
        shape=SERVER_URL_SHAPE,
    ),
    "model": Option.text("", f"the model id sent ('': [models.llm] model, else the server's only one); {MODEL_ENV}"),
    "api_key": Option.text("", f"the API key itself (prefer the environment, {KEY_ENV})", secret=True),
    "api_key_env": Option.text(
        KEY_ENV,
        "the environment variable that holds the API key",
        pattern=r"[A-Za-z_][A-Za-z0-9_]{0,127}",
        shape="an environment variable's name",
    ),
    "tokenize": Option.text(
        "auto",
        "auto: count tokens with the server's tokenize endpoint when it has one; off: never ask",
        choices=TOKENIZE_MODES,
    ),
}
#: How messages name the server, and where its URL is set.
OPENAI = RemoteServer(
    backend="openai",
    name="the OpenAI-compatible server",
    speaker="the server",
    url_env=URL_ENV,
    start="start the server",
    expected="the server's /v1 API",
)


class Secret:
    """A string that is never shown: ``repr``/``str`` print ``'***'``; :meth:`reveal` gives the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret itself, for the Authorization header only."""
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret('')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def parse_base_url(url: str) -> str:
    """``http://host:port/v1`` normalised (no trailing slash); ``host:port`` alone means ``http://host:port/v1``.

    Raises ConfigError when it is not an http(s) URL with a host and a valid port.
    """
    text = url.strip()
    if "://" not in text:
        text = f"http://{text}"
    try:
        parts = urllib.parse.urlsplit(text)
        _ = parts.port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"invalid OpenAI-compatible server URL {url!r}",
            hint=f"set {OPENAI.url_setting} like http://127.0.0.1:8080/v1",
        )
    path = parts.path.rstrip("/") or "/v1"
    netloc = parts.netloc.rsplit("@", 1)[-1]  # never keep user:password@ in a URL that messages show
    return f"{parts.scheme}://{netloc}{path}"


@attrs.frozen
class OpenAISettings:
    """Everything the backend needs for one invocation."""

    base_url: str
    model: str  # "" = the server's only model, found through GET /models
    api_key: Secret = attrs.field(repr=False)
    context_tokens: int
    seed: int
    timeouts: Timeouts
    tokenize: str = "auto"

    @classmethod
    def resolve(cls, config: Config, options: Mapping[str, object], environ: Mapping[str, str]) -> OpenAISettings:
        """Settings from ``[backends.openai]`` (url, model, api_key, api_key_env, tokenize) and ``[models.llm]``.

        The key comes from ``api_key`` in the table, else from the environment variable named by
        ``api_key_env`` (default ``KB_OPENAI_API_KEY``). ``KB_OPENAI_URL`` overrides ``url``.
        """
        llm = config.models.llm
        values = checked_options("openai", OPTIONS, options, config.sources)
        url = OPENAI.configured_url(values, environ, DEFAULT_URL)
        model = str(environ.get(MODEL_ENV) or values["model"] or llm.model or "").strip()
        key = str(values["api_key"] or environ.get(str(values["api_key_env"])) or "")
        tokenize = str(values["tokenize"])
        return cls(parse_base_url(url), model, Secret(key), llm.context_tokens, llm.seed, Timeouts.of(llm), tokenize)

    @property
    def root_url(self) -> str:
        """The server root: the base URL without a trailing ``/v1`` (where llama.cpp's extras live)."""
        return self.base_url.removesuffix("/v1")

    @property
    def host(self) -> str:
        """The server's host name (or address), as the URL gives it."""
        return urllib.parse.urlsplit(self.base_url).hostname or ""
