"""Options, missing data, registration and the pure helpers: none of these need Tesseract's data
(model files are stand-ins: the engine loads models only when it reads)."""

from __future__ import annotations

import random
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

import kb_tesseract
from kb_core import ConfigError, KbError
from kb_core.plugin import OcrEngine
from kb_core.testing import load_registry
from kb_tesseract import INSTALL, Settings, make_engine
from kb_tesseract.pixels import box_back, clamp_box, join_cjk, turn

APT = (
    "apt-get install -y --no-install-recommends tesseract-ocr-eng tesseract-ocr-osd "
    "tesseract-ocr-script-hang tesseract-ocr-script-hans tesseract-ocr-script-hant"
)


def _tessdata(folder: Path, *models: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for model in models:
        (folder / f"{model}.traineddata").write_bytes(b"stand-in")
    return folder


def test_the_install_command_names_the_debian_packages() -> None:
    assert INSTALL == APT


@pytest.mark.parametrize(
    "models", [(), ("Hangul", "HanS"), ("eng", "Hangul", "HanS")], ids=["empty", "no-eng", "no-osd"]
)
def test_missing_data_names_the_apt_command(tmp_path: Path, models: tuple[str, ...]) -> None:
    folder = _tessdata(tmp_path / "tessdata", *models)
    with pytest.raises(KbError) as raised:
        make_engine({"tessdata": str(folder)})
    assert APT in str(raised.value) and "\n" not in str(raised.value)
    assert str(folder) in raised.value.message


def test_a_missing_folder_names_the_apt_command(tmp_path: Path) -> None:
    with pytest.raises(KbError, match="does not exist") as raised:
        make_engine({"tessdata": str(tmp_path / "nowhere")})
    assert APT in str(raised.value)


def test_the_factory_raises_through_the_registry(tmp_path: Path) -> None:
    from kb_core import Config
    from kb_core.plugin import FactoryContext

    registration = load_registry().get("ocr_engines", "tesseract")
    assert registration.info["licence"] == "Apache-2.0" and "Korean" in registration.info["languages"]
    with pytest.raises(KbError) as raised:
        registration.factory(FactoryContext(Config(), {"tessdata": str(tmp_path)}))
    assert APT in str(raised.value)


def test_listed_models_that_are_missing_are_left_out(tmp_path: Path) -> None:
    engine = make_engine({"tessdata": str(_tessdata(tmp_path, "eng", "osd", "HanS"))})
    assert engine.settings.models == ("eng", "HanS") and engine.settings.missing == ("Hangul", "HanT")
    assert engine.settings.reread == ("eng",)  # HanT is missing
    assert engine.identity.startswith("tesseract 5.")
    models = "eng, HanS, osd; reread eng"
    assert engine.identity.endswith(f"(tesserocr 2.13.0; {models}; kb-tesseract 0.2.0; split_cells on)")
    assert engine.languages() == ("English", "Chinese (simplified)")
    assert isinstance(engine, OcrEngine)


def test_without_osd_every_page_gets_all_models(tmp_path: Path) -> None:
    engine = make_engine({"tessdata": str(_tessdata(tmp_path, "eng", "kor")), "osd": False, "models": ["eng", "kor"]})
    assert engine.settings.fallback == "eng+kor" and "osd" not in engine.identity
    assert engine.languages() == ("English", "Korean")


def test_split_cells_is_on_unless_turned_off_and_the_identity_says_which(tmp_path: Path) -> None:
    folder = str(_tessdata(tmp_path, "eng", "osd"))
    assert Settings.from_options({"tessdata": folder}).split_cells
    assert not Settings.from_options({"tessdata": folder, "split_cells": False}).split_cells
    on, off = make_engine({"tessdata": folder}), make_engine({"tessdata": folder, "split_cells": False})
    assert on.identity.endswith("; split_cells on)") and off.identity.endswith("; split_cells off)")
    assert on.identity.replace(" on)", " off)") == off.identity  # the OCR cache keeps their pages apart
    assert f"kb-tesseract {metadata.version('kb-tesseract')};" in on.identity


def test_reread_defaults_to_hant_and_eng_and_can_be_turned_off(tmp_path: Path) -> None:
    folder = str(_tessdata(tmp_path, "eng", "osd", "Hangul", "HanS", "HanT"))
    on, off = make_engine({"tessdata": folder}), make_engine({"tessdata": folder, "reread": []})
    assert on.settings.reread == ("HanT", "eng") and off.settings.reread == () and not on.settings.missing
    assert "; reread HanT, eng; " in on.identity and "reread" not in off.identity  # pages read again
    with pytest.raises(ConfigError, match="reread = \\['osd'\\]"):
        Settings.from_options({"tessdata": folder, "reread": ["osd"]})


def test_an_unknown_option_names_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_options({"tessdata": str(_tessdata(tmp_path, "eng", "osd")), "split": True})
    assert raised.value.message.startswith("invalid configuration: backends.tesseract.split = true")
    assert raised.value.hint == "its options: models, osd, reread, split_cells, tessdata"


def test_the_default_folder_comes_from_tessdata_prefix(tmp_path: Path) -> None:
    folder = _tessdata(tmp_path / "share" / "tessdata", "eng", "osd")
    assert Settings.from_options({}, {"TESSDATA_PREFIX": str(folder)}).tessdata == folder
    assert Settings.from_options({}, {"TESSDATA_PREFIX": str(folder.parent)}).tessdata == folder  # Tesseract 3 style


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"lang": "eng"}, "lang = 'eng' .* is not an option of \\[backends.tesseract\\]"),
        ({"osd": "yes"}, "osd = 'yes' .* is not true or false"),
        ({"split_cells": 1}, "split_cells = 1 .* is not true or false"),
        ({"models": []}, "models = \\[\\] .* is not a list of text, each a Tesseract model name"),
        ({"models": ["eng", 3]}, "models = \\['eng', 3\\] .* is not a list of text"),
        ({"models": ["eng", "osd"]}, "not osd, which is the osd option"),
        ({"models": "eng+deu"}, "models = 'eng\\+deu' .* is not a list of text"),
        ({"tessdata": 5}, "tessdata = 5 .* is not a path"),
    ],
)
def test_bad_options_are_config_errors(tmp_path: Path, options: dict[str, object], error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        Settings.from_options({"tessdata": str(_tessdata(tmp_path, "eng", "osd")), **options})


def test_the_model_follows_the_script(tmp_path: Path) -> None:
    folder = _tessdata(tmp_path, "eng", "osd", "Hangul", "HanS", "Cyrillic")
    settings = Settings.from_options({"tessdata": str(folder), "models": ["eng", "Hangul", "HanS", "Cyrillic"]})
    assert settings.model_for("Latin") == "eng"
    assert settings.model_for("Korean") == settings.model_for("Hangul") == "Hangul"
    assert settings.model_for("Han") == settings.model_for("Japanese") == "HanS"
    assert settings.model_for("Cyrillic") == "Cyrillic"  # a model named like the script
    assert settings.model_for("Arabic") == settings.model_for("") == "eng+Hangul+HanS+Cyrillic"


def test_importing_the_plugin_does_not_load_tesserocr() -> None:
    import subprocess
    import sys

    code = "import sys, kb_tesseract; print('tesserocr' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False", result.stderr
    assert kb_tesseract.__version__ == "0.2.0"


@pytest.mark.parametrize(
    ("text", "joined"),
    [
        ("가 람 우 주 연 구 원", "가람우주연구원"),
        ("丰 禾 1 号 品种 。", "丰禾 1 号品种。"),
        ("运行 次 数 4,081 261", "运行次数 4,081 261"),
        ("カ タ カ ナ と ひらがな", "カタカナとひらがな"),
        ("Total 2021 93.20", "Total 2021 93.20"),
        ("한국어 English 中文", "한국어 English 中文"),
    ],
)
def test_spaces_between_cjk_characters_are_removed(text: str, joined: str) -> None:
    assert join_cjk(text) == joined


@given(width=st.integers(1, 9), height=st.integers(1, 9), quarters=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_turning_matches_pillow(width: int, height: int, quarters: int, seed: int) -> None:
    pixels = random.Random(seed).randbytes(width * height * 3)
    turned, new_width, new_height = turn(pixels, width, height, quarters)
    expected = Image.frombytes("RGB", (width, height), pixels).rotate(90 * quarters, expand=True)
    assert (new_width, new_height) == expected.size and turned == expected.tobytes()


@given(
    width=st.integers(1, 40),
    height=st.integers(1, 40),
    quarters=st.integers(0, 3),
    corners=st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)),
)
def test_boxes_map_back_onto_the_original_image(
    width: int, height: int, quarters: int, corners: tuple[float, float, float, float]
) -> None:
    a, b, c, d = corners
    x0, x1 = sorted((int(a * width), int(b * width)))
    y0, y1 = sorted((int(c * height), int(d * height)))
    if x1 == x0 or y1 == y0:
        return
    image = Image.new("RGB", (width, height), "white")
    image.paste((0, 0, 0), (x0, y0, x1, y1))
    turned = image.rotate(90 * quarters, expand=True)
    left, top, right, bottom = turned.convert("L").point(lambda v: 255 - v).getbbox() or (0, 0, 0, 0)
    box = clamp_box(left, top, right, bottom, *turned.size)
    assert box_back(box, width, height, quarters) == (x0, y0, x1 - x0, y1 - y0)


def test_boxes_are_clamped_inside_the_image() -> None:
    assert clamp_box(-5, -5, 500, 500, 100, 50) == (0, 0, 100, 50)
    assert clamp_box(120, 10, 90, 5, 100, 50) == (100, 10, 0, 0)
