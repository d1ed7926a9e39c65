"""Token counting, context length, health checks, settings and registration."""

from __future__ import annotations

import pytest

from kb_core import Config, ConfigError, KnowledgeBase
from kb_core.plugin import LanguageModel, Problem
from kb_core.testing import load_registry
from kb_ollama.client import BaseUrl, OllamaApiError
from kb_ollama.model import ModelNotPulled, make_model, upper_bound_tokens


def test_count_tokens_is_the_servers_prompt_eval_count(fake_ollama, build_model):
    text = "Rayleigh scattering makes the sky blue, mostly."
    assert build_model().count_tokens(text) == fake_ollama.count(text)


def test_count_tokens_asks_for_the_raw_prompt_with_the_generation_context(fake_ollama, build_model):
    build_model(context_tokens=3000).count_tokens("하늘은 왜 파란가요?")
    (body,) = fake_ollama.bodies("/api/generate")
    assert body["prompt"] == "하늘은 왜 파란가요?" and body["raw"] is True and body["stream"] is False
    assert body["options"]["num_predict"] == 1 and body["options"]["num_ctx"] == 3000


def test_count_tokens_is_cached_per_text_and_empty_text_is_free(fake_ollama, build_model):
    model = build_model()
    assert model.count_tokens("") == 0
    assert model.count_tokens("one two") == model.count_tokens("one two") == 3
    assert model.count_tokens("three") == 2
    assert len(fake_ollama.bodies("/api/generate")) == 2


def test_count_tokens_falls_back_to_the_upper_bound_when_the_server_does_not_say(fake_ollama, build_model):
    fake_ollama.report_counts = False
    text = "天空为什么是蓝色的"
    assert build_model().count_tokens(text) == upper_bound_tokens(text) == len(text.encode()) + 2


def test_text_that_fills_the_context_is_counted_by_the_upper_bound(fake_ollama, build_model):
    text = "word " * 50
    assert fake_ollama.count(text) > 20
    assert build_model(context_tokens=20).count_tokens(text) == upper_bound_tokens(text)


def test_context_length_comes_from_model_info_and_caps_the_configured_context(fake_ollama, build_model):
    fake_ollama.models[fake_ollama.model]["context_length"] = 2048
    model = build_model(context_tokens=4096)
    assert model.context_tokens == 4096  # nothing asked yet
    model.facts()
    assert model.context_tokens == 2048
    assert model.model_ref.id == "llama3.2:latest" and model.model_ref.provider == "ollama"
    assert model.model_ref.path == f"sha256:{fake_ollama.digest}"
    assert fake_ollama.bodies("/api/show") == [{"model": "llama3.2:latest"}]


def test_context_length_falls_back_to_the_num_ctx_parameter(fake_ollama, build_model):
    fake_ollama.models[fake_ollama.model] |= {"context_length": None, "num_ctx": 1024}
    model = build_model(context_tokens=4096)
    model.facts()
    assert model.context_tokens == 1024


def test_a_smaller_configured_context_is_kept(fake_ollama, build_model):
    model = build_model(context_tokens=2000)
    model.facts()
    assert model.context_tokens == 2000


def test_check_is_empty_when_all_is_well(fake_ollama, build_model):
    assert build_model().check() == []


def test_check_reports_a_server_that_is_not_running(build_model, closed_port):
    (problem,) = build_model(url=f"http://127.0.0.1:{closed_port}").check()
    assert problem.component == "ollama" and "connection refused" in problem.message
    assert "ollama serve" in problem.fix


def test_check_reports_a_model_that_is_not_pulled(fake_ollama, build_model):
    assert build_model(model="mistral").check() == [
        Problem(
            "ollama",
            f"Ollama model 'mistral' is not pulled on {fake_ollama.url} (pulled: llama3.2:latest)",
            fix="run 'ollama pull mistral'",
        )
    ]


def test_check_reports_a_context_longer_than_the_model_has(fake_ollama, build_model):
    fake_ollama.models[fake_ollama.model]["context_length"] = 2048
    (problem,) = build_model(context_tokens=8192).check()
    assert "8192 exceeds the context length" in problem.message and "2048" in problem.message
    assert problem.fix == "set [models.llm] context_tokens = 2048"


def test_settings_url_model_and_environment_override():
    config = Config()
    config.models.llm.model = "from-llm-section"
    model = make_model(config, {}, environ={})
    assert str(model.settings.url) == "http://127.0.0.1:11434" and model.settings.model == "from-llm-section"
    model = make_model(config, {"url": "http://127.0.0.1:9999", "model": "m"}, environ={})
    assert str(model.settings.url) == "http://127.0.0.1:9999" and model.settings.model == "m"
    model = make_model(config, {"url": "http://127.0.0.1:9999"}, environ={"KB_OLLAMA_URL": "127.0.0.2:1234"})
    assert str(model.settings.url) == "http://127.0.0.2:1234"


def test_timeouts_come_from_the_llm_section():
    config = Config()
    config.models.llm.connect_timeout_s, config.models.llm.read_timeout_s, config.models.llm.total_timeout_s = 1, 2, 3
    timeouts = make_model(config, {"model": "m"}, environ={}).settings.timeouts
    assert (timeouts.connect_s, timeouts.read_s, timeouts.total_s) == (1, 2, 3)


def test_no_model_configured_is_a_config_error():
    with pytest.raises(ConfigError, match=r"\[backends.ollama\] model"):
        make_model(Config(), {}, environ={})


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
        ("localhost:11434/", "http://localhost:11434"),
        ("127.0.0.1", "http://127.0.0.1:11434"),
        ("http://[::1]:8080/ollama/", "http://[::1]:8080/ollama"),
        ("https://gpu-box.lan", "https://gpu-box.lan:443"),
    ],
)
def test_base_url_parsing(url, expected):
    assert str(BaseUrl.parse(url)) == expected


@pytest.mark.parametrize("url", ["ftp://host", "http://", "http://host:99999", "://"])
def test_invalid_urls_are_config_errors(url):
    with pytest.raises(ConfigError, match="invalid Ollama URL"):
        BaseUrl.parse(url)


def test_the_entry_point_registers_the_backend_and_the_app_builds_it(fake_ollama):
    registry = load_registry()
    registration = registry.get("language_models", "ollama")
    assert registration.plugin == "ollama"
    assert any(p.distribution == "kb-ollama" for p in registry.plugins)
    config = Config(backends={"ollama": {"url": fake_ollama.url, "model": "llama3.2"}})
    model = KnowledgeBase(config, registry).language_model("ollama")
    assert isinstance(model, LanguageModel)
    assert model.check() == []


def test_a_404_that_is_not_about_the_model_is_not_reported_as_not_pulled(fake_ollama, build_model):
    model = build_model()
    with pytest.raises(OllamaApiError, match=r"HTTP 404\): 404 page not found"):
        model._call(lambda: model.client.post_json("/api/embeddings-v0", {"model": "llama3.2"}))
    with pytest.raises(ModelNotPulled):
        model._call(lambda: model.client.post_json("/api/show", {"model": "absent"}))
