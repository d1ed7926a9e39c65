"""The ``kb`` command line: a base of shared pieces, one module of commands per job, and the group that assembles them."""
