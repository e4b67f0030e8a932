"""`make demo` (the README's first command) runs every part under ``demos/`` to the end.

The demo is the first thing a new user runs, and nothing else imports ``demos/``: a renamed API
broke two of its parts unnoticed (issue 49). Here ``demo.py`` runs as ``make demo`` runs it, in
a child process, and every file under ``demos/`` must be one of its parts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _parts() -> list[str]:
    sys.path.insert(0, str(ROOT))
    try:
        import demo
    finally:
        sys.path.remove(str(ROOT))
    return list(demo.PARTS)


def test_every_file_under_demos_is_a_part_of_the_demo() -> None:
    files = sorted(p.stem for p in (ROOT / "demos").glob("*.py") if p.stem != "__init__")
    assert sorted(_parts()) == files


def test_the_demo_runs_every_part_without_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TMPDIR": str(tmp_path),
           "MPLCONFIGDIR": str(tmp_path)}  # fmt: skip
    done = subprocess.run([sys.executable, str(ROOT / "demo.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    both = done.stdout + done.stderr
    assert done.returncode == 0, both
    assert "Traceback" not in both and "Error:" not in both, both
    for part in _parts():
        assert f"=== {part} ===" in done.stdout and f"--- {part}: " in done.stdout, both
    assert list(tmp_path.iterdir()) == []
