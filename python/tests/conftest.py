"""Shared fixtures: the repository's scenarios and a small sweep."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def scenarios() -> Path:
    return REPO / "scenarios"


SWEEP20 = """
duration = "5s"
[[device]]
name = "sda"
model = "hdd"
[[task]]
name = "copy"
job = "dd"
[[task]]
name = "reader"
job = "randread"
file = "/mnt/sda/db"
[sweep]
random = { points = 20, seed = 3 }
"vm.dirty_bytes" = { min = "16MiB", max = "1GiB", log = true }
"queue/scheduler" = ["mq-deadline", "bfq", "kyber"]
"""


@pytest.fixture
def sweep20(tmp_path) -> Path:
    p = tmp_path / "sweep20.toml"
    p.write_text(SWEEP20)
    return p
