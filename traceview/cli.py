"""Command line: thin typer commands (traceview/commands/); each parses its options, calls one
library function (:mod:`traceview.api`, the functions scripts call too) and renders the result.

Errors a user can act on (:class:`traceview.errors.TraceviewError`) become one line on stderr and
exit code 2; anything else becomes one line and exit code 3 (set TRACEVIEW_DEBUG=1 for the
traceback).
"""

from __future__ import annotations

import errno
import os
import sys
import warnings
from typing import Any, Optional

import typer
from typer.core import TyperCommand

from traceview.commands.output import discard_standard_output, stderr_console, unknown_option_hint
from traceview.console import PREFETCHED_FILES, TRACE_READING_COMMANDS, resume_collector
from traceview.errors import TraceviewError, TraceviewWarning, one_line
from traceview.heap import retain_freed_memory, without_huge_page_advice
from traceview.pandas_import import withhold_pyarrow_from_pandas

app = typer.Typer(
    name="traceview",
    help="Explain deep-learning training-step time from torch.profiler and TensorFlow/JAX profiler traces.",
    # Shell completion: `traceview --install-completion` (bash, zsh, fish, PowerShell).
    add_completion=True,
    # Plain click help: no boxes, and no <bool> / {path} type placeholders around the options.
    rich_markup_mode=None,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        from traceview import __version__
        from traceview.schema import SCHEMA_VERSION

        sys.stdout.write(f"traceview {__version__} (timeline schema {SCHEMA_VERSION})\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="Show the version and exit."),
    max_bytes: Optional[int] = typer.Option(
        None, "--max-bytes", min=1, metavar="BYTES",
        help="Refuse a compressed trace that would inflate beyond this many bytes (default 8 GiB)."),
) -> None:
    """Explain deep-learning training-step time from torch.profiler and TensorFlow/JAX profiler traces."""
    if max_bytes is not None:
        # Read by traceview.readers._io.max_bytes (also settable as TRACEVIEW_MAX_BYTES).
        os.environ["TRACEVIEW_MAX_BYTES"] = str(max_bytes)
    elif not _HELP_ASKED[0]:  # (help is shown whatever the environment holds)
        from traceview.readers._io import max_bytes as limit_in_force

        limit_in_force()  # a mistyped TRACEVIEW_MAX_BYTES is refused by every command, whatever it reads


# Whether the command line asks for help (``traceview diagnose --help``): the root callback above
# runs before the command sees its own options, and a limit the help does not use is not checked.
_HELP_ASKED = [False]


class PlaceholderHelpCommand(TyperCommand):
    """A command whose help names each argument by its placeholder alone (``PATH``, ``TRACE...``,
    ``[WORKLOAD]``). typer writes a required argument as ``{PATH}`` in the usage line and follows it
    with its type (``PATH <path>``) in the argument list; options name theirs through ``metavar``."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:  # noqa: ANN401 - typer's vendored click context
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_placeholder(param, usage=True))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:  # noqa: ANN401 - typer's vendored click
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append((_placeholder(param, usage=False), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _placeholder(param: Any, usage: bool) -> str:  # noqa: ANN401 - a typer argument
    """An argument's placeholder: its metavar (else its name in capitals), ``...`` when it takes
    several values, in brackets on the usage line when it may be left out."""
    name = param.metavar or param.name.upper()
    if param.nargs != 1 and not name.endswith("..."):
        name += "..."
    return f"[{name}]" if usage and not param.required else name


def _register_commands() -> None:
    """Commands that live in their own modules; each imports its heavy parts only when run."""
    from traceview.commands.collect import collect
    from traceview.commands.compare import compare
    from traceview.commands.diagnose import diagnose
    from traceview.commands.export import export
    from traceview.commands.normalize import normalize
    from traceview.commands.query import query
    from traceview.commands.run import CONTEXT_SETTINGS as RUN_CONTEXT, run
    from traceview.commands.whatif import whatif

    for name, function in (("diagnose", diagnose), ("compare", compare), ("whatif", whatif), ("collect", collect),
                           ("export", export), ("normalize", normalize), ("query", query)):
        app.command(name, cls=PlaceholderHelpCommand)(function)
    app.command("run", cls=PlaceholderHelpCommand, context_settings=RUN_CONTEXT)(run)


_register_commands()




def _trace_arguments(argv: list[str]) -> list[str] | None:
    """The arguments (not options, nor option values) of a trace-reading command on ``argv``;
    None when the command is another one."""
    group = typer.main.get_command(app)
    command = None
    arguments: list[str] = []
    takes_value = _value_options(group.params)
    words = iter(argv)
    for word in words:
        if word == "--":
            arguments.extend(words)
        elif word in takes_value:
            next(words, None)
        elif word.startswith("-"):
            continue  # a flag, or --option=value
        elif command is None:
            if word not in TRACE_READING_COMMANDS:
                return None
            command = group.commands[word]  # type: ignore[attr-defined]
            takes_value = _value_options(command.params)
        else:
            arguments.append(word)
    return arguments if command is not None else None


def _value_options(params: list[Any]) -> set[str]:
    """The spellings of the options among ``params`` that take a value."""
    return {spelling for param in params if param.param_type_name == "option" and not param.is_flag
            for spelling in param.opts}


def _start_reading(arguments: list[str]) -> None:
    """Start reading the traces among a command's arguments, on a thread, before the analysis
    libraries are imported (readers/_prefetch.py); the reader takes what it made if it is the
    same file."""
    if not arguments:
        return
    from traceview.readers import _prefetch

    for word in [w for w in arguments if os.path.isfile(w)][:PREFETCHED_FILES]:
        _prefetch.start(word)


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point for callers: run the app, turning errors into one line and an exit code."""
    _main(argv)


def console_main() -> None:
    """The console script and ``python -m traceview``: :func:`main` on the process's arguments,
    then, once diagnose or compare has written its report, the end without teardown."""
    try:
        completed = _main(None, console=True)
    except SystemExit:
        _flush_standard_output()
        raise
    _flush_standard_output()
    if completed:
        _leave_without_teardown()


def _flush_standard_output() -> None:
    """Write out what standard output still buffers; where that fails (a full disk), one line
    and exit status 2, not the interpreter's "Exception ignored" and status 120 at exit."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as err:
        _output_failed(err)


def _output_failed(err: OSError) -> None:
    """Standard output could not take the output: one line, exit status 2 (what stays in its
    buffer goes to the null device, so that the exit does not fail on it again)."""
    discard_standard_output()
    stderr_console().print(f"traceview: cannot write the output ({err.strerror or err})", markup=False,
                           highlight=False, soft_wrap=True)
    sys.exit(2)


def _main(argv: Optional[list[str]], console: bool = False) -> bool:
    """Run the app; True when a trace-reading command completed. ``console``: this process is
    the console script's own, whose imports the command may choose."""
    retain_freed_memory()  # before the first large array: see traceview/heap.py
    words = sys.argv[1:] if argv is None else argv
    _HELP_ASKED[0] = "--help" in words
    arguments = _trace_arguments(words)
    _start_reading(arguments or [])
    if console and arguments:  # (not for --help, nor a usage error without a trace)
        without_huge_page_advice()  # (numpy: the reading thread imports it too): see traceview/heap.py
        withhold_pyarrow_from_pandas()  # (a comparison imports pandas; a diagnosis none): traceview/pandas_import.py
        from traceview.arrays import share_one_values  # (numpy: imported once the reading has started)

        share_one_values()  # see traceview/arrays.py: this process's analyses never write into a column
    resume_collector()  # (paused by the console script while it loaded the libraries: traceview/console.py)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            _WARNED.clear()  # (once per command, whoever calls main() again)
            _run(argv)
    finally:
        if arguments:
            from traceview.readers import _prefetch

            _prefetch.forget()  # (what a command did not read, e.g. after an error)
    return arguments is not None


def _leave_without_teardown() -> None:
    """End the process once a report is written, without the interpreter's teardown.

    Freeing every object of pandas, pyarrow, numpy and the trace's columns one by one takes a
    tenth of a small trace's diagnosis, and nothing is left to do: the report is written, its
    file closed, and these commands register no exit handlers. Where something watches the
    process (a profiler, a tracer, coverage), or the output cannot be flushed, the ordinary exit
    runs: their exit handlers write their results, and a failed flush is reported."""
    if sys.getprofile() is not None or sys.gettrace() is not None or "coverage" in sys.modules:
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # (None where the descriptor was closed at start)
                stream.flush()
    except Exception:  # noqa: BLE001 - whatever it is, the ordinary exit deals with it
        return
    os._exit(0)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """A :class:`TraceviewWarning` is one ``traceview: warning:`` line; other warnings as Python shows them."""
    if issubclass(category, TraceviewWarning):
        line = f"traceview: warning: {one_line(str(message))}"
        if line in _WARNED:  # (the same file met again by a second look at a folder)
            return
        _WARNED.add(line)
        stderr_console().print(line, markup=False, highlight=False, soft_wrap=True)
    else:
        _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)


_PYTHON_SHOWWARNING = warnings.showwarning
_WARNED: set[str] = set()  # the warning lines the running command has written: each is written once


def _run(argv: Optional[list[str]]) -> None:
    try:
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)  # typer.Exit(n) comes back as a return value when standalone_mode is off
    except TraceviewError as err:
        # One line whatever the message holds (a file name may carry newlines or escape sequences);
        # a Text, never markup: messages name extras like traceview[torch], and file names.
        from rich.text import Text

        stderr_console().print(Text.assemble(("traceview:", "bold red"), " ", one_line(str(err))), highlight=False,
                                soft_wrap=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as err:
        # Writing the output failed (stdout on a full disk, a pipe closed early): one line, as for a
        # report (commands/output.py emit); any other OSError is the last-resort case below.
        if err.errno not in _OUTPUT_ERRNOS:
            _internal_error(err)
        _output_failed(err)
    except SystemExit:
        raise
    except Exception as err:  # noqa: BLE001 - last line of defence: one line, never a traceback
        # Usage errors of the command-line parser (typer vendors click): one line like ours, naming
        # the command whose help lists what it takes (click's own shows three).
        if hasattr(err, "format_message") and isinstance(getattr(err, "exit_code", None), int):
            context = getattr(err, "ctx", None)
            where = context.command_path if context is not None else "traceview"
            stderr_console().print(f"{where}: {one_line(_usage_message(err, context))} (see '{where} --help')",
                                   markup=False, highlight=False, soft_wrap=True)
            sys.exit(err.exit_code)
        if type(err).__name__ == "Abort":
            sys.exit(1)
        _internal_error(err)


def _usage_message(err: Exception, context: Any) -> str:  # noqa: ANN401 - typer's vendored click context
    """A usage error's message; an unknown option's names the option it is a typo of, or the
    command's options (commands/output.py unknown_option_hint, as `traceview run` says it)."""
    option = getattr(err, "option_name", None)
    if type(err).__name__ == "NoSuchOption" and option and context is not None:
        return f"no such option: {option}{unknown_option_hint(option, context.command)}"
    return err.format_message()  # type: ignore[attr-defined]


# Failures of writing the output, not of reading a trace: no space, a closed pipe or descriptor,
# an I/O error of the device.
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EPIPE, errno.EBADF, errno.EIO, errno.EDQUOT})


def _internal_error(err: BaseException) -> None:
    """The last line of defence: one line naming the error, exit 3 (the traceback with
    TRACEVIEW_DEBUG=1)."""
    if os.environ.get("TRACEVIEW_DEBUG"):
        raise err
    stderr_console().print(
        f"traceview: internal error: {type(err).__name__}: {one_line(str(err))} "
        "(run with TRACEVIEW_DEBUG=1 for details)",
        markup=False, highlight=False, soft_wrap=True,
    )
    sys.exit(3)


if __name__ == "__main__":
    console_main()
