"""The on-disk store of a design-space sweep: one JSON line per finished (architecture, layer)
pair, appended as each pair finishes, so that a sweep stopped at any point resumes where it was.

Consistency under a kill at any instant:

* each record is one ``write`` of one whole line to a file opened with ``O_APPEND``: once the
  call returns the line is in the kernel and survives the process (``kill -9`` included); the
  file is ``fsync``-ed at most every :data:`FSYNC_EVERY_S` seconds and on close, which bounds
  what a power cut can take;
* a line cut short (the machine stopped in the middle of a write) is the last line, without its
  newline: :meth:`PairStore.open` ignores it and cuts it off before appending, as it ignores
  any line that is not a whole record;
* a record is keyed by the architecture's fingerprint, the layer's shape and the mapper's
  settings; a key read again is not used twice (:attr:`PairStore.duplicates` counts them, and
  :attr:`PairStore.recomputed` counts the appends of keys already present, which a sweep never
  makes: both are reported so that a resume can be checked).

Preconditions: one writer at a time per store: a sweep holds the file's lock (``flock``) for its
run, and a second one on the same folder is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twill.errors import InvalidProblemError
from twill.mapping.arch import Arch

__all__ = ["FSYNC_EVERY_S", "STORE_NAME", "arch_fingerprint", "PairStore"]

log = logging.getLogger(__name__)

#: Seconds between two ``fsync`` calls of the store while a sweep appends to it.
FSYNC_EVERY_S = 1.0
#: The store's file name in the output folder.
STORE_NAME = "pairs.jsonl"
_REQUIRED = ("key", "arch", "layer", "status")


def arch_fingerprint(arch: Arch) -> str:
    """16 hex digits that change with any field of ``arch`` that a mapping or its cost reads
    (the same in every process: sets are sorted, no ``hash()``).

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> arch_fingerprint(gemmini_arch()) == arch_fingerprint(gemmini_arch())
    True
    >>> arch_fingerprint(gemmini_arch()) == arch_fingerprint(gemmini_arch(dram_bandwidth=16))
    False
    """
    levels = [
        [lv.name, lv.entries, lv.instances, lv.word_bits, sorted(v.value for v in lv.keeps),
         lv.energy_pj, lv.bandwidth, lv.bandwidth_shared, lv.block_size,
         None if lv.spatial_dims is None else sorted(d.value for d in lv.spatial_dims),
         None if lv.partition is None else sorted((v.value, s) for v, s in lv.partition)]
        for lv in arch.levels
    ]  # fmt: skip
    text = json.dumps([arch.macs, arch.mac_energy_pj, levels], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class PairStore:
    """The records of one store file, by key, and the handle that appends to it."""

    path: Path
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    duplicates: int = 0
    ignored: int = 0
    recomputed: int = 0
    _fd: int | None = None
    _synced_at: float = 0.0

    @classmethod
    def open(cls, path: str | Path) -> PairStore:
        """Read the store at ``path`` (created when missing), cut off a torn last line, and
        open it for appending."""
        store = cls(Path(path))
        data = store.path.read_bytes() if store.path.exists() else b""
        whole = data[: data.rfind(b"\n") + 1]
        if len(whole) < len(data):
            log.warning("%s: ignoring a torn last line (%d bytes)", path, len(data) - len(whole))
            store.ignored += 1
            with store.path.open("r+b") as fh:
                fh.truncate(len(whole))
        for line in whole.splitlines():
            store._read_line(line)
        store._fd = os.open(store.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        store._lock()
        store._synced_at = time.monotonic()
        return store

    def _lock(self) -> None:
        """Hold the file's exclusive lock while open (POSIX): a second sweep on the same folder
        is refused instead of interleaving its pairs with this one's."""
        try:
            import fcntl
        except ImportError:  # not POSIX: one writer is the caller's to ensure
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)  # type: ignore[arg-type]
            self._fd = None
            raise InvalidProblemError(
                "another sweep is writing this store; wait for it or give another folder",
                source=str(self.path),
            ) from None

    def _read_line(self, line: bytes) -> None:
        try:
            rec = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            rec = None
        if not isinstance(rec, dict) or not all(k in rec for k in _REQUIRED):
            self.ignored += 1
            return
        if rec["key"] in self.records:
            self.duplicates += 1
            return
        self.records[rec["key"]] = rec

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def append(self, record: dict[str, Any]) -> None:
        """Persist ``record`` (a whole line, one ``write``) and keep it."""
        if self._fd is None:
            raise ValueError(f"{self.path}: the store is closed")
        if record["key"] in self.records:
            self.recomputed += 1
        line = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()
        written = os.write(self._fd, line)
        while written < len(line):  # a short write (a full disk raises instead)
            written += os.write(self._fd, line[written:])
        self.records.setdefault(record["key"], record)
        if time.monotonic() - self._synced_at >= FSYNC_EVERY_S:
            os.fsync(self._fd)
            self._synced_at = time.monotonic()

    def close(self) -> None:
        """``fsync`` and close (safe to call twice)."""
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> PairStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
