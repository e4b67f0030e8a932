"""The README's contract for a user's mistake, checked from outside (issue 49): ``twill ARGV``
in a child process exits with its code, prints no traceback, says a refusal (exit 2) in one
line, and leaves nothing in TMPDIR."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def twill_child(cwd: Path, tmp: Path, *argv: str, timeout: float = 300,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``twill ARGV`` run in ``cwd`` with TMPDIR ``tmp`` (created; must stay empty)."""
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TMPDIR": str(tmp), **(env or {})}
    done = subprocess.run([sys.executable, "-m", "twill", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    if done.returncode == 2:
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert list(tmp.iterdir()) == [], "left in TMPDIR"
    return done


def tree(folder: Path) -> dict[str, bytes]:
    """Every entry under ``folder`` with its bytes (a folder or a link: a marker)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(folder))] = b"-> " + os.readlink(p).encode()
        else:
            out[str(p.relative_to(folder))] = p.read_bytes() if p.is_file() else b"<other>"
    return out
