"""The questions kb-serve's ``/v1`` tests ask of the fixture corpus, and the scripted model's follow-up rewrite.

``conversing`` makes a follow-up standalone by naming :data:`TOPIC` (``kb_core.testing.following_up``).
"""

from __future__ import annotations

from kb_core.testing import following_up

PORT_QUESTION = "What TCP port does the Heliograph daemon listen on?"
FIRST = "What does the Heliograph daemon do?"
FOLLOW_UP = "Which port does it listen on?"
TOPIC = "the Heliograph daemon"
OFF_TOPIC = "What is the capital of Mongolia's oldest bakery?"
conversing = following_up(TOPIC)
