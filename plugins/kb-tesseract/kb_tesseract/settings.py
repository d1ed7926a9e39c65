"""The ``[backends.tesseract]`` options, where Tesseract's data is, and which model reads which script.

Nothing here imports tesserocr: a missing or misconfigured installation is reported before the
engine loads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from kb_core import ModelUnavailableError
from kb_core.plugin.options import Option, checked_options

SECTION = "tesseract"
#: The Debian packages of the default models (each ``<name>.traineddata`` in the tessdata folder).
PACKAGES = {
    "eng": "tesseract-ocr-eng",
    "osd": "tesseract-ocr-osd",
    "Hangul": "tesseract-ocr-script-hang",
    "HanS": "tesseract-ocr-script-hans",
    "HanT": "tesseract-ocr-script-hant",
}
INSTALL = "apt-get install -y --no-install-recommends " + " ".join(
    PACKAGES[m] for m in ("eng", "osd", "Hangul", "HanS", "HanT")
)
DEFAULT_MODELS = ("eng", "Hangul", "HanS")
#: Models that read again the doubtful words of a Korean page (:mod:`kb_tesseract.reread`): Hanja, Latin.
DEFAULT_REREAD = ("HanT", "eng")
#: Where Debian (and Ubuntu) put the data, newest first; ``TESSDATA_PREFIX`` comes before them.
DEBIAN_TESSDATA = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata")
#: Models that must be installed when listed: English is what most pages are in.
REQUIRED = ("eng",)

#: Models to try, in order, for a script named by Tesseract's orientation and script detection.
#: A model named like the script itself (``Cyrillic``, ``Arabic``, ...) is tried after these.
SCRIPT_MODELS: dict[str, tuple[str, ...]] = {
    "Latin": ("eng", "Latin"),
    "Korean": ("Hangul", "kor"),
    "Hangul": ("Hangul", "kor"),
    "Han": ("HanS", "chi_sim", "HanT", "chi_tra"),
    "Japanese": ("jpn", "Japanese", "HanS", "chi_sim"),
}
#: The options of ``[backends.tesseract]``, declared to kb (``register_options``): checked at start.
OPTIONS: dict[str, Option] = {
    "tessdata": Option.path("", "the folder of the .traineddata files ('': $TESSDATA_PREFIX, else Debian's folder)"),
    "models": Option.texts(
        list(DEFAULT_MODELS),
        "the models to use, in order; listed but not installed ones are left out",
        pattern=r"(?!osd$)[A-Za-z0-9_./-]{1,64}",
        shape="a Tesseract model name (eng, Hangul, HanS; not osd, which is the osd option)",
        least=1,
    ),
    "osd": Option.flag(True, "detect script and orientation per page; false reads every page with all models"),
    "split_cells": Option.flag(True, "cut a line into cells at wide gaps between its words"),
    "reread": Option.texts(
        list(DEFAULT_REREAD),
        "models that read again the doubtful words of a Korean page (Hanja, Latin words); [] for none",
        pattern=r"(?!osd$)[A-Za-z0-9_./-]{1,64}",
        shape="a Tesseract model name (HanT, eng; not osd)",
        least=0,
    ),
}

#: Human names of common models (``languages()``); any other model is shown by its own name.
LANGUAGE_NAMES = {
    "eng": "English",
    "Latin": "Latin-script languages",
    "Hangul": "Korean",
    "kor": "Korean",
    "HanS": "Chinese (simplified)",
    "chi_sim": "Chinese (simplified)",
    "HanT": "Chinese (traditional)",
    "chi_tra": "Chinese (traditional)",
    "jpn": "Japanese",
    "Japanese": "Japanese",
    "deu": "German",
    "fra": "French",
    "spa": "Spanish",
    "ita": "Italian",
    "por": "Portuguese",
    "nld": "Dutch",
    "rus": "Russian",
    "Cyrillic": "Cyrillic-script languages",
    "Arabic": "Arabic-script languages",
    "ara": "Arabic",
}


@attrs.frozen
class Settings:
    """What the engine is to use: the tessdata folder, the models found in it (in the configured
    order), whether OSD picks the model per page, whether a line is split into cells at wide
    gaps (:mod:`kb_tesseract.cells`) and the models found that read the doubtful words of a Korean
    page again (:mod:`kb_tesseract.reread`)."""

    tessdata: Path
    models: tuple[str, ...]
    osd: bool
    missing: tuple[str, ...] = ()  # configured models without their traineddata (left out)
    split_cells: bool = True
    reread: tuple[str, ...] = ()

    @classmethod
    def from_options(cls, options: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``[backends.tesseract]``; a ConfigError for a bad option, a
        ModelUnavailableError (naming the apt command) when the data is not installed."""
        values = checked_options(SECTION, OPTIONS, options)
        osd, split_cells = bool(values["osd"]), bool(values["split_cells"])
        models = tuple(dict.fromkeys(values["models"]))
        folder = _tessdata(values["tessdata"] or None, os.environ if environ is None else environ)
        if not folder.is_dir():
            raise ModelUnavailableError(
                f"Tesseract's data folder {folder} does not exist", hint=f"install it: {INSTALL}"
            )
        needed = [m for m in REQUIRED if m in models] + (["osd"] if osd else [])
        absent = [name for name in needed if not _has(folder, name)]
        if absent:
            names = ", ".join(f"{name}.traineddata" for name in absent)
            raise ModelUnavailableError(f"Tesseract's {names} is not in {folder}", hint=f"install it: {INSTALL}")
        found = tuple(m for m in models if _has(folder, m))
        reread = tuple(m for m in dict.fromkeys(values["reread"]) if _has(folder, m))
        missing = tuple(m for m in dict.fromkeys([*models, *values["reread"]]) if not _has(folder, m))
        if not found:
            raise ModelUnavailableError(
                f"none of the models {', '.join(models)} is in {folder}",
                hint=f"install them (Debian: tesseract-ocr-<lang> packages), e.g. {INSTALL}",
            )
        return cls(folder, found, osd, missing, split_cells, reread)

    @property
    def fallback(self) -> str:
        """Every model joined (``eng+Hangul+HanS``): for pages whose script is unknown or unmapped."""
        return "+".join(self.models)

    def model_for(self, script: str) -> str:
        """The model for a page in ``script`` (as OSD names it), else :attr:`fallback`."""
        for name in (*SCRIPT_MODELS.get(script, ()), script):
            if name in self.models:
                return name
        return self.fallback

    def languages(self) -> tuple[str, ...]:
        """The human names of the models, without repeats."""
        return tuple(dict.fromkeys(LANGUAGE_NAMES.get(m, m) for m in self.models))


def _tessdata(value: str | None, environ: Mapping[str, str]) -> Path:
    if value is not None and value.strip():
        return Path(value).expanduser()
    prefix = environ.get("TESSDATA_PREFIX", "").strip()
    if prefix:
        folder = Path(prefix).expanduser()
        nested = folder / "tessdata"  # Tesseract 3 took the folder above tessdata
        return nested if not _has(folder, "eng") and _has(nested, "eng") else folder
    for candidate in DEBIAN_TESSDATA:
        if Path(candidate).is_dir():
            return Path(candidate)
    return Path(DEBIAN_TESSDATA[0])


def _has(folder: Path, model: str) -> bool:
    return (folder / f"{model}.traineddata").is_file()
