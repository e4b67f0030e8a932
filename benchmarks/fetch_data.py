"""Fetch the benchmark inputs that do not ship with the repository, checked against SHA-256.

The repository ships every file the tests, the README and the demo read (``data/``). The
large benchmark sets are listed in a checked-in manifest (``data/SUITE/SHA256SUMS``, one
``HASH  FILE`` per line) and downloaded here from their public upstream, at the commit named
in ``data/SUITE/SOURCE.md``:

* ``gs_schedule``: the 18 GS-Schedule random graphs (Yu-Maryland/Differentiable_Scheduler_ICML24,
  MIT; 2 ship, 16 are fetched, 19 MB in all), used by ``benchmarks/gaus_formulation_a.py``.

A file already present with the right checksum is left alone. A present file with another
checksum is reported and never overwritten (remove it to fetch it again). A download is
written to a temporary file beside its target, checked, then renamed into place, so an
interrupted or corrupted download leaves nothing behind.

    make data                                            # every suite
    .venv/bin/python benchmarks/fetch_data.py gs_schedule --files rand_graph_5000_1.gml
    .venv/bin/python benchmarks/fetch_data.py --check    # verify, download nothing

Exit status: 0 every requested file present and verified; 1 a download failed or did not
match its checksum (or, with ``--check``, a file is missing); 2 a bad argument or a present
file with the wrong checksum.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

ROOT = Path(__file__).resolve().parents[1]
# Only the standard library and twill.scratch (itself standard library only) are needed, so
# `make data` runs under any Python 3.10+, in the project's .venv or not (issue 49).
sys.path.insert(1, str(ROOT / "src"))
from twill.scratch import private_scratch  # noqa: E402

DATA = ROOT / "data"
#: Raw-file URL of each suite's upstream folder, at the commit of its SOURCE.md.
SUITES = {
    "gs_schedule": "https://raw.githubusercontent.com/Yu-Maryland/Differentiable_Scheduler_ICML24/"
    "f1a1204c68ba58622b5d25ab5d8a5df0aff1b5ef/graphgml/",
}
MAX_BYTES = 64 * 2**20  # no upstream file is near this; a larger answer is not the file
Opener = Callable[[str], BinaryIO]


class FetchError(Exception):
    """A file could not be fetched or verified; ``code`` is the exit status it implies."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def read_manifest(path: Path) -> dict[str, str]:
    """``{file name: sha256 hex}`` from a ``sha256sum``-style manifest."""
    out = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FetchError(f"{path}: cannot read the manifest ({_reason(exc)})", 2) from exc
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name or "/" in name or name.startswith("."):
            raise FetchError(f"{path}:{n}: expected 'SHA256  FILE', got {line!r}", 2)
        out[name] = digest.lower()
    return out


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def sha256_file(path: Path) -> str:
    """The SHA-256 of the regular file ``path``; anything else (a folder, a device, a file that
    cannot be read) is a :class:`FetchError` with exit status 2."""
    if not path.is_file():
        raise FetchError(f"{path}: not a regular file (remove it to fetch the file)", 2)
    h = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise FetchError(f"{path}: cannot read ({_reason(exc)})", 2) from exc
    return h.hexdigest()


def _urlopen(url: str) -> BinaryIO:
    return urllib.request.urlopen(url, timeout=60)


def _download(url: str, target: Path, digest: str, opener: Opener) -> None:
    """``url`` into ``target`` through a checked temporary file in the same folder."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise FetchError(f"{target.parent}: cannot write here ({_reason(exc)})", 2) from exc
    tmp = Path(name)
    try:
        h, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out, opener(url) as resp:
            for block in iter(lambda: resp.read(1 << 20), b""):
                size += len(block)
                if size > MAX_BYTES:
                    raise FetchError(f"{url}: larger than {MAX_BYTES} bytes", 1)
                h.update(block)
                out.write(block)
        if h.hexdigest() != digest:
            raise FetchError(f"{url}: SHA-256 {h.hexdigest()}, the manifest says {digest}", 1)
        os.replace(tmp, target)
    except OSError as exc:  # urllib's errors are OSErrors
        raise FetchError(f"{url}: {exc}", 1) from exc
    finally:
        tmp.unlink(missing_ok=True)


def fetch_suite(
    suite: str,
    files: list[str] | None = None,
    *,
    data: Path = DATA,
    opener: Opener | None = None,
    download: bool = True,
) -> dict[str, str]:
    """Make every manifest file of ``suite`` (or only ``files``) present and verified.

    Returns ``{file: "present" | "fetched" | "missing"}`` ("missing" only with
    ``download=False``); raises :class:`FetchError` on the first file that is corrupt or cannot
    be fetched.
    """
    get = opener or _urlopen
    folder = data / suite
    manifest = read_manifest(folder / "SHA256SUMS")
    unknown = sorted(set(files or ()) - set(manifest))
    if unknown:
        raise FetchError(f"{suite}: not in its manifest: {', '.join(unknown)}", 2)
    status = {}
    for name in files or sorted(manifest):
        target = folder / name
        if target.exists() or target.is_symlink():
            if sha256_file(target) != manifest[name]:
                raise FetchError(f"{target}: SHA-256 differs from the manifest (remove it)", 2)
            status[name] = "present"
        elif not download:
            status[name] = "missing"
        else:
            _download(SUITES[suite] + name, target, manifest[name], get)
            status[name] = "fetched"
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("suites", nargs="*", metavar="SUITE", help=f"default: {', '.join(SUITES)}")
    ap.add_argument("--files", nargs="+", help="only these files of the (single) suite")
    ap.add_argument("--check", action="store_true", help="verify what is present; no download")
    ap.add_argument("--data", type=Path, default=DATA, help="the data folder (default: data/)")
    args = ap.parse_args(argv)
    suites = args.suites or list(SUITES)
    if set(suites) - set(SUITES):
        ap.error(f"unknown suite (choose from {', '.join(SUITES)})")
    if args.files and len(suites) != 1:
        ap.error("--files needs exactly one SUITE")
    missing = 0
    try:
        for suite in suites:
            status = fetch_suite(suite, args.files, data=args.data, download=not args.check)
            n = {s: sum(v == s for v in status.values()) for s in ("present", "fetched", "missing")}
            missing += n["missing"]
            print(
                f"{suite}: {n['fetched']} fetched, {n['present']} present and verified"
                + (f", {n['missing']} missing (`make data` fetches them)" if n["missing"] else "")
            )
    except FetchError as exc:
        print(f"fetch_data: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("fetch_data: interrupted", file=sys.stderr)
        return 130
    return 1 if missing else 0


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
