"""Which modules of kb_core are public, and for whom: the import check, the docs and kb_core's docstring
all read this."""

#: Each public module and the page that documents every name in its ``__all__``; every other module is private.
PUBLIC_MODULES: dict[str, str] = {
    "kb_core": "docs/python-api.md",
    "kb_core.commands": "docs/plugins.md",
    "kb_core.testing": "docs/plugins.md",
}
