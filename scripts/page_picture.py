"""Take the README's picture of kb serve's page: the embedded model answering, its citation open.

    .venv/bin/python scripts/page_picture.py [--out plugins/kb-serve/docs/page.png]

It ingests `fixtures/corpus` into a temporary knowledge base (an empty configuration file, no `KB_*`
variables), starts `kb serve --backend llamacpp` on a free loopback port, asks the page in Debian's
Chromium (driven by Playwright; `bash scripts/install-browser` installs it) when Heliograph 2.3.0 was
released, opens the answer's first citation and points at the sentence it supports, then saves the
window. It writes nothing unless the answer is grounded and cites the changelog's lines. It needs
kb-serve, kb-llamacpp with its embedded default model, and playwright: `bash scripts/setup` installs
them. It takes a few minutes on two cores (the model answers once); run it when the page changes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
OUT = ROOT / "plugins" / "kb-serve" / "docs" / "page.png"
KB = Path(sys.executable).parent / "kb"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
QUESTION = "When was Heliograph 2.3.0 released?"
CITED = "notes/CHANGELOG.txt"
ANSWER_WAIT_MS = 900_000  # the model loads and answers on two shared cores: minutes, not seconds


def _environment(home: Path) -> dict[str, str]:
    """This process's environment without ``KB_*`` variables, reading an empty configuration file."""
    config = home / "config.toml"
    config.write_text("", encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("KB_")}
    return {**environment, "KB_CONFIG": str(config), "KB_HOME": str(home / "kb")}


def _serve(environment: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """``kb serve`` with the embedded model on a free loopback port, and its URL once it listens."""
    process = subprocess.Popen(
        [str(KB), "--backend", "llamacpp", "serve", "--port", "0", "--json"],
        env=environment,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    while not lines or lines[-1] != "}\n":
        line = process.stdout.readline()
        if not line:
            raise SystemExit(f"page_picture: kb serve stopped before it listened (exit {process.wait()})")
        lines.append(line)
    return process, str(json.loads("".join(lines))["url"])


def _picture(url: str, out: Path) -> str:
    """Ask on the page at ``url``, open the citation, save the window to ``out``; returns the answer's text."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=60_000)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.set_default_timeout(60_000)
            page.goto(url + "/")
            expect(page.locator("#health")).to_contain_text("model: llamacpp")
            page.fill("#question", QUESTION)
            page.click("#ask-button")
            verdict = page.locator("#answer .verdict")
            expect(verdict).to_be_visible(timeout=ANSWER_WAIT_MS)  # drawn with the whole answer, checked
            if "Grounded" not in verdict.inner_text():
                raise SystemExit(
                    f"page_picture: kb did not ground the answer ({verdict.inner_text()!r}); no picture written"
                )
            link = page.locator("#answer .answer-text a.cite").first
            cited = unquote((link.get_attribute("href") or "").split("/")[2])
            if cited != CITED:
                raise SystemExit(f"page_picture: the answer cites {cited!r}, not {CITED!r}; no picture written")
            opened = int(page.get_attribute("#viewer", "data-ready") or 0)
            link.click()
            page.wait_for_selector(f"#viewer[data-ready='{opened + 1}']", state="attached")
            page.hover("#answer .sentence.supported >> nth=0")
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
            return str(page.locator("#answer .answer-text").inner_text())
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    """Ingest the fixtures, serve them with the embedded model, and take the picture."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the PNG (default: {OUT})")
    arguments = parser.parse_args(argv)
    if not CHROMIUM.exists():
        raise SystemExit(f"page_picture: {CHROMIUM} is missing; run: bash scripts/install-browser")
    with tempfile.TemporaryDirectory(prefix="kb-page-picture-") as home:
        environment = _environment(Path(home))
        subprocess.run([str(KB), "ingest", str(CORPUS)], env=environment, check=True, stdout=subprocess.DEVNULL)
        process, url = _serve(environment)
        try:
            answer = _picture(url, arguments.out)
        finally:
            process.terminate()
            process.wait(60)
    print(f"page_picture: wrote {arguments.out} ({answer.strip()[:120]!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
