"""Resources of a compiled kernel, shared by the Triton front end (the attribute route) and the
Gluon kernel templates (``twill.codegen.gluon``): ``ptxas -v``'s registers and spills, and
Triton's cache in a private folder. Imports Triton (the package) only, none of twill's
layers."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["ptxas_resources", "scratch_cache"]


def ptxas_resources(ptx: str, arch: str) -> tuple[int | None, int | None]:
    """Registers per thread and spilled bytes (stores + loads) from ``ptxas -v``."""
    from triton import knobs

    tool = knobs.nvidia.ptxas_blackwell if arch != "sm_80" else knobs.nvidia.ptxas
    with tempfile.TemporaryDirectory(prefix="twill-ptxas-") as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx, encoding="utf-8")
        try:
            out = subprocess.run(
                [tool.path, "-v", f"--gpu-name={arch}", str(src), "-o", str(Path(tmp) / "k.cubin")],
                capture_output=True,
                text=True,
                timeout=300,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            return None, None
    log = out.stdout + out.stderr
    regs = re.search(r"Used (\d+) registers", log)
    spill = re.findall(r"(\d+) bytes spill (?:stores|loads)", log)
    return (int(regs.group(1)) if regs else None), sum(int(s) for s in spill)


@contextmanager
def scratch_cache() -> Iterator[str]:
    """Triton's kernel cache in a fresh temporary folder, removed on exit (so a compile never
    reads a stale kernel nor leaves files behind)."""
    from triton import knobs

    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, no warning
    with tempfile.TemporaryDirectory(prefix="twill-triton-cache-") as tmp:
        with knobs.cache.scope():
            knobs.cache.dir = tmp
            yield tmp
