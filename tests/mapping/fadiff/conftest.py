"""Fixtures shared by the FADiff tests."""

import pytest

from twill.mapping.network import Network, chain_network
from twill.mapping.workload import Layer


@pytest.fixture
def inverted_residual() -> Network:
    """MobileNetV2-style block at 28x28: expand 1x1, depthwise 3x3 (96 groups), project 1x1."""
    return chain_network(
        [
            Layer("expand", {"P": 28, "Q": 28, "C": 16, "K": 96}),
            Layer("dw", {"R": 3, "S": 3, "P": 28, "Q": 28}, groups=96),
            Layer("project", {"P": 28, "Q": 28, "C": 96, "K": 24}),
        ],
        "inverted_residual",
    )
