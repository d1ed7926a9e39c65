"""Commands for answers: `kb ask`, `kb eval answers` and `kb eval compare`."""
