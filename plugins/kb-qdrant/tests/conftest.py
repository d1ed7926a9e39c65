"""Where the index under test lives: Qdrant in local mode, or on a server.

``qdrant_target`` is parametrized: ``local`` always runs (the factory's ``QdrantClient(path=...)`` in the
index folder); ``server`` runs only when ``KB_QDRANT_URL`` names a Qdrant server (skipped with that
reason otherwise), with a collection prefix of its own per test, dropped at teardown. The store, the
corpus and the indexes come from ``kb_core.testing.VectorIndexContract`` (see ``test_index.py``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

SERVER_URL = os.environ.get("KB_QDRANT_URL", "")


@pytest.fixture(params=["local", "server"])
def qdrant_target(request: pytest.FixtureRequest) -> Iterator[dict[str, object]]:
    """``[backends.qdrant]`` options for where the index under test lives."""
    if request.param == "local":
        yield {}
        return
    if not SERVER_URL:
        pytest.skip("no Qdrant server: set KB_QDRANT_URL=http://127.0.0.1:6333 to run the server variant")
    prefix = f"t{uuid.uuid4().hex[:10]}"
    key = os.environ.get("KB_QDRANT_API_KEY", "")
    yield {"url": SERVER_URL, "api_key": key, "collection_prefix": prefix}
    from kb_qdrant.connection import open_client
    from kb_qdrant.settings import QdrantSettings

    client = open_client(QdrantSettings(url=SERVER_URL, path=None, api_key=key, collection_prefix=prefix))
    for collection in client.get_collections().collections:
        if collection.name.startswith(prefix + "_"):
            client.delete_collection(collection.name)
    client.close()
