"""Every Python block of docs/python.md and the README runs as written, in order, from the
repository's top directory (where their paths point). A block that cannot run here carries a
`<!-- not run: REASON -->` line just above it."""

import os
import re

import pytest

from conftest import REPO

FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SKIP = "<!-- not run:"


def python_blocks(name):
    text = (REPO / name).read_text()
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        yield line, m.group(1), before.startswith(SKIP)


@pytest.mark.parametrize("name", ["docs/python.md", "README.md"])
def test_the_python_blocks_run_as_written(name, monkeypatch):
    monkeypatch.chdir(REPO)
    namespace = {"__name__": "__docs__"}
    ran = 0
    for line, code, skipped in python_blocks(name):
        if skipped:
            continue
        # Each block runs after the ones before it, as a reader types them into one session.
        exec(compile(code, f"{name}:{line}", "exec"), namespace)
        ran += 1
    assert ran > 0, f"{name} has no Python block to run"
    # The session leaves nothing in the checkout: runs without `out` use temporary directories.
    assert not (REPO / "results" / "__docs__").exists()
    assert os.getcwd() == str(REPO)
