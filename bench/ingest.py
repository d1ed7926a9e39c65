"""Ingest speed on SciFact (5,183 abstracts as .md files), without embeddings (Tantivy only).

Prints documents/s of a first ingest, the time of a re-ingest of the unchanged folder, the peak
memory of each, and the ratio of the first ingest to a same-session baseline: reading and
hashing every file plus tokenizing it once (the work no ingest can avoid).

    python bench/ingest.py [--limit N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

from common import run_kb, write_scifact_folder


def baseline_seconds(folder: Path) -> float:
    """Read, hash and tokenize every file once with the default embedder's tokenizer."""
    from kb_core.builtin.embedders.minilm import _minilm
    from kb_core.config import Config
    from kb_core.extend.contracts import FactoryContext

    embedder = _minilm(FactoryContext(Config()))
    started = time.perf_counter()
    texts = []
    for path in sorted(folder.glob("*.md")):
        data = path.read_bytes()
        hashlib.sha256(data).hexdigest()
        texts.append(data.decode("utf-8"))
    for start in range(0, len(texts), 256):
        embedder.count_tokens(texts[start : start + 256])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N documents")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, kb_dir = Path(tmp) / "scifact", Path(tmp) / "kb"
        count = write_scifact_folder(folder, args.limit)
        env = {"KB_HOME": str(kb_dir), "KB_INDEXES__ENABLED": '["tantivy"]'}
        first, first_rss, out = run_kb(["ingest", str(folder), "--json"], env)
        report = json.loads(out)
        second, second_rss, out = run_kb(["ingest", str(folder), "--json"], env)
        assert json.loads(out)["unchanged"] == count
        floor = baseline_seconds(folder)
    print(f"documents            {count}")
    print(f"chunks               {report['chunks']}")
    print(
        f"first ingest         {first:.2f} s wall  ({count / first:.0f} docs/s;"
        f" in-process {report['took_ms'] / 1000:.2f} s"
        f" = {count / (report['took_ms'] / 1000):.0f} docs/s)  peak RSS {first_rss:.0f} MiB"
    )
    print(f"re-ingest unchanged  {second:.2f} s wall  peak RSS {second_rss:.0f} MiB")
    print(
        f"baseline (read+hash+tokenize, same session) {floor:.2f} s; first ingest / baseline = "
        f"{report['took_ms'] / 1000 / floor:.1f}x"
    )


if __name__ == "__main__":
    main()
