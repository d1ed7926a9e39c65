"""Extending kb: the hooks plugins implement, the contracts (Protocols) they fill, the registry that loads them."""
