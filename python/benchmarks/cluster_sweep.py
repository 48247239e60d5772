"""Points per second of one sweep on Ray and Dask clusters of 1 … N local workers.

    python python/benchmarks/cluster_sweep.py [--points 2000] [--workers 1,2] [--repeat 3]

The sweep is the one `wblab bench --cli sweep` times: the default experiment cut to 1 s (its
reader starting at 0.5 s), the dirty limit and the expiry age drawn at random. Each backend
and worker count runs it `--repeat` times on a fresh cluster; the table gives the median wall
time (cluster start excluded) and points/s, and checks that every run wrote the same table.
Needs the package with its extras: pip install "./python[ray,dask]".
"""

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import wblab

ROOT = Path(__file__).resolve().parents[2]


def sweep_text(points: int) -> str:
    """The default scenario × 1 s with `points` random points, as `wblab bench` builds it."""
    lines = []
    for line in (ROOT / "scenarios" / "default.toml").read_text().splitlines():
        key = line.split()[0] if line.split() else ""
        if key == "duration":
            line = 'duration = "1s"'
        elif key == "start":
            line = 'start = "0.5s"'
        lines.append(line)
    return "\n".join(lines) + (
        f"\n[sweep]\nrandom = {{ points = {points}, seed = 1 }}\n"
        '"vm.dirty_bytes" = { min = "16MiB", max = "2GiB", log = true }\n'
        '"vm.dirty_expire_centisecs" = { min = 100, max = 6000 }\n'
    )


def digest(out: Path) -> str:
    return hashlib.sha256((out / "sweep.csv").read_bytes()).hexdigest()[:12]


def time_ray(text: str, workers: int, out: Path) -> float:
    import ray

    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        # Warm the workers (their first task imports the package) before the clock starts.
        ray.get([ray.remote(num_cpus=1)(lambda: wblab.__name__).remote() for _ in range(workers)])
        t0 = time.perf_counter()
        wblab.sweep(text, backend="ray", out=out)
        return time.perf_counter() - t0
    finally:
        ray.shutdown()


def time_dask(text: str, workers: int, out: Path) -> float:
    from distributed import Client, LocalCluster

    # Worker processes, one thread each: a cluster of N workers, as on N machines.
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            client.run(lambda: __import__("wblab").__name__)
            t0 = time.perf_counter()
            wblab.sweep(text, backend="dask", client=client, out=out)
            return time.perf_counter() - t0


def time_local(text: str, workers: int, out: Path) -> float:
    t0 = time.perf_counter()
    wblab.sweep(text, backend="local", jobs=workers, out=out)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=2000)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backends", default="local,ray,dask")
    a = ap.parse_args()
    text = sweep_text(a.points)
    runners = {"local": time_local, "ray": time_ray, "dask": time_dask}
    tables = set()
    print(f"| backend | workers | wall (median of {a.repeat}) | points/s |")
    print("|---|---|---|---|")
    for backend in a.backends.split(","):
        for n in (int(w) for w in a.workers.split(",")):
            walls = []
            for _ in range(a.repeat):
                with tempfile.TemporaryDirectory(prefix="wblab-cluster-") as d:
                    walls.append(runners[backend](text, n, Path(d)))
                    tables.add(digest(Path(d)))
            wall = statistics.median(walls)
            print(f"| {backend} | {n} | {wall:.2f} s | {a.points / wall:.0f} |", flush=True)
    if len(tables) != 1:
        print(f"error: the runs wrote {len(tables)} different tables", file=sys.stderr)
        return 1
    print(f"\nevery run wrote the same sweep.csv ({tables.pop()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
