"""Run Stream on one ONNX model, fused (Stream's own fusion groups) or layer by layer.

Runs inside Stream's own Python 3.12 virtual environment (``.stream-venv``), called as a
subprocess by ``benchmarks/stream_peer.py``; prints one JSON object on stdout.

Usage: python run_stream.py HARDWARE.yaml MODEL.onnx OUTDIR {fused,layer} TIME_LIMIT_S
"""

import json
import os
import sys
import time

import stream
from stream.api import SolveOptions, evaluate_mapping


def main() -> int:
    hw, model, out = (os.path.abspath(p) for p in sys.argv[1:4])
    mode, limit = sys.argv[4:6]
    # Stream finds its example SIMD and pooling cores relative to its package folder
    os.chdir(os.path.dirname(os.path.dirname(stream.__file__)))
    stage = {} if mode == "fused" else {"fusion_cut_points": "per-layer"}
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
