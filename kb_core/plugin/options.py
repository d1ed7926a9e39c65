"""The options of a plugin's ``[backends.<table>]`` table, declared once when the plugin registers.

Each option is an :class:`Option`: what it accepts (a :class:`Rule`: a whole number or a number in a
range, true or false, text with choices or a pattern, a path, a list of text), its default and a line
of help. kb checks the table before every command that loads the configuration (an unknown key or a bad
value is one line, exit 2, as for the core's own keys), ``kb config show`` and ``kb doctor`` list the
options, and the factory reads the table with :func:`checked_options`::

    from kb_core.plugin import FactoryContext, hookimpl
    from kb_core.plugin.options import Option, RegisterOptions, checked_options

    OPTIONS = {
        "url": Option.text("http://127.0.0.1:9000", "where the server listens", nonempty=True),
        "timeout_s": Option.timeout(30.0, "seconds one request may take"),
        "mode": Option.text("fast", "how hard to try", choices=("fast", "careful")),
    }


    @hookimpl
    def register_options(register: RegisterOptions) -> None:
        register("acme", OPTIONS)


    def factory(ctx: FactoryContext) -> object:
        settings = checked_options("acme", OPTIONS, ctx.options)  # {"url": ..., "timeout_s": 30.0, "mode": "fast"}
        ...
"""

from kb_core.config_schema import Rule
from kb_core.extend.hookspecs import RegisterOptions
from kb_core.extend.options import Option, checked_options

__all__ = ["Option", "RegisterOptions", "Rule", "checked_options"]
