"""Medians over the repeats of every fio run in DIR: per job and direction, MB/s, clat p50/p99."""
import collections, glob, json, os, statistics, sys

rows = collections.defaultdict(list)
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    name = os.path.basename(path).rsplit(".r", 1)[0]
    for job in json.load(open(path))["jobs"]:
        for d in ("read", "write"):
            s = job[d]
            if s["io_bytes"]:
                p = s["clat_ns"]["percentile"]
                rows[(name, job["jobname"], d)].append(
                    (s["bw_bytes"] / 1e6, p["50.000000"] / 1e3, p["99.000000"] / 1e3))
print(f"{'run':20} {'job':7} {'dir':5} {'MB/s':>14} {'clat p50 us':>16} {'clat p99 us':>16}")
for (name, job, d), v in rows.items():
    col = lambda i: f"{statistics.median(x[i] for x in v):6.0f} ({min(x[i] for x in v):.0f}-{max(x[i] for x in v):.0f})"
    print(f"{name:20} {job:7} {d:5} {col(0):>14} {col(1):>16} {col(2):>16}")
