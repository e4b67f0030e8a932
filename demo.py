"""`make demo`: one short run of each part of twill, each printing a summary table.

Each part is a module in ``demos/`` with a ``run()`` function; they run in the order below.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

PARTS = ["phase1", "phase2", "gaus", "mapping", "fadiff"]


def main() -> int:
    from twill.scratch import private_scratch

    with private_scratch():  # torch's and Triton's caches, temporary files: removed at exit
        _run_parts()
    print("\nNext: activate the environment, then try the README's commands:")
    print("    . .venv/bin/activate")
    print("    twill kernels")
    return 0


def _run_parts() -> None:
    for part in PARTS:
        module = importlib.import_module(f"demos.{part}")
        print(f"\n=== {part} ===", flush=True)
        start = time.perf_counter()
        module.run()
        print(f"--- {part}: {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
