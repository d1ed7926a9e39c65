"""kb-watch: ``kb watch PATH...`` keeps the knowledge base in step with folders as files change.

Registers the command ``watch``. Each update prints one status line on stderr, or with
``--json`` one ``watch_event.v1`` JSON line on stdout (schema in ``kb_watch/schemas/``).
"""

from __future__ import annotations

from kb_core.plugin import RegisterCommand, hookimpl

__all__ = ["register_commands"]


@hookimpl
def register_commands(register: RegisterCommand) -> None:
    """The ``watch`` command."""
    from kb_watch.command import watch_command

    register("watch", watch_command)
