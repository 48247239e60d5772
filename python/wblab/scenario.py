"""Scenarios as the package takes them: a path to a TOML (or fio job) file, TOML text, or a
dict shaped like the TOML file."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple, Union

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
        return _wblab.toml_of_json(json.dumps(scenario)), DICT
    if isinstance(scenario, os.PathLike) or (isinstance(scenario, str) and "\n" not in scenario and "=" not in scenario):
        path = Path(scenario)
        try:
            return path.read_text(), str(path)
        except OSError as e:
            raise _wblab.WblabError(f"error: {path}: cannot read the scenario file: {e.strerror}") from None
    if isinstance(scenario, str):
        return scenario, "<string>"
    raise TypeError(f"a scenario is a path, TOML text or a dict, not {type(scenario).__name__}")


DICT = "<dict>"
_HEADER = re.compile(r"^\[(\[)?\s*([^\]]+?)\s*\]\]?\s*$")
_KEY = re.compile(r'^\s*("(?:[^"\\]|\\.)*"|[A-Za-z0-9_.-]+)\s*=')
_LOCATED = re.compile(r"<dict>:(\d+):\d+: ")


def dict_paths(text: str) -> Dict[int, str]:
    """For each line of the TOML written from a dict, the dict path it came from:
    ``device[0].model``, ``sysctl["vm.dirty_ratio"]``, ``task[1]`` for a table's header."""
    paths: Dict[int, str] = {}
    counts: Dict[str, int] = {}
    table = ""
    for n, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            name = header.group(2)
            if header.group(1):
                counts[name] = counts.get(name, -1) + 1
                table = f"{name}[{counts[name]}]"
            else:
                # A sub-table of the last array element (`[task.x]`) keeps its index.
                parent, _, rest = name.partition(".")
                table = f"{parent}[{counts[parent]}].{rest}" if parent in counts and rest else name
            paths[n] = table
            continue
        key = _KEY.match(line)
        if key:
            k = key.group(1)
            part = f"[{k}]" if k.startswith('"') else (f".{k}" if table else k)
            paths[n] = f"{table}{part}"
    return paths


@contextlib.contextmanager
def dict_errors(text: str, name: str) -> Iterator[None]:
    """Errors about a scenario given as a dict name the dict's keys, not lines of the TOML
    written from it (which the user never saw)."""
    try:
        yield
    except _wblab.WblabError as e:
        if name != DICT:
            raise
        paths = dict_paths(text)
        message = _LOCATED.sub(lambda m: f"<dict> at {paths.get(int(m.group(1)), 'the top level')}: ", str(e))
        raise _wblab.WblabError(message) from None


def check(scenario: Scenario) -> Dict[str, Any]:
    """Check a scenario as ``wblab check`` does and return its resolved form (every knob
    explicit, as ``wblab check --json`` prints it); a sweep gives its first point.

    Raises :class:`wblab.WblabError` naming the file, line and key of every mistake.
    """
    text, name = scenario_text(scenario)
    with dict_errors(text, name):
        return json.loads(_wblab.check(text, name))
