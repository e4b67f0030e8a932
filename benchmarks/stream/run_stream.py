"""Run Stream on one ONNX model, fused (Stream's own fusion groups) or layer by layer.

Runs inside Stream's own Python 3.12 virtual environment (``.stream-venv``), called as a
subprocess by ``benchmarks/stream_peer.py``; prints one JSON object on stdout.

Usage: python run_stream.py HARDWARE.yaml MODEL.onnx OUTDIR {fused,blocks,layer} TIME_LIMIT_S

``fused`` lets Stream derive its fusion groups; ``layer`` gives it one group per layer;
``blocks`` one group per top-level module of the exported model (the first component of the
ONNX node names, e.g. one inverted-residual block of MobileNetV2). In ``blocks`` mode a group
whose allocation Stream proves infeasible is split into its layers and the run repeated;
``split`` in the output lists those modules.
"""

import json
import logging
import os
import sys
import time

import stream
from stream.api import SolveOptions, evaluate_mapping
from stream.ir.infeasibility import InfeasibleAllocationError


def module_groups(model: str) -> list[list[str]]:
    """The model's nodes (Constants left out) in order, grouped by top-level module (``/3/...``)."""
    import onnx

    groups: dict[str, list[str]] = {}
    for node in onnx.load(model, load_external_data=False).graph.node:
        parts = node.name.split("/")
        if len(parts) > 2 and node.op_type != "Constant":
            groups.setdefault(parts[1], []).append(node.name)
    return list(groups.values())


def cut_points(groups: list[list[str]]) -> list[str]:
    """A cut point ends its group: the last node of every group but the final one."""
    return [g[-1] for g in groups[:-1]]


class _Watch(logging.Handler):
    """Reads Stream's log: the index of the fusion group being solved, and how many layers
    fell back to an ideal-cycle estimate (no valid ZigZag mapping) since the last reset."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.group = -1
        self.fallbacks = 0

    def reset(self) -> None:
        self.group, self.fallbacks = -1, 0

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg.startswith("Running inner pipeline for group "):
            self.group = int(msg.split()[5])
        elif "Falling back to an ideal-cycle estimate" in msg:
            self.fallbacks += 1


WATCH = _Watch()


def solve(hw: str, model: str, out: str, stage: dict, limit: str):  # noqa: ANN201
    WATCH.reset()
    options = SolveOptions(artifacts=False, time_limit_s=float(limit), stage_options=stage)
    return evaluate_mapping(hw, model, out, options=options)


def solve_blocks(hw: str, model: str, out: str, limit: str) -> tuple:
    """Module groups; a group Stream cannot allocate is split into its layers, then retried."""
    groups = module_groups(model)
    split: list[str] = []
    while True:
        try:
            return solve(hw, model, out, {"fusion_cut_points": cut_points(groups)}, limit), split
        except InfeasibleAllocationError:
            bad = WATCH.group
            if not 0 <= bad < len(groups) or len(groups[bad]) == 1:
                raise
            split.append(groups[bad][0].split("/")[1])
            groups[bad : bad + 1] = [[name] for name in groups[bad]]


def main() -> int:
    hw, model, out = (os.path.abspath(p) for p in sys.argv[1:4])
    mode, limit = sys.argv[4:6]
    # Stream finds its example SIMD and pooling cores relative to its package folder
    os.chdir(os.path.dirname(os.path.dirname(stream.__file__)))
    log = logging.getLogger("stream")
    log.addHandler(WATCH)
    log.setLevel(logging.INFO)  # the watch reads INFO records; the console still shows WARNING+
    t0 = time.perf_counter()
    split: list[str] = []
    if mode == "blocks":
        est, split = solve_blocks(hw, model, out, limit)
    else:
        stage = {} if mode == "fused" else {"fusion_cut_points": "per-layer"}
        est = solve(hw, model, out, stage, limit)
    row = {
        "mode": mode,
        "cycles": float(est.cycles),
        "groups": len(est.group_cycles),
        "seconds": round(time.perf_counter() - t0, 1),
        "fallbacks": WATCH.fallbacks,
    }
    if mode == "blocks":
        row["split"] = split
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
