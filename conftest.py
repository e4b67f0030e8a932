"""Doctest collection over ``src/twill`` (``--doctest-modules``): modules that need an optional
extra are skipped when that extra is not installed, so collection never breaks."""

from __future__ import annotations

import importlib.util

# glob under the repository root -> the package the module imports at load time
_OPTIONAL = {
    "src/twill/mapping/zigzag_peer.py": "zigzag",
    "src/twill/**/*triton*.py": "triton",
    "src/twill/**/*onnx*.py": "onnx",
}

collect_ignore_glob = [
    pattern for pattern, package in _OPTIONAL.items() if importlib.util.find_spec(package) is None
]
