"""tests/ mirrors src/twill/: every package of the source tree has a test folder of the same path.

A new sub-package without tests fails here, and so does a test folder whose package was moved
away (its tests would silently test the old layout's imports).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "twill"
TESTS = ROOT / "tests"

# test folders that check the whole house rather than one package
CROSS_CUTTING = {"conformance", "fuzz", "data"}


def packages() -> set[str]:
    """Every sub-package of twill, as a path relative to src/twill (``sched/gaus``)."""
    return {
        init.parent.relative_to(SRC).as_posix()
        for init in SRC.rglob("__init__.py")
        if init.parent != SRC
    }


def test_every_package_has_a_test_folder() -> None:
    missing = sorted(p for p in packages() if not (TESTS / p).is_dir())
    assert missing == [], f"packages without a test folder under tests/: {missing}"


def test_every_test_folder_mirrors_a_package() -> None:
    folders = {
        d.relative_to(TESTS).as_posix()
        for d in TESTS.rglob("*")
        if d.is_dir() and d.name != "__pycache__"
    }
    strays = sorted(
        f for f in folders if f.split("/")[0] not in CROSS_CUTTING and f not in packages()
    )
    assert strays == [], f"test folders with no package of that path in src/twill: {strays}"
