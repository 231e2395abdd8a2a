"""Every socket test leaves no consumer running."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _every_socket_closed(close_sockets_left_open):  # noqa: ANN001, ANN202
    return None
