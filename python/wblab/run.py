"""Running one scenario, simulated or (as root) on this machine."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Dict, Optional, Sequence, Union

from . import _wblab
from .results import Result
from .scenario import Scenario, dict_errors, scenario_text


def run(
    scenario: Scenario,
    *,
    out: Optional[Union[str, Path]] = None,
    seed: Optional[int] = None,
    check: bool = False,
    report: bool = False,
) -> Union[Result, Dict[str, Result]]:
    """Simulate ``scenario`` (a path, TOML text or a dict) and return its :class:`Result`.

    The results directory is ``out`` (created), or a new temporary directory. ``seed``
    overrides the scenario's; ``check`` checks the model's laws while running (a broken law
    raises :class:`wblab.WblabError`); ``report`` also draws the SVG graphs and report.html.
    A file that lists several kernels (``kernel = ["2.6.20", "6.x"]``) runs each and returns
    a dict of one :class:`Result` per kernel, in the file's order (with ``out``, each in
    ``out/<kernel>``, as ``wblab run`` writes them); a file with a ``[sweep]`` is refused: use
    :func:`wblab.sweep`. The interpreter's lock is released while the simulation runs, so
    threads may run several at once.

    A temporary directory belongs to the returned :class:`Result`, which removes it when
    closed or garbage-collected (pass ``out`` to keep the files); a run that fails removes it
    at once.
    """
    text, name = scenario_text(scenario)
    with dict_errors(text, name):
        kernels = _wblab.kernels(text, name)
        if len(kernels) == 1:
            return _run_one(text, name, out, seed, check, report, None)
        return {
            kernel: _run_one(text, name, None if out is None else Path(out) / subdir, seed, check, report, kernel)
            for kernel, subdir in kernels
        }


def _run_one(text, name, out, seed, check, report, kernel) -> Result:
    """One kernel's run into ``out``, or into a temporary directory the Result owns."""
    if out is not None:
        _wblab.run(text, name, str(out), seed, check, report, kernel)
        return Result(out)
    directory = tempfile.mkdtemp(prefix="wblab-")
    try:
        _wblab.run(text, name, directory, seed, check, report, kernel)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return Result(directory, temporary=True)


def measure(scenario: Union[str, Path], *, out: Union[str, Path], args: Sequence[str] = ()) -> Result:
    """Run the scenario's workload on THIS machine, as ``wblab measure`` does (root needed:
    loop devices, sysctls and sysfs knobs are set and restored), and return its results.

    ``args`` are more ``wblab measure`` options (``["--scratch", "/mnt/scratch"]``). Progress
    and errors are printed as the command prints them; a failure raises
    :class:`wblab.WblabError`.
    """
    code = _wblab.main(["measure", str(scenario), "--out", str(out), *args])
    if code != 0:
        raise _wblab.WblabError(f"wblab measure {scenario} failed (see its message above)")
    return Result(out)
