"""Sweeps: one scenario at many points, on this machine's cores, on a Ray cluster or on a
Dask cluster — the same points, the same table."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, List, Optional, Union

import pandas as pd

from . import _wblab
from .scenario import Scenario, dict_errors, scenario_text


class SweepResult:
    """A sweep's table: :attr:`tasks` (``sweep.csv``: a row per point and task group) and
    :attr:`devices` (``sweep-devices.csv``: a row per point and device), each beginning with
    the point's index and one column per swept key, every figure's name ending in its unit
    (``throughput_mb_s``, ``op_p99_ms``, ``util_pct``). :attr:`dir` holds the files, also as
    Parquet. A temporary directory (:func:`wblab.sweep` without ``out=``) belongs to the
    result: removed by :meth:`close` (or a ``with`` block), when the result is
    garbage-collected, or at exit."""

    def __init__(self, directory: Union[str, Path], keys: List[str], *, temporary: bool = False):
        self.dir = Path(directory)
        self.keys = keys
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.dir), True) if temporary else None

    def close(self) -> None:
        """Remove the sweep's temporary directory now (nothing for ``out=``)."""
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self) -> "SweepResult":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<wblab.SweepResult of {', '.join(self.keys)}: {self.tasks['point'].nunique()} points in {self.dir}>"

    def _read(self, name: str) -> pd.DataFrame:
        """A table with the swept keys typed: each key's column keeps the values as written
        ("64MiB", "bfq") as an ordered categorical, in the values' own order (64MiB before
        1GiB; names as the sweep lists them), so sorts and pivots follow it; a key whose
        values are all quantities also gets ``<key>.bytes`` (sizes), ``.bytes_per_s``
        (rates), ``.ns`` (durations) or ``.value`` (numbers)."""
        df = pd.read_csv(self.dir / name, dtype={k: str for k in self.keys})
        for k in self.keys:
            if k not in df.columns:
                continue
            written = list(dict.fromkeys(df[k].dropna()))
            read = _wblab.quantities(written)
            if read is not None:
                unit, numbers = read
                number_of = dict(zip(written, numbers))
                order = sorted(written, key=number_of.__getitem__)
                df.insert(df.columns.get_loc(k) + 1, f"{k}.{unit}", df[k].map(number_of))
            else:
                order = written
            df[k] = pd.Categorical(df[k], categories=order, ordered=True)
        return df

    @property
    def tasks(self) -> pd.DataFrame:
        return self._read("sweep.csv")

    @property
    def devices(self) -> pd.DataFrame:
        return self._read("sweep-devices.csv")

    @property
    def invalid(self) -> pd.DataFrame:
        """The points that are not valid scenarios (a combination of values, such as a task
        starting after a swept duration), which did not run: ``point``, the keys and
        ``reason`` (``sweep-invalid.csv``; empty when every point ran)."""
        if not (self.dir / "sweep-invalid.csv").exists():
            return pd.DataFrame(columns=["point", *self.keys, "reason"])
        # The values as written: a list of what to fix, not a table to pivot.
        return pd.read_csv(self.dir / "sweep-invalid.csv", dtype={k: str for k in self.keys})

    def figure(self, name: str) -> pd.DataFrame:
        """One figure per point, named as ``--where`` names it (``reader.op_p99_ms``,
        ``sda.util_pct``): the points' keys and a column ``name``."""
        item, fig = name.rsplit(".", 1)
        if fig == "throughput":
            fig = "throughput_mb_s"
        t = self.tasks
        if item in set(t["group"]):
            rows = t[t["group"] == item]
        else:
            d = self.devices
            rows = d[d["device"] == item]
        if rows.empty:
            raise _wblab.WblabError(f"error: no group or device `{item}` in this sweep")
        return rows[["point", *self.keys, fig]].rename(columns={fig: name}).reset_index(drop=True)


def _chunks(indices: List[int], size: int) -> List[List[int]]:
    return [indices[i : i + size] for i in range(0, len(indices), size)]


def _run_chunk(text: str, name: str, indices: List[int], check: bool):
    # Runs in a Ray or Dask worker: the package must be installed there.
    from wblab import _wblab as native

    return native.run_points(text, name, indices, 1, check)


def sweep(
    scenario: Scenario,
    *,
    backend: str = "local",
    out: Optional[Union[str, Path]] = None,
    jobs: Optional[int] = None,
    resume: bool = False,
    check: bool = False,
    quiet: bool = True,
    client: Any = None,
    chunk: Optional[int] = None,
) -> SweepResult:
    """Run every point of the scenario's ``[sweep]`` and return the table.

    ``backend``:

    - ``"local"`` — this machine's cores (``jobs`` at once, default all), as ``wblab sweep``;
      ``resume`` keeps the points already in ``out``'s table and runs the rest;
    - ``"ray"`` — ``ray.remote`` tasks on the cluster ``ray.init()`` connects to (a local one
      if none is running);
    - ``"dask"`` — ``client.map`` on a ``distributed.Client`` (``client``, or a new
      ``LocalCluster`` of threads in this process, ``jobs`` of them: the simulator releases the
      interpreter's lock, and no worker process re-imports a script that calls this).

    Points go to workers ``chunk`` at a time (default: about four chunks per worker). Each
    point is one single-threaded, deterministic simulation, so every backend gives the same
    table, byte for byte, in ``out``: ``sweep.csv``, ``sweep-devices.csv`` and their Parquet
    twins. Without ``out``, a new temporary directory that belongs to the returned
    :class:`SweepResult` (removed when it is closed or garbage-collected; at once if the sweep
    fails).
    """
    text, name = scenario_text(scenario)
    with dict_errors(text, name):
        keys, n, _random = _wblab.sweep_info(text, name)
    if out is not None:
        _sweep(text, name, n, Path(out), backend, jobs, resume, check, quiet, client, chunk)
        return SweepResult(out, keys)
    # A temporary directory belongs to the result; a sweep that fails removes it at once.
    directory = Path(tempfile.mkdtemp(prefix="wblab-sweep-"))
    try:
        _sweep(text, name, n, directory, backend, jobs, resume, check, quiet, client, chunk)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return SweepResult(directory, keys, temporary=True)


def _sweep(
    text: str,
    name: str,
    n: int,
    directory: Path,
    backend: str,
    jobs: Optional[int],
    resume: bool,
    check: bool,
    quiet: bool,
    client: Any,
    chunk: Optional[int],
) -> None:
    """Run the sweep into ``directory`` (see :func:`sweep`)."""
    if backend == "local":
        _wblab.sweep_local(text, name, str(directory), jobs or 0, resume, check, quiet)
        return
    if resume:
        raise _wblab.WblabError("error: resume=True is for backend=\"local\"; a distributed sweep writes its table once, at the end")
    indices = list(range(n))
    if backend == "ray":
        import ray

        if not ray.is_initialized():
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote = ray.remote(num_cpus=1)(_run_chunk)
        size = chunk or max(1, n // (4 * workers))
        parts = ray.get([remote.remote(text, name, c, check) for c in _chunks(indices, size)])
    elif backend == "dask":
        own = None
        if client is None:
            from distributed import Client, LocalCluster

            # Threads in this process: the simulator releases the interpreter's lock, so they
            # run in parallel, and no worker process re-imports the caller's script (a plain
            # script without `if __name__ == "__main__"` would run the sweep again in each).
            own = LocalCluster(
                n_workers=1, threads_per_worker=jobs or os.cpu_count() or 2, processes=False, dashboard_address=None
            )
            client = Client(own)
        try:
            info = client.scheduler_info().get("workers", {})
            workers = max(1, sum(int(w.get("nthreads", 1)) for w in info.values()))
            size = chunk or max(1, n // (4 * workers))
            chunks = _chunks(indices, size)
            k = len(chunks)
            futures = client.map(_run_chunk, [text] * k, [name] * k, chunks, [check] * k, pure=False)
            parts = client.gather(futures)
        finally:
            if own is not None:
                client.close()
                own.close()
    else:
        raise _wblab.WblabError(f"error: unknown backend `{backend}`\n  hint: local, ray or dask")
    groups = "".join(p[0] for p in parts)
    devices = "".join(p[1] for p in parts)
    invalid = "".join(p[2] for p in parts)
    _wblab.write_tables(text, name, str(directory), groups, devices, invalid)
