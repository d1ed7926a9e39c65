"""Retrieval: search the indexes lexically, by vector or both, fuse and score the hits."""
