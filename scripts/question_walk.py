"""Follow a question through `kb ask` and count the rooms (source files) it stays in.

Every call that receives the question as an argument, or a value made from it alone (its kind,
its prompt), is a step of the walk; the room is the file of the innermost such call. A *stay* is a
run of steps in one room; a *return* is a stay in a room the walk had already left.

    python scripts/question_walk.py [--yes-no] [--rooms]

It ingests `fixtures/corpus` into a temporary kb home and asks with the configured model.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
COMMAND = "kb_core/cli/answers.py"
QUESTIONS = {False: "When was Heliograph 2.3.0 released?", True: "Was Heliograph 2.3.0 released in 2024?"}


def walk(question: str) -> list[str]:
    """The rooms the question visits from `kb ask`'s command function on, one entry per step."""
    from kb_core.cli.main import main as kb

    with contextlib.redirect_stdout(io.StringIO()):
        if kb(["ingest", str(ROOT / "fixtures" / "corpus"), "--json"]) != 0:
            raise SystemExit("kb ingest failed")
    rooms: list[str] = []
    carriers: set[int] = set()

    def carries(frame: FrameType) -> bool:
        code = frame.f_code
        for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
            value: Any = frame.f_locals.get(name)
            if isinstance(value, str) and value == question:
                return True
            if attrs.has(type(value)) and question in (getattr(value, "question", None), getattr(value, "text", None)):
                return True
        return False

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        if event == "call" and ours(frame.f_code.co_filename) and carries(frame):
            carriers.add(id(frame))
            rooms.append(os.path.relpath(frame.f_code.co_filename, ROOT))
            return local
        return None

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "return" and id(frame) in carriers:
            carriers.discard(id(frame))
            back = frame.f_back
            while back is not None and id(back) not in carriers:
                back = back.f_back
            if back is not None:
                rooms.append(os.path.relpath(back.f_code.co_filename, ROOT))
        return local

    sys.settrace(tracer)  # the walk starts where `kb ask` takes the question: its command function
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            kb(["ask", question, "--json"])
    finally:
        sys.settrace(None)
    return rooms[rooms.index(COMMAND) :]


def ours(filename: str) -> bool:
    """Whether a file is the core's (the walk is the core's: plugins are engines it calls)."""
    return filename.startswith(str(ROOT / "kb_core"))


def stays(rooms: list[str]) -> list[str]:
    """The rooms with consecutive repeats merged."""
    return [room for i, room in enumerate(rooms) if i == 0 or rooms[i - 1] != room]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--yes-no", action="store_true", help="follow a yes/no question")
    parser.add_argument("--rooms", action="store_true", help="print the walk")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ.update({"KB_HOME": home, "XDG_STATE_HOME": home, "XDG_CONFIG_HOME": home})
        visited = stays(walk(QUESTIONS[args.yes_no]))
    returns = sum(1 for i, room in enumerate(visited) if room in visited[:i])
    if args.rooms:
        print("\n".join(visited))
    print(f"{len(visited)} stays, {returns} returns, {len(set(visited))} rooms")


if __name__ == "__main__":
    main()
