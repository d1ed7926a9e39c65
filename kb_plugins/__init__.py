"""Plugins that ship with the core: file parsers and the default embedder.

They are registered through the same entry-point group (``kb``) as any third-party plugin.
"""
