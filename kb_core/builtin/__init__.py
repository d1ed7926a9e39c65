"""The plugins that ship with the core: file parsers and embedders, registered like any third-party plugin."""
