"""The kb entry point of kb-mail: the parser ``mail`` for ``.eml`` and ``.mbox`` files."""

from __future__ import annotations

from kb_core.plugin import ParserContext, RegisterParser, hookimpl
from kb_mail.parser import MailParser


def _mail(_ctx: ParserContext) -> MailParser:
    return MailParser()


@hookimpl
def register_parsers(register: RegisterParser) -> None:
    """``.eml`` and ``.mbox``: a document per message (headers, text without quoted replies) and per attachment."""
    register(
        "mail",
        _mail,
        extensions=(".eml", ".mbox"),
        description="mail: a document per message and per attachment kb reads (standard library)",
        licence="Apache-2.0",
    )
