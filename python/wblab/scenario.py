"""Scenarios as the package takes them: a path to a TOML (or fio job) file, TOML text, or a
dict shaped like the TOML file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Tuple, Union

from . import _wblab

Scenario = Union[str, "os.PathLike[str]", Dict[str, Any]]


def scenario_text(scenario: Scenario) -> Tuple[str, str]:
    """The scenario's TOML text and the name errors give it.

    A dict is written as TOML (keys as in the scenario file: ``{"duration": "10s",
    "device": [{"name": "sda", "model": "ssd"}], "task": [...]}``); a string naming an
    existing file is read (relative paths inside it are from its directory); any other
    string is taken as TOML text.
    """
    if isinstance(scenario, dict):
        return _wblab.toml_of_json(json.dumps(scenario)), "<dict>"
    if isinstance(scenario, os.PathLike) or (isinstance(scenario, str) and "\n" not in scenario and "=" not in scenario):
        path = Path(scenario)
        try:
            return path.read_text(), str(path)
        except OSError as e:
            raise _wblab.WblabError(f"error: {path}: cannot read the scenario file: {e.strerror}") from None
    if isinstance(scenario, str):
        return scenario, "<string>"
    raise TypeError(f"a scenario is a path, TOML text or a dict, not {type(scenario).__name__}")


def check(scenario: Scenario) -> Dict[str, Any]:
    """Check a scenario as ``wblab check`` does and return its resolved form (every knob
    explicit, as ``wblab check --json`` prints it); a sweep gives its first point.

    Raises :class:`wblab.WblabError` naming the file, line and key of every mistake.
    """
    text, name = scenario_text(scenario)
    return json.loads(_wblab.check(text, name))
