from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import sam


@pytest.fixture(scope="session")
def source_template() -> dict[str, Any]:
    return sam.load_template()


@pytest.fixture(scope="session")
def cfn_template() -> dict[str, Any]:
    return sam.transform()
