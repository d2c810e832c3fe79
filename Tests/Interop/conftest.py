"""Fixtures: one long-running `pushgate sandbox` for the session (`sandbox`), and a private one for
tests that change global sandbox state such as issued access tokens (`own_sandbox`).

PUSHGATE_BIN names the binary (default .build/release/pushgate, relative to the repo root).
"""

from __future__ import annotations

import pytest

from support import Sandbox, start_sandbox


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory) -> Sandbox:
    running = start_sandbox(tmp_path_factory.mktemp("sandbox"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def own_sandbox(tmp_path) -> Sandbox:
    running = start_sandbox(tmp_path / "sandbox")
    try:
        yield running
    finally:
        running.stop()
