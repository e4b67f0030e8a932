"""The ONNX front end: ONNX models, the built-in PyTorch networks and your own
``torch.nn.Module`` to the mapping family's layers and their producer → consumer graph.

* :mod:`twill.onnx.model`: the reader (:func:`import_model`, :func:`read_onnx`);
* :mod:`twill.onnx.shapes`: loading a model with the shapes the reader needs;
* :mod:`twill.onnx.einsum`: ``Einsum`` nodes that are matrix products;
* :mod:`twill.onnx.model_zoo`, :mod:`twill.onnx.model_zoo_text`: the built-in networks.

An outer layer like :mod:`twill.io` (``sched/`` and ``mapping/`` never import it); onnx and
torch are imported inside the functions that need them, so importing this package needs
neither.
"""

from __future__ import annotations

from twill.onnx.model import OnnxImport, import_model, read_onnx, unique_layers

__all__ = ["OnnxImport", "import_model", "read_onnx", "unique_layers"]
