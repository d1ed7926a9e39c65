"""Embedders that ship with the core: one module per model."""
