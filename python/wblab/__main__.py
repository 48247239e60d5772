"""``python -m wblab ARGS``: the ``wblab`` command line, from the package.

One addition: ``python -m wblab sweep FILE --backend ray|dask [--address ADDR] [--out DIR]
[--chunk N]`` runs the sweep's points on a Ray or Dask cluster (``ADDR``: a Ray address or a
Dask scheduler; a local one without it) and writes the same table a local sweep writes."""

import argparse
import sys
from typing import List, Optional

from . import _wblab


def _distributed(argv: List[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m wblab sweep", description="Run a sweep on Ray or Dask.")
    p.add_argument("scenario")
    p.add_argument("--backend", choices=["local", "ray", "dask"], required=True)
    p.add_argument("--address", help="a Ray cluster's address, or a Dask scheduler's (default: start a local one)")
    p.add_argument("--out", help="results directory (default: results/<scenario name>)")
    p.add_argument("--jobs", "-j", type=int, help="workers of a local cluster")
    p.add_argument("--chunk", type=int, help="points per task")
    a = p.parse_args(argv)
    from .scenario import check
    from .sweeps import sweep

    try:
        out = a.out or f"results/{check(a.scenario)['name']}"
        client = None
        if a.backend == "ray" and a.address:
            import ray

            ray.init(address=a.address)
        if a.backend == "dask" and a.address:
            from distributed import Client

            client = Client(a.address)
        s = sweep(a.scenario, backend=a.backend, out=out, jobs=a.jobs, client=client, chunk=a.chunk, quiet=False)
    except _wblab.WblabError as e:
        print(e, file=sys.stderr)
        return 2
    t = s.tasks
    print(f"{t['point'].nunique()} points on {a.backend}")
    print(f"results: {s.dir}: sweep.csv, sweep-devices.csv, sweep.parquet, sweep-devices.parquet")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["sweep"] and any(x == "--backend" or x.startswith("--backend=") for x in args):
        return _distributed(args[1:])
    return _wblab.main(args)


if __name__ == "__main__":
    sys.exit(main())
