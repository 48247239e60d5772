"""wblab: the writeback lab, from Python.

Simulate the Linux writeback and block I/O path — page cache and dirty throttling, flusher
threads, the block layer and its schedulers, devices — and get the results as pandas
DataFrames::

    import wblab
    r = wblab.run("scenarios/default.toml")          # or a dict, or TOML text
    r.tasks[["name", "throughput_mb_s", "pauses.p99_ms"]]
    r.timeseries.plot(x="t_s", y=["nr_dirty_pages", "dirty_thresh_pages"])

    s = wblab.sweep("scenarios/noisy-neighbour.toml", backend="local")   # or "ray", "dask"
    s.tasks.pivot_table(index="vm.dirty_bytes", columns="group", values="op_p99_ms")

Every error is a :class:`WblabError` whose message names the file, line and key, with a hint.
"""

from ._wblab import WblabError
from ._wblab import version as _version
from .results import Result
from .scenario import check, scenario_text
from .sweeps import SweepResult, sweep
from .run import measure, run

__version__ = _version()

__all__ = [
    "Result",
    "SweepResult",
    "WblabError",
    "__version__",
    "check",
    "measure",
    "run",
    "scenario_text",
    "sweep",
]
