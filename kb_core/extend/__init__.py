"""Extending kb: the hooks plugins implement, the contracts (Protocols) of the things they provide, and the registry that loads them."""
