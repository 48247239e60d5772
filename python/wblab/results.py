"""A run's results directory read into pandas DataFrames."""

from __future__ import annotations

import io
import json
import shutil
import weakref
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, Optional, Union

import pandas as pd

from . import _wblab


class Result:
    """The results of one run, from its directory (what ``wblab run`` writes).

    Each table is read when first asked for:

    - :attr:`summary` — ``summary.json`` as a dict (the scenario, every task and device);
    - :attr:`tasks` — one row per task: bytes, throughput, pauses and operation latencies
      (nested figures flattened: ``pauses.p99_ms``, ``op_latency_ms.p50``);
    - :attr:`devices` — one row per device: bytes, utilisation, request latencies;
    - :attr:`timeseries` — per simulated second: the vmstat counters, thresholds, each
      device's MB/s and utilisation (``timeseries.csv``);
    - :attr:`throttle` — the balance_dirty_pages samples per device and second: dirty pages,
      setpoint, limits, bandwidth estimates and rate limits (``throttle.csv``);
    - :attr:`iostat` — per device and second, as ``iostat -x`` (``iostat.csv``);
    - :attr:`latency` — per task group and second: operations, mean and max latency;
    - :attr:`ops` — every latency-sensitive operation: when it ended and how long it took;
    - :attr:`histograms` — the full latency histograms (pauses, operations, requests) in long
      form: ``owner``, ``instance``, ``kind``, ``value_ns``, ``count``;
    - :attr:`fio_json` — ``fio.json`` as a dict (``None`` without fio jobs), and :attr:`fio` —
      one row per fio job (clone, or reporting group) and direction that did I/O, fio's figures
      flattened (``bw_bytes``, ``iops``, ``clat_ns.mean``, ``clat_ns.percentile.99.000000``).

    A result in a temporary directory (:func:`wblab.run` without ``out=``) owns it: the
    directory is removed by :meth:`close` (or at the end of a ``with`` block), when the result
    is garbage-collected, or at the interpreter's exit. Tables read before stay in memory.
    """

    def __init__(self, directory: Union[str, Path], *, temporary: bool = False):
        self.dir = Path(directory)
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.dir), True) if temporary else None

    def close(self) -> None:
        """Remove the result's temporary directory now (nothing for a directory given as
        ``out=``); tables already read stay available."""
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self) -> "Result":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        s = self.summary
        return f"<wblab.Result {s['scenario']['name']}: {s['sim_seconds']:.1f} s simulated, {len(s['tasks'])} tasks, in {self.dir}>"

    def _csv(self, name: str) -> pd.DataFrame:
        path = self.dir / name
        if not path.exists():
            return pd.DataFrame()
        # Through the report's reader: files of older builds get today's column names and units.
        return pd.read_csv(io.StringIO(_wblab.results_csv(str(path))))

    @cached_property
    def summary(self) -> Dict[str, Any]:
        return json.loads((self.dir / "summary.json").read_text())

    @cached_property
    def tasks(self) -> pd.DataFrame:
        return pd.json_normalize(self.summary["tasks"])

    @cached_property
    def devices(self) -> pd.DataFrame:
        return pd.json_normalize(self.summary["devices"])

    @cached_property
    def timeseries(self) -> pd.DataFrame:
        return self._csv("timeseries.csv")

    @cached_property
    def throttle(self) -> pd.DataFrame:
        return self._csv("throttle.csv")

    @cached_property
    def iostat(self) -> pd.DataFrame:
        return self._csv("iostat.csv")

    @cached_property
    def latency(self) -> pd.DataFrame:
        return self._csv("latency.csv")

    @cached_property
    def ops(self) -> pd.DataFrame:
        return self._csv("ops.csv")

    @cached_property
    def histograms(self) -> pd.DataFrame:
        h = json.loads((self.dir / "histograms.json").read_text())
        rows = []
        for t in h.get("tasks", []):
            for kind in ("pause", "op_latency"):
                for value, count in t.get(kind, {}).get("buckets", []):
                    rows.append((t["name"], t["instance"], kind, value, count))
        for d in h.get("devices", []):
            for value, count in d.get("request_latency", {}).get("buckets", []):
                rows.append((d["name"], 0, "request_latency", value, count))
        return pd.DataFrame(rows, columns=["owner", "instance", "kind", "value_ns", "count"])

    @cached_property
    def fio_json(self) -> Optional[Dict[str, Any]]:
        path = self.dir / "fio.json"
        return json.loads(path.read_text()) if path.exists() else None

    @cached_property
    def fio(self) -> pd.DataFrame:
        rows = []
        for job in (self.fio_json or {}).get("jobs", []):
            for direction in ("read", "write", "trim"):
                d = job.get(direction, {})
                if d.get("total_ios", 0) > 0:
                    rows.append({"jobname": job["jobname"], "groupid": job["groupid"], "direction": direction, **d})
        return pd.json_normalize(rows)

    def to_polars(self, table: str):
        """One of the tables as a polars DataFrame (``polars`` must be installed)."""
        import polars as pl

        return pl.from_pandas(getattr(self, table))
