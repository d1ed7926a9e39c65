"""The ``kb`` command line: shared pieces (base), one module of commands per job, the group (main)."""
