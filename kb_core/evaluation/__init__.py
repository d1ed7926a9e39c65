"""Evaluation: retrieval and answer quality reports over golden sets, and their comparison."""
