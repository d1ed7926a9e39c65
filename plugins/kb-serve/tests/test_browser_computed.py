"""A computed answer on the page in a real browser (Debian's Chromium through Playwright; issue 43).

The scripted model writes the computation (``CALC: 914 + 699 [#n]``) over a table uploaded to the server;
kb works it out, and the page shows the result with its working. Hovering or focusing the result lights
each operand where it is written: the passage's line that holds it and, in a table row, its cell, in the
answer and in the viewer when the cited document is open. A hostile row label stays text.

The screenshots (to look at: ``pytest --basetemp=DIR``) are in the test's own folder.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from kb_core.plugin import GenerateRequest
from kb_core.testing import extractive

pytestmark = pytest.mark.slow

HOSTILE = '<img src=x onerror="document.title=1">'
TABLE = f"""Net sales by segment were as follows:
| 2019 | 2018 | 2017
| | (in millions) |
Sensors | 914 | 918 | 814
Energy | 699 | 712 | {HOSTILE}
Appliances | 680 | 774 | 676
Total | $ 13,448 | $ 13,988 | $ 12,185
Sensors and Energy net sales totalled $1.6 billion in 2019.
"""
# (kb works numbers out only over passages that hold a table: this one's operands are in its prose)
PROSE = (
    "Cash amounted to $12.4 million at the end of 2019, and receivables to $30.1 million.\n\n"
    "| 2019 | 2018\nOffices | 4 | 3\n"
)
SUM = "What was the total of Sensors and Energy net sales in 2019?"
AVERAGE = "What was the average of cash and receivables in 2019?"
REPLIES = {"reports/sales.txt": "CALC: 914 + 699 [#{n}]", "reports/assets.txt": "CALC: avg(12.4, 30.1) [#{n}]"}
LIT_CELLS = "Array.from(document.querySelectorAll('#answer .calc-cell.lit')).map(c => c.textContent)"
LIT_LINES = "Array.from(document.querySelectorAll('#answer .calc-line.lit')).map(r => r.dataset.n)"


def calculator(request: GenerateRequest) -> list[str]:
    """The computation over the passage of the document the question is about; other requests answer extractively."""
    if not request.system.startswith("You compute answers"):  # kb's computation prompt
        return extractive(request)
    wanted = "reports/sales.txt" if "Sensors" in request.user.rsplit("Question:", 1)[-1] else "reports/assets.txt"
    found = re.search(rf"\[#(\d+)\] {re.escape(wanted)}", request.user)
    return [REPLIES[wanted].format(n=found.group(1))] if found else ["CALC: none"]


@pytest.fixture
def served(start_server: Callable[..., Any]) -> Any:
    """A server over the corpus and the two reports, its model :func:`calculator`."""
    server = start_server(script=calculator, overrides={"rag.computations": True})
    with server.client() as http:
        files = [
            ("file", (path, text.encode(), "text/plain"))
            for path, text in (("reports/sales.txt", TABLE), ("reports/assets.txt", PROSE))
        ]
        report = http.post("/documents", files=files).json()
    assert not report["failed"], report
    return server


def test_hovering_a_computed_result_lights_its_operands_lines_and_cells(
    served: Any, open_tab: Callable[..., Any], tmp_path: Path
) -> None:
    tab = open_tab(served)
    tab.goto()
    tab.ask(SUM)
    answer = tab.page.locator("#answer")
    expect(answer.locator(".verdict")).to_contain_text("Grounded")
    expect(answer.locator(".answer-text")).to_contain_text("$1,613 million (914 + 699) [#")
    result = answer.locator(".computation .calc-result")
    expect(result).to_have_text("$1,613 million")
    expect(answer.locator(".computation .calc-working")).to_have_text("914 + 699")
    expect(answer.locator(".calc-operand")).to_have_count(2)
    # the report's own figure for the result, rounded, and where it is written
    stated = answer.locator(".computation .calc-stated")
    expect(stated).to_have_text(re.compile(r"^The passage states it as \$1\.6 billion: \[#\d\], line 8$"))
    # in kb_core.service.words' words, as every front end says them
    expect(answer.locator(".computation .calc-head")).to_have_text("Worked out by kb: 914 + 699 = $1,613 million")
    expect(answer.locator(".calc-operand").first).to_have_text(re.compile(r"^914: \[#\d\], line \d+$"))
    # the passage's lines that hold the operands, below the header row with the years
    expect(answer.locator("tr.calc-line[data-operand]")).to_have_count(2)
    expect(answer.locator("tr.calc-line").first).to_contain_text("2019")
    assert tab.page.evaluate(LIT_CELLS) == [] and tab.page.evaluate(LIT_LINES) == []

    result.hover()
    expect(answer.locator(".calc-cell.lit")).to_have_count(2)
    assert tab.page.evaluate(LIT_CELLS) == ["914", "699"]  # the cells, not 918 or 712 beside them
    assert tab.page.evaluate(LIT_LINES) == ["4", "5"]  # the document's lines 4 and 5 (Sensors, Energy)
    expect(answer.locator(".calc-operand.lit")).to_have_count(2)
    # the hostile label is the row's text: no element was made of it, nothing ran
    expect(answer.locator("tr.calc-line[data-n='5'] td").nth(4)).to_have_text(HOSTILE)  # shown as text
    assert answer.locator(".computation img").count() == 0
    assert tab.page.title() != "1"
    tab.page.screenshot(path=str(tmp_path / "computed-answer.png"))

    tab.page.mouse.move(5, 5)  # away: nothing stays lit
    expect(answer.locator(".calc-cell.lit")).to_have_count(0)

    # one operand lights its own cell only
    answer.locator(".calc-operand").nth(1).hover()
    assert tab.page.evaluate(LIT_CELLS) == ["699"]
    tab.page.mouse.move(5, 5)

    # with the cited document open in the viewer, its lines light too
    tab.open_from(answer.locator(".answer-text a.cite").first)
    expect(tab.page.locator("#viewer-path")).to_contain_text("reports/sales.txt")
    result.hover()
    expect(tab.page.locator("#viewer-lines .line.operand")).to_have_count(2)
    rows = tab.page.locator("#viewer-lines .line.operand")
    assert [rows.nth(i).get_attribute("data-n") for i in range(2)] == ["4", "5"]
    marks = tab.page.locator("#viewer-lines mark.operand-number")
    assert [marks.nth(i).text_content() for i in range(marks.count())] == ["914", "699"]
    expect(rows.nth(1)).to_have_text(f"Energy | 699 | 712 | {HOSTILE}")
    tab.page.screenshot(path=str(tmp_path / "computed-answer-viewer.png"))
    tab.page.mouse.move(5, 5)
    expect(tab.page.locator("#viewer-lines .line.operand")).to_have_count(0)
    expect(marks).to_have_count(0)  # the lines are their text again
    expect(tab.page.locator("#viewer-lines .line[data-n='5']")).to_have_text(f"Energy | 699 | 712 | {HOSTILE}")
    assert tab.page.locator("#viewer-lines img").count() == 0
    tab.check_clean()


def test_focusing_the_result_lights_operands_written_in_prose(served: Any, open_tab: Callable[..., Any]) -> None:
    tab = open_tab(served)
    tab.goto()
    tab.ask(AVERAGE)
    answer = tab.page.locator("#answer")
    expect(answer.locator(".verdict")).to_contain_text("Grounded")
    result = answer.locator(".computation .calc-result")
    expect(result).to_contain_text("21.25")
    expect(answer.locator("p.calc-line")).to_have_count(1)
    result.focus()  # the keyboard's way: the result takes focus and lights its operands
    expect(answer.locator(".calc-number.lit")).to_have_count(2)
    lit = answer.locator(".calc-number.lit")
    assert [lit.nth(i).text_content() for i in range(2)] == ["12.4", "30.1"]
    expect(answer.locator("p.calc-line.lit")).to_have_count(1)
    tab.page.keyboard.press("Tab")  # focus moves on to the first operand: only it stays lit
    expect(answer.locator(".calc-number.lit")).to_have_count(1)
    expect(answer.locator(".calc-number.lit")).to_have_text("12.4")
    tab.check_clean()
