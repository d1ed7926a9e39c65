"""Weight repacking: off where llama.cpp's AMX kernels crash, a setting users can change, loads that restore."""

from __future__ import annotations

import llama_cpp
import llama_cpp.llama_cpp as bindings
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core import KbError
from kb_llamacpp.loading import CRASH_HINT, build_uses_amx, model_parameters, use_extra_buffers, weight_repacking


@pytest.mark.parametrize(
    ("given_value", "expected"),
    [("auto", "auto"), ("on", "on"), ("OFF", "off"), (True, "on"), (False, "off"), ("", "auto"), (None, "auto")],
)
def test_weight_repacking_accepts_its_spellings(given_value: object, expected: str) -> None:
    assert weight_repacking(given_value) == expected


@given(st.text(max_size=30))
def test_weight_repacking_refuses_anything_else_in_one_line(text: str) -> None:
    cleaned = text.strip().lower()
    if cleaned in ("auto", "on", "off", "true", "false", ""):
        assert weight_repacking(text) in ("auto", "on", "off")
    else:
        with pytest.raises(KbError) as raised:
            weight_repacking(text)
        assert "\n" not in raised.value.message.replace(text[:40], "")


def test_auto_turns_repacking_off_exactly_where_the_build_uses_amx() -> None:
    assert build_uses_amx() == (b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info())
    assert use_extra_buffers("auto") is not build_uses_amx()
    assert use_extra_buffers("on") and not use_extra_buffers("off")


def test_model_parameters_change_one_field_for_one_load_only() -> None:
    original = bindings.llama_model_default_params
    assert original().use_extra_bufts
    with model_parameters(False):
        assert not bindings.llama_model_default_params().use_extra_bufts
        assert bindings.llama_model_default_params().n_gpu_layers == original().n_gpu_layers
    assert bindings.llama_model_default_params is original
    with pytest.raises(RuntimeError), model_parameters(False):
        raise RuntimeError("a failed load")
    assert bindings.llama_model_default_params is original
    with model_parameters(True):
        assert bindings.llama_model_default_params is original


def test_the_crash_hint_names_the_setting_and_a_reinstall_of_a_declared_dependency() -> None:
    assert "weight_repacking = 'off'" in CRASH_HINT
    assert "pip install --force-reinstall --no-cache-dir llama-cpp-python" in CRASH_HINT
