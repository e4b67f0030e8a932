"""Readers and writers at the edge of twill (outer layer; the core never imports it).

* :mod:`twill.io.graph_json`: JSON / YAML dependence graphs (schema in ``docs/formats.md``).
* :mod:`twill.io.hatschet`: HatScheT ``.graphml`` + resource-model XML.
* :func:`load_graph`: one entry for the CLI and the solvers' users: a kernel name, a
  ``.json``/``.yaml``/``.yml`` file or a ``.graphml`` file.
"""

from __future__ import annotations

from pathlib import Path

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph

__all__ = ["load_graph"]


def load_graph(
    spec: str | Path, resource_model: str | Path | None = None, arch: str | None = None
) -> DependenceGraph:
    """Load a dependence graph from a kernel name or a file.

    Parameters
    ----------
    spec
        A name in :data:`twill.kernels.KERNELS`, or a path ending in ``.json``, ``.yaml``,
        ``.yml`` or ``.graphml`` (HatScheT).
    resource_model
        HatScheT resource-model XML (only for ``.graphml``; default: found beside the file).
    arch
        Target of a Triton kernel ``FILE.py:KERNEL`` or a ``.ttgir`` file (``sm_90a`` or
        ``sm_100a``; :func:`twill.triton.import_triton`).

    Returns
    -------
    DependenceGraph
        A graph that has passed :func:`twill.sched.validate.check_graph`.

    Raises
    ------
    InvalidProblemError
        Unknown kernel or file type, or an invalid graph (every defect, naming the file).
    InputFormatError
        The file cannot be parsed.
    FileNotFoundError
        The file does not exist.

    Examples
    --------
    >>> load_graph("flash_attention_forward_simplified").names
    ['S', 'P', 'O']
    """
    from twill.sched.kernels import KERNELS

    text = str(spec)
    path = Path(text)
    suffix = path.suffix.lower()
    if resource_model is not None and suffix != ".graphml":
        raise InvalidProblemError(
            "a resource model only applies to HatScheT .graphml files", source=text
        )
    if suffix == ".ttgir" or (":" in text and text.rpartition(":")[0].endswith(".py")):
        if arch is None:
            raise InvalidProblemError("a Triton kernel needs --arch sm_90a or sm_100a", source=text)
        from twill.triton import import_triton

        return import_triton(text, arch)
    if text in KERNELS and not path.exists():
        return KERNELS[text]()
    if suffix in (".json", ".yaml", ".yml"):
        from twill.io.graph_json import read_graph

        return read_graph(path)
    if suffix == ".graphml":
        from twill.io.hatschet import read_hatschet

        if not path.is_file():
            raise FileNotFoundError(2, "No such file or directory", text)
        return read_hatschet(path, resource_model)
    if path.exists():
        raise InvalidProblemError(
            f"unsupported file type {suffix or '(none)'!r}; expected .json, .yaml, .yml or "
            ".graphml",
            source=text,
        )
    raise InvalidProblemError(
        f"neither a file nor a known kernel; kernels: {', '.join(sorted(KERNELS))}", source=text
    )
