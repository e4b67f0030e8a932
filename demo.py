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
    for part in PARTS:
        try:
            module = importlib.import_module(f"demos.{part}")
        except ModuleNotFoundError as exc:
            if exc.name != f"demos.{part}":
                raise
            continue
        print(f"\n=== {part} ===", flush=True)
        start = time.perf_counter()
        module.run()
        print(f"--- {part}: {time.perf_counter() - start:.1f} s", flush=True)
    print("\nNext: activate the environment, then try the README's commands:")
    print("    . .venv/bin/activate")
    print("    twill kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
