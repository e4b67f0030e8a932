"""Run Stream on one ONNX model, fused (Stream's own fusion groups) or layer by layer.

Runs inside Stream's own Python 3.12 virtual environment (``.stream-venv``), called as a
subprocess by ``benchmarks/stream_peer.py``; prints one JSON object on stdout.

Usage: python run_stream.py HARDWARE.yaml MODEL.onnx OUTDIR {fused,blocks,layer} TIME_LIMIT_S

``fused`` lets Stream derive its fusion groups; ``blocks`` gives it one group per top-level
module of the exported model (the first component of the ONNX node names, e.g. one
inverted-residual block of MobileNetV2); ``layer`` one group per layer.
"""

import json
import os
import sys
import time

import stream
from stream.api import SolveOptions, evaluate_mapping


def module_cut_points(model: str) -> list[str]:
    """The last node of every top-level module (``/3/...``) but the final one: a cut point
    ends its group, so each module becomes one fusion group."""
    import onnx

    last: dict[str, str] = {}
    for node in onnx.load(model, load_external_data=False).graph.node:
        parts = node.name.split("/")
        if len(parts) > 2 and node.op_type != "Constant":
            last[parts[1]] = node.name
    return list(last.values())[:-1]


def main() -> int:
    hw, model, out = (os.path.abspath(p) for p in sys.argv[1:4])
    mode, limit = sys.argv[4:6]
    # Stream finds its example SIMD and pooling cores relative to its package folder
    os.chdir(os.path.dirname(os.path.dirname(stream.__file__)))
    stage = {
        "fused": {},
        "blocks": {"fusion_cut_points": module_cut_points(model)},
        "layer": {"fusion_cut_points": "per-layer"},
    }[mode]
    t0 = time.perf_counter()
    est = evaluate_mapping(
        hw,
        model,
        out,
        options=SolveOptions(artifacts=False, time_limit_s=float(limit), stage_options=stage),
    )
    print(
        json.dumps(
            {
                "mode": mode,
                "cycles": float(est.cycles),
                "groups": len(est.group_cycles),
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
