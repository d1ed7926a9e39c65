"""kb-mail: ``.eml`` and ``.mbox`` files for kb, a document per message and per attachment kb reads.

Standard library only (``email`` with ``policy=email.policy.default``). The parser
(:mod:`kb_mail.parser`) is a container parser: an mbox is read message by message in one streaming pass
(:mod:`kb_mail.mbox`), each message rendered as a document with its headers first
(:mod:`kb_mail.render`), quoted replies left out (:mod:`kb_mail.quotes`). The entry point is
:mod:`kb_mail.plugin`.
"""
