"""Solver calls that stay interruptible and leave nothing behind.

Three native solvers defeat Ctrl-C when called plainly:

* CP-SAT installs its own SIGINT handler during a solve (``catch_sigint_signal``) and ends the
  search "as if a time limit was reached": Python never sees the interrupt, and the caller
  goes on with a full-looking result.
* Z3 does the same as CP-SAT (its ``ctrl_c`` parameter): the check answers ``unknown``.
* PuLP runs ``cbc`` as a child process and waits for it. An interrupt delivered to the Python
  process only (``kill -INT``, a supervisor, SIGTERM turned into an exception) leaves the child
  running, and PuLP's ``*-pulp.mps/.mst/.sol`` files stay in the temporary folder.

So each solve runs in a helper thread while the main thread waits; a signal therefore reaches
Python at once, and the waiting code stops the solver (CP-SAT ``StopSearch``, Z3's context
``interrupt``; the ``cbc`` child is killed), waits for the helper and re-raises the
interrupt, so the result is never used. PuLP's files go to a private temporary folder that
is removed on every exit path.

Preconditions: signals only reach Python's main thread; called from another thread the solve
simply runs in that thread (the caller then owns interrupts). The ``cbc`` child is found
through Linux ``/proc``; elsewhere it is left to finish on its own time limit (its files are
still removed).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "run_interruptibly",
    "solve_cpsat",
    "solve_pulp",
    "check_z3",
    "quiet_worker",
    "starting_workers",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

_SIGNALS = {
    getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGALRM", "SIGHUP") if hasattr(signal, n)
}
_POLL_S = 0.2  # how often the waiting main thread wakes (signals interrupt the wait anyway)


def run_interruptibly(work: Callable[[], T], stop: Callable[[], None]) -> T:
    """``work()`` in a helper thread; on any exception in the waiting thread, ``stop()``.

    Parameters
    ----------
    work
        The blocking solver call.
    stop
        Makes ``work`` return soon (ask the solver to stop, kill its child process); called
        repeatedly until ``work`` has returned, so it must be safe to call more than once.

    Returns
    -------
    The value of ``work()``; its exception is re-raised in the caller.

    Raises
    ------
    KeyboardInterrupt
        (or any exception raised by a signal handler) after ``work`` has been stopped.
    """
    if threading.current_thread() is not threading.main_thread():
        return work()
    box: dict[str, Any] = {}
    finished = threading.Event()  # not Thread.join: an interrupted join can mark a live thread
    # as stopped (CPython gh-90882), and the solver would then outlive the interpreter

    def target() -> None:
        # signals go to the waiting main thread, never into the native solver's thread
        if hasattr(signal, "pthread_sigmask"):  # POSIX
            signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=target, name="twill-solver", daemon=True).start()
    try:
        while not finished.wait(_POLL_S):
            pass
    except BaseException:
        for _ in range(int(30 / _POLL_S)):  # again and again: the solver may not have started
            stop()  # yet (PuLP still writing its model), and must not start unnoticed later
            if finished.wait(_POLL_S):
                break
        else:
            log.warning("the solver did not stop within 30 s of the interrupt")
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def solve_cpsat(solver: Any, model: Any, callback: Any = None) -> int:
    """``solver.Solve(model, callback)`` with Ctrl-C left to Python (see the module notes)."""
    solver.parameters.catch_sigint_signal = False
    if callback is None:
        return run_interruptibly(lambda: solver.Solve(model), solver.StopSearch)
    return run_interruptibly(lambda: solver.Solve(model, callback), solver.StopSearch)


_KILL_POLL = 0.1  # seconds between two looks for a solver child past its limit


def _kill_children_using(folder: str) -> None:
    """SIGKILL this process's children whose command line mentions ``folder`` (Linux /proc)."""
    me = os.getpid()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != me or folder not in (proc / "cmdline").read_bytes().decode(errors="replace"):
                continue
            os.kill(int(proc.name), signal.SIGKILL)
            log.info("killed solver child %s", proc.name)
        except (OSError, ValueError, IndexError):  # gone meanwhile, or not ours to read
            continue


def solve_pulp(prob: Any, solver: Any, kill_after: float | None = None) -> None:
    """``prob.solve(solver)`` for a PuLP command-line solver (CBC), interruptibly, with its
    temporary files in a private folder that is removed afterwards, whatever happens.

    ``kill_after``: seconds of wall time after which the solver child is killed (CBC's own
    limit does not cover its presolve and root LP, which can overrun it by many seconds on
    large models); PuLP then raises ``PulpSolverError``. The seconds count from here, PuLP
    writing the model file included, and a child that starts only after them (the file took
    that long: 3 s for CHStone's aes/graph4 window model at load 11, when CBC then ran its
    whole limit) is killed as it appears."""
    folder = tempfile.mkdtemp(prefix="twill-cbc-")
    done = threading.Event()

    def watchdog() -> None:
        if done.wait(kill_after):
            return
        while True:  # past the limit: every solver child, now or once it has started
            _kill_children_using(folder)
            if done.wait(_KILL_POLL):
                return

    if kill_after is not None:
        threading.Thread(target=watchdog, daemon=True).start()
    try:
        solver.tmpDir = folder
        solver.keepFiles = False
        run_interruptibly(lambda: prob.solve(solver), lambda: _kill_children_using(folder))
    finally:
        done.set()
        shutil.rmtree(folder, ignore_errors=True)


def check_z3(solver: Any, *assumptions: Any) -> Any:
    """``solver.check(*assumptions)`` with Ctrl-C left to Python (see the module notes)."""
    import z3

    z3.set_param("ctrl_c", False)
    return run_interruptibly(lambda: solver.check(*assumptions), solver.ctx.interrupt)


# --------------------------------------------------------------------------- worker processes
# A terminal's Ctrl-C sends SIGINT to the whole process group: to twill and to every worker
# process of a pool. A worker that takes it as KeyboardInterrupt prints its own traceback
# ("Process ForkProcess-2: ..."), and a forked worker that inherited the CLI's SIGTERM handler
# prints another when the parent terminates it. So workers ignore SIGINT and die quietly on
# SIGTERM; the parent alone handles the interrupt and stops them (``terminate``).
_WORKER_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def quiet_worker() -> None:
    """Initializer of twill's worker processes: ignore Ctrl-C (the parent stops the worker),
    end quietly on SIGTERM, then accept signals again (see :func:`starting_workers`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _WORKER_SIGNALS)


@contextmanager
def starting_workers(*, spawn: bool = False) -> Iterator[None]:
    """Hold SIGINT and SIGTERM while worker processes start, deliver them afterwards.

    A worker inherits the signal mask of the thread that starts it, so with the signals blocked
    here a Ctrl-C that arrives before the worker has run :func:`quiet_worker` waits, and is
    then discarded by it, instead of ending the half-started worker with a traceback. In this
    process the signal is recorded meanwhile and raised again once the workers exist, where the
    caller's clean-up (``terminate``) can see them. With ``spawn`` (a ``"spawn"`` context),
    multiprocessing's resource tracker is started first: starting it later, inside, would
    unblock both signals again (``resource_tracker.ensure_running`` does).
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "pthread_sigmask"
    ):
        yield
        return
    if spawn:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda s, _f: caught.append(s)) for sig in _WORKER_SIGNALS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_SIGNALS)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending signal arrives here
        for sig in dict.fromkeys(caught):
            signal.raise_signal(sig)  # the caller's handler: KeyboardInterrupt, Terminated
