"""Which modules of kb_core are public, and for whom: the import check, the docs and kb_core's docstring
all read this."""

#: Each public module and the page that documents every name in its ``__all__``; every other module is private.
#: ``kb_core`` is the library for applications; ``kb_core.plugin`` (and ``kb_core.plugin.remote``, for a backend
#: that talks to a server over HTTP, and ``kb_core.plugin.options``, a plugin's ``[backends.<table>]`` options)
#: what an engine implements and exchanges; ``kb_core.commands`` what a command
#: needs; ``kb_core.testing`` the contract test kit and fakes. No name is in two of their ``__all__``.
PUBLIC_MODULES: dict[str, str] = {
    "kb_core": "docs/python-api.md",
    "kb_core.plugin": "docs/plugins.md",
    "kb_core.plugin.remote": "docs/plugins.md",
    "kb_core.plugin.pages": "docs/plugins.md",
    "kb_core.plugin.options": "docs/plugins.md",
    "kb_core.plugin.containers": "docs/plugins.md",
    "kb_core.plugin.stores": "docs/plugins.md",
    "kb_core.service": "docs/python-api.md",
    "kb_core.commands": "docs/plugins.md",
    "kb_core.bounds": "docs/plugins.md",
    "kb_core.testing": "docs/plugins.md",
    "kb_core.testing.hostile": "docs/plugins.md",
    "kb_core.testing.shared_store": "docs/plugins.md",
    "kb_core.testing.access_store": "docs/plugins.md",
}
