"""Native crashes in a model engine: never a bare ``Segmentation fault``, always noticed afterwards.

A language model runs native code (llama.cpp, onnxruntime) that can kill the process with a
signal, where no Python error handler runs. Three things make that visible:

- :func:`enable_fault_reports`: ``faulthandler`` prints the Python stack on a fatal signal;
- :func:`inside_model`: while a model generates, a marker file names the process, the backend and
  the model; a process that dies there leaves it behind, and :func:`last_crash` (which ``kb ask``
  and ``kb doctor`` call) reports and clears it;
- :func:`probe_generation`: ``kb doctor`` runs a short generation in a child process, so a crash
  there becomes one problem line that names the backend, the model and what to try.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import platformdirs

from kb_core.config import Config, config_from_json, config_to_json
from kb_core.types import ModelRef, Problem

#: Seconds the doctor's child may take to load the model and generate a few tokens.
PROBE_TIMEOUT_S = 600.0


def enable_fault_reports() -> None:
    """Print the Python stack of every thread on a fatal signal (SIGSEGV, SIGABRT, ...), on stderr."""
    if not faulthandler.is_enabled():
        faulthandler.enable(all_threads=True)


def _markers() -> Path:
    return Path(platformdirs.user_state_dir("kb")) / "inside-model"


@contextlib.contextmanager
def inside_model(model: ModelRef) -> Iterator[None]:
    """Leave a marker naming this process and ``model`` while the block runs (removed when it ends)."""
    marker = _markers() / f"{os.getpid()}.json"
    record = {"pid": os.getpid(), "backend": model.provider, "model": model.id, "since": time.time()}
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps(record), encoding="utf-8")
    except OSError:  # a read-only home: no marker, no report later
        marker = Path()
    try:
        yield
    finally:
        if marker != Path():
            with contextlib.suppress(OSError):
                marker.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def last_crash() -> str | None:
    """One line about kb processes that died inside a model since the last call (None: there were none).

    The markers read are removed, so each crash is reported once.
    """
    folder = _markers()
    lines: list[str] = []
    for marker in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(marker.read_text(encoding="utf-8"))
            pid = int(record["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            pid, record = 0, {}
        if pid and _alive(pid):
            continue
        with contextlib.suppress(OSError):
            marker.unlink()
        if record:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(record.get("since", 0))))
            lines.append(
                f"the kb process {pid} died inside the language model ({record.get('backend')},"
                f" {record.get('model')}) at {when}: it crashed or was killed; 'kb doctor' checks the model"
            )
    return "; ".join(lines) or None


def probe_generation(config: Config, backend: str, model: ModelRef, crash_hint: str) -> Problem | None:
    """Generate a few tokens with ``backend`` in a child process; a Problem when the child crashes.

    A child that ends with an error (not a signal) is left to the other checks: only a crash is
    reported here, since it is what no in-process check can survive.
    """
    command = [sys.executable, "-m", "kb_core.crashes", backend]
    try:
        child = subprocess.run(
            command, input=config_to_json(config), capture_output=True, timeout=PROBE_TIMEOUT_S, check=False, text=True
        )
    except subprocess.TimeoutExpired:
        return Problem(
            "language model",
            f"a short generation with {backend} ({model.id}) did not finish in {PROBE_TIMEOUT_S:g} s",
            "check the model's server or the machine's load",
        )
    if child.returncode >= 0:
        return None
    try:
        name = signal.Signals(-child.returncode).name
    except ValueError:
        name = f"signal {-child.returncode}"
    return Problem(
        "language model",
        f"generating with {backend} ({model.id}) crashed the process ({name})",
        crash_hint or f"try another model or backend ([models.llm] model / backend); reinstall the {backend} plugin",
    )


def _probe_main(backend: str) -> int:
    """The doctor's child: with the configuration on stdin, generate up to 4 tokens; exit 0 (1 on an error)."""
    from kb_core.app import KnowledgeBase
    from kb_core.errors import KbError
    from kb_core.types import GenerateRequest

    enable_fault_reports()
    try:
        with KnowledgeBase(config_from_json(sys.stdin.read()), create=False) as kb:
            model = kb.language_model(backend)
            request = GenerateRequest(system="Answer in one word.", user="Say OK, please.", max_tokens=4)
            for _event in model.generate_stream(request):
                pass
            close = getattr(model, "close", None)
            if callable(close):
                close()
    except KbError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_probe_main(sys.argv[1]))
