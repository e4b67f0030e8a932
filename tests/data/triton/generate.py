"""Regenerate the checked-in TTGIR of the corpus kernels (needs Triton 3.9):

    cd tests/data/triton && PYTHONPATH=../../../src python generate.py [KERNEL ...]

Each ``KERNEL.py`` (kernel ``KERNEL``, options from ``kernels.yaml``) is compiled for sm_90a and
sm_100a as ``twill import-triton`` compiles it and written to ``KERNEL.ARCH.ttgir``; a kernel
that does not compile for an architecture is reported and skipped.
"""

import re
import sys
from pathlib import Path

from twill.errors import TwillError
from twill.triton import kernel_options
from twill.triton.compiler import compile_ttgir


def main(names: list[str]) -> None:
    here = Path(__file__).parent
    for py in sorted(here.glob("*.py")):
        if py.name == "generate.py" or (names and py.stem not in names):
            continue
        for arch in ("sm_90a", "sm_100a"):
            opts = kernel_options(Path(py.name), py.stem, arch)
            try:
                c = compile_ttgir(
                    py.name,
                    py.stem,
                    arch,
                    opts.signature,
                    opts.constexprs,
                    num_warps=opts.num_warps,
                )
            except TwillError as exc:
                print(f"{py.stem} {arch}: {exc}")
                continue
            text = c.ttgir.replace(f"{here.resolve()}/", "")  # locations name the file only
            text = re.sub(r'"[^"]*/site-packages/', '"', text)  # and Triton's own files
            Path(f"{py.stem}.{arch}.ttgir").write_text(text.rstrip("\n") + "\n", "utf-8")
            print(f"{py.stem} {arch}: written")


if __name__ == "__main__":
    main(sys.argv[1:])
