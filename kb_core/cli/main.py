"""The ``kb`` command line: a thin layer over the library functions.

This module assembles the group from the command modules (documents, search, answers,
history) and the commands plugins register, and maps errors to one line and an exit code
(see :mod:`kb_core.cli.base`).
"""

from __future__ import annotations

import io
import os
import sys
import traceback
from importlib import metadata

import click

from kb_core.cli import answers, documents, history, search, threads
from kb_core.cli.base import CONTEXT_SETTINGS, Session, error_line
from kb_core.crashes import enable_fault_reports
from kb_core.errors import KbError
from kb_core.extend.registry import CORE_DISTRIBUTION, registry
from kb_core.limits import as_typed, check_unicode
from kb_core.privacy import quiet_dependencies
from kb_core.storage.sqlite_files import storage_error
from kb_core.terminal import SafeStream, shortened


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """Print kb's version and each installed plugin distribution's, then exit."""
    if not value or ctx.resilient_parsing:
        return
    lines = [f"kb {metadata.version(CORE_DISTRIBUTION)} ({CORE_DISTRIBUTION})"]
    try:
        plugins = registry().plugins
    except KbError as exc:
        plugins = []
        lines.append(f"  plugins not loaded: {exc}")
    distributions = {(p.distribution, p.version) for p in plugins if p.distribution != CORE_DISTRIBUTION}
    lines += [f"  {name} {version}" for name, version in sorted(distributions)]
    click.echo("\n".join(lines))
    ctx.exit()


@click.group(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    envvar=None,
    help="Config file (default: $KB_CONFIG, else the platform config path).",
)
@click.option("--kb", "kb_dir", type=click.Path(file_okay=False), help="Knowledge base directory (default: $KB_HOME).")
@click.option("--backend", help="Language model backend for this call (e.g. llamacpp, ollama).")
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the versions of kb and its installed plugins, then exit.",
)
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, kb_dir: str | None, backend: str | None) -> None:
    """kb: a local knowledge base you can ask questions.

    Ingest a folder, search it, and ask questions answered only from your documents, with
    citations (path#L12-L34), or a clear refusal when the evidence is not there.
    """
    session = Session(config_path, kb_dir, backend)
    _ = session.config  # every command honours the same configuration, and a bad one fails early
    ctx.obj = session
    ctx.call_on_close(session.close)


@cli.group("eval")
def eval_group() -> None:
    """Measure retrieval and answer quality."""


@cli.group("config")
def config_group() -> None:
    """Inspect the configuration."""


def _register_builtin_commands() -> None:
    for command in (*documents.COMMANDS, *search.COMMANDS, *answers.COMMANDS, *history.COMMANDS, *threads.COMMANDS):
        cli.add_command(command)
    for command in (*search.EVAL_COMMANDS, *answers.EVAL_COMMANDS, *threads.EVAL_COMMANDS):
        eval_group.add_command(command)
    for command in documents.CONFIG_COMMANDS:
        config_group.add_command(command)


def _register_plugin_commands() -> None:

    for name, registration in registry().items["commands"].items():
        if name not in cli.commands:
            cli.add_command(registration.factory, name)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with terminal-safe output streams; map errors to one line and a documented exit code."""
    enable_fault_reports()  # a crash in a model engine prints the Python stack, never a bare "Segmentation fault"
    quiet_dependencies()  # engines load lazily, after this: none of them phones home
    undecodable_input_as_text()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)
    try:
        return _run(argv)
    finally:
        sys.stdout, sys.stderr = saved


def undecodable_input_as_text() -> None:
    """Standard input decodes as the arguments do: a byte that is not UTF-8 becomes a lone surrogate, which
    the check of the text it is part of refuses in one line (:func:`kb_core.limits.check_unicode`; a line of
    ``kb chat`` is a question), instead of a UnicodeDecodeError that would end the command."""
    stdin = sys.stdin
    if isinstance(stdin, io.TextIOWrapper) and stdin.errors == "strict":
        stdin.reconfigure(errors="surrogateescape")


def checked_arguments(argv: list[str] | None) -> list[str]:
    """The command line's arguments, each valid Unicode without NUL, or a one-line KbError naming the first that
    is not (Python decodes a byte that is not UTF-8 in an argument, a file name for one, to a lone surrogate; a
    NUL reaches ``main(argv)`` only from a caller in process, and no path, prefix or id holds one)."""
    args = sys.argv[1:] if argv is None else list(argv)
    for arg in args:
        check_unicode(arg, f"command-line argument '{shortened(as_typed(arg), 60)}'", nul=False)
    return args


def _run(argv: list[str] | None) -> int:
    try:
        args = checked_arguments(argv)
        _register_builtin_commands()
        _register_plugin_commands()
        result = cli.main(args=args, prog_name="kb", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except KbError as exc:
        click.echo(error_line(exc), err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.UsageError as exc:  # one line, like every other mistake, with where to read more
        command = exc.ctx.command_path if exc.ctx is not None else "kb"
        click.echo(f"kb: error: {exc.format_message()} (see '{command} --help')", err=True)
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("kb: aborted", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("kb: interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug, not a user mistake: say so, show details on request
        storage = storage_error(exc)
        if storage is not None:
            click.echo(error_line(storage), err=True)
            return storage.exit_code
        if os.environ.get("KB_DEBUG"):
            traceback.print_exc()
        click.echo(f"kb: internal error: {type(exc).__name__}: {exc} (set KB_DEBUG=1 for details)", err=True)
        return 70
