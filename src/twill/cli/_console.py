"""The console the ``twill`` commands print their tables on.

On a terminal, rich fits a table to the terminal's width. When stdout is a pipe or a file there
is no width to fit: rich would assume 80 columns and cut wide cells to ``…``, losing digits. There
the console is wide enough for every table at its natural width (and writes no colour codes), so
``twill map-network ... > table.txt`` keeps every number whole.

A reader that stops early (``twill ... | head``) closes the pipe: rich's own answer is
``SystemExit(1)``, and 1 means "no answer" in twill. The console raises ``BrokenPipeError``
instead, which the CLI turns into its one closed-pipe exit code, 141.
"""

from __future__ import annotations

import errno
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

__all__ = ["stdout_console", "stderr_progress", "PIPE_WIDTH"]

#: Width of the console when stdout is not a terminal (wider than any table twill prints).
PIPE_WIDTH = 4000


def stdout_console() -> Console:
    """A rich console on stdout: the terminal's width, or :data:`PIPE_WIDTH` when piped."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich would raise SystemExit(1)
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "stdout closed by the reader")

    if sys.stdout.isatty():
        return _Console()
    return _Console(width=PIPE_WIDTH, no_color=True, highlight=False)


def stderr_progress() -> Progress:
    """A progress bar (description, bar, done/total, elapsed) on stderr, shown on a terminal
    only (a log file gets no bar) and gone once it ends, before the results print (and after
    Ctrl-C); use it as a context manager."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=not sys.stderr.isatty(),
    )
