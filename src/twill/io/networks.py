"""Reading DOSA's network workload folders (``layers.yaml`` plus one problem YAML per layer)
into :class:`~twill.mapping.network.Network` graphs.

The edges come from :mod:`twill.mapping.network`; this module only finds and reads
the files. The data root is an argument; :func:`default_workload_root` is the default the CLI
(``twill fuse --workloads DIR``), the benchmarks and the demos use: DOSA's workloads, shipped
with the package in ``twill/data/workloads/dosa`` (BSD-2-Clause, ``LICENSE`` and ``SOURCE.md``
beside them).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from twill.errors import InvalidProblemError
from twill.mapping.network import (
    Network,
    build_network,
    fsrcnn,
    network_key,
    network_name,
)
from twill.mapping.workload import Layer

__all__ = [
    "SHIPPED_WORKLOADS",
    "WORKLOADS_ENV",
    "default_workload_root",
    "load_network",
    "read_network_layers",
]


#: Environment variable naming DOSA's ``workloads`` folder when no root is passed.
WORKLOADS_ENV = "TWILL_WORKLOADS"


#: DOSA's ``workloads`` folder as installed with the package.
SHIPPED_WORKLOADS = Path(__file__).resolve().parent.parent / "data" / "workloads" / "dosa"


def default_workload_root() -> Path:
    """``$TWILL_WORKLOADS`` when set, else the DOSA workloads shipped with the package
    (:data:`SHIPPED_WORKLOADS`).

    Never relative to the current folder: a network name means the same from anywhere.
    """
    env = os.environ.get(WORKLOADS_ENV)
    return Path(env).resolve() if env else SHIPPED_WORKLOADS


def read_network_layers(folder: str | Path) -> list[Layer]:
    """The layers of one workload folder, in the order of its ``layers.yaml``.

    Raises
    ------
    InvalidProblemError
        When ``layers.yaml`` is missing or not a list of file stems, or a layer file is bad.
    """
    from twill.io.timeloop import load_yaml, read_layer

    folder = Path(folder)
    order_file = folder / "layers.yaml"
    if not order_file.is_file():
        raise InvalidProblemError("layers.yaml not found", source=str(folder))
    names = load_yaml(order_file)
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        raise InvalidProblemError("expected a list of layer file stems", source=str(order_file))
    # each layer counts once in a network (a file's ``count`` is for CoSA's per-layer runs)
    return [replace(read_layer(folder / f"{n}.yaml", name=n), count=1) for n in names]


def load_network(name: str, root: str | Path | None = None) -> Network:
    """One of :data:`~twill.mapping.network.NETWORKS` read from ``root`` (DOSA's
    ``workloads`` folder; :func:`default_workload_root` when ``None``) and named
    ``dosa_NAME`` (``name`` may be ``dosa_bert`` or ``bert``), or one of
    :data:`~twill.mapping.network.IMAGE_NETWORKS`, which are written in code."""
    key = network_key(name)
    if key == "fsrcnn":
        return fsrcnn()
    folder = Path(root or default_workload_root()) / key
    net = build_network(key, read_network_layers(folder), str(folder))
    return replace(net, name=network_name(key))
