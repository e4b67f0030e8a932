"""Running twill commands on hostile input: in-process for speed, in a limited subprocess for
cases that could use unbounded memory or time.

Every case must end in exit 2 with one message on stderr that names the file and no traceback.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 3 * 1024**3  # bytes of address space for a subprocess case
TIME_LIMIT = 20  # seconds per subprocess case (a 2-core machine shared by others)


def run_inprocess(argv: list[str], capsys: object) -> tuple[int, str, str]:
    """``twill.cli.main(argv)`` with stdout/stderr captured."""
    from twill.cli import main

    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses an option value
        code = exc.code if isinstance(exc.code, int) else 2
    out = capsys.readouterr()  # type: ignore[attr-defined]
    return code, out.out, out.err


def _limit_memory() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_limited(argv: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """``python -m twill argv`` under a memory and a time limit; a timeout fails the case."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "twill", *argv],
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT,
        preexec_fn=_limit_memory,
        env=env,
        cwd=cwd,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def assert_clean_error(code: int, err: str, *names: str) -> None:
    """Exit 2, no traceback, and the message names each of ``names`` (file, item)."""
    assert "Traceback" not in err, err
    assert code == 2, f"exit {code}; stderr:\n{err}"
    assert err.strip(), "no message on stderr"
    assert len(err) < 4000, f"message of {len(err)} characters"
    for name in names:
        assert name in err, f"{name!r} not in message:\n{err}"


class Runner:
    """What the fuzz tests call: ``run(argv)`` in-process, ``limited(argv)`` in a subprocess."""

    def __init__(self, capsys: object) -> None:
        self._capsys = capsys

    def run(self, argv: list[str]) -> tuple[int, str, str]:
        return run_inprocess(argv, self._capsys)

    limited = staticmethod(run_limited)
    clean = staticmethod(assert_clean_error)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Runner:
    return Runner(capsys)
