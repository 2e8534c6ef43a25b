"""Engine test configuration: tests marked ``slow`` run only when asked for.

Run them with ``-m slow`` (or any ``-m`` expression naming ``slow``) or with
``IVM_SLOW=1``; the default run skips them so it stays within a few minutes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: references


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("-m") or "") or os.environ.get("IVM_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or IVM_SLOW=1")
    for item in items:
        if "slow" in item.keywords and str(item.path).startswith(
            str(config.rootpath / "tests" / "engine")
        ):
            item.add_marker(skip)
