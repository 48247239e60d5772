"""wblab.sweep: the same table on this machine's cores, on Ray and on Dask."""

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

import pandas as pd
import pytest

import wblab

TABLES = ["sweep.csv", "sweep-devices.csv", "sweep.parquet", "sweep-devices.parquet"]


def same_tables(a, b):
    for f in TABLES:
        assert filecmp.cmp(a / f, b / f, shallow=False), f


def test_a_local_sweep_is_the_command_lines(sweep20, tmp_path):
    s = wblab.sweep(sweep20, out=tmp_path / "py", jobs=2)
    t = s.tasks
    assert sorted(t["point"].unique()) == list(range(20))
    assert set(t["group"]) == {"copy", "reader"}
    assert set(t["queue/scheduler"]) <= {"mq-deadline", "bfq", "kyber"}
    # The command line, run from the package, writes the same table.
    assert wblab._wblab.main(["sweep", str(sweep20), "-q", "-j", "1", "--out", str(tmp_path / "cli")]) == 0
    same_tables(tmp_path / "py", tmp_path / "cli")
    # Parquet keeps the types pandas reads from the CSV.
    pq = pd.read_parquet(tmp_path / "py" / "sweep.parquet")
    pd.testing.assert_frame_equal(pq, pd.read_csv(tmp_path / "py" / "sweep.csv"), check_dtype=False)
    p99 = s.figure("reader.op_p99_ms")
    assert list(p99.columns) == ["point", "vm.dirty_bytes", "queue/scheduler", "reader.op_p99_ms"] and len(p99) == 20


def test_a_resumed_sweep_runs_only_what_is_missing(sweep20, tmp_path):
    whole = tmp_path / "whole"
    wblab.sweep(sweep20, out=whole)
    part = tmp_path / "part"
    part.mkdir()
    lines = (whole / "sweep.csv").read_text().splitlines(keepends=True)
    (part / "sweep.csv").write_text("".join(lines[:11]))  # header and five points
    shutil.copy(whole / "sweep-devices.csv", part / "sweep-devices.csv")
    assert wblab._wblab.sweep_local(sweep20.read_text(), str(sweep20), str(part), 0, True) == 5
    same_tables(whole, part)


def test_ray_gives_the_local_table(sweep20, tmp_path):
    ray = pytest.importorskip("ray")
    local = wblab.sweep(sweep20, out=tmp_path / "local")
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        wblab.sweep(sweep20, backend="ray", out=tmp_path / "ray", chunk=3)
    finally:
        ray.shutdown()
    same_tables(local.dir, tmp_path / "ray")


def test_dask_gives_the_local_table(sweep20, tmp_path):
    distributed = pytest.importorskip("distributed")
    local = wblab.sweep(sweep20, out=tmp_path / "local")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        with distributed.Client(cluster) as client:
            wblab.sweep(sweep20, backend="dask", client=client, out=tmp_path / "dask", chunk=4)
    same_tables(local.dir, tmp_path / "dask")


def test_a_bad_backend_or_point_is_an_error(sweep20, tmp_path):
    with pytest.raises(wblab.WblabError, match="unknown backend"):
        wblab.sweep(sweep20, backend="spark")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[device]]\nname = "sda"\n[[task]]\nname = "c"\njob = "dd"\nstart = "5s"\n[sweep]\nduration = ["10s", "2s"]\n')
    with pytest.raises(wblab.WblabError, match="at the sweep's point 1: duration=2s"):
        wblab.sweep(bad)


LATE = """name = "late"
duration = "1s"
[[device]]
name = "sda"
model = "ssd"
[[task]]
name = "w"
job = "dd"
size = "1MiB"
[sweep]
duration = ["3s", "1s"]
"task/w/start" = ["0s", "1500ms"]
"vm.dirty_ratio" = { min = 1, max = 60, steps = 75 }
"""


def test_invalid_points_are_listed_and_the_sweep_goes_on(tmp_path):
    # 300 points, beyond those `check` builds one by one: the 75 with the task starting
    # after the run's end are listed, not run, and the sweep finishes.
    p = tmp_path / "late.toml"
    p.write_text(LATE)
    s = wblab.sweep(p, out=tmp_path / "local")
    inv = s.invalid
    assert inv["point"].tolist() == list(range(225, 300))
    assert list(inv.columns) == ["point", "duration", "task/w/start", "vm.dirty_ratio", "reason"]
    assert inv["reason"].str.contains("starts at or after the end of the run").all()
    assert s.tasks["point"].nunique() == 225
    # Gathered as the Ray and Dask backends gather chunks (in any order): the same files.
    text, name = wblab.scenario_text(p)
    parts = [wblab._wblab.run_points(text, name, list(range(i, min(i + 70, 300)))) for i in reversed(range(0, 300, 70))]
    tables = ["".join(part[k] for part in parts) for k in range(3)]
    wblab._wblab.write_tables(text, name, str(tmp_path / "gathered"), *tables)
    for f in TABLES + ["sweep-invalid.csv"]:
        assert filecmp.cmp(tmp_path / "local" / f, tmp_path / "gathered" / f, shallow=False), f
    # A sweep where every point is valid has an empty `invalid`.
    assert wblab.sweep(p.read_text().replace('"1500ms"]', '"500ms"]')).invalid.empty


def test_the_command_line_takes_a_backend(sweep20, tmp_path, capsys):
    pytest.importorskip("distributed")
    from wblab.__main__ import main

    assert main(["sweep", str(sweep20), "--backend", "dask", "-j", "2", "--out", str(tmp_path / "dask")]) == 0
    assert "20 points on dask" in capsys.readouterr().out
    wblab.sweep(sweep20, out=tmp_path / "local")
    same_tables(tmp_path / "local", tmp_path / "dask")


def test_dask_from_a_plain_script_runs_the_sweep_once(sweep20, tmp_path):
    # No `if __name__ == "__main__"`: a worker process that imported the script would sweep
    # again (and print again); the default cluster must not.
    script = tmp_path / "plain.py"
    script.write_text(
        "import wblab\n"
        f"s = wblab.sweep({str(sweep20)!r}, backend='dask', jobs=2, out={str(tmp_path / 'out')!r})\n"
        "print('SWEPT', len(s.figure('copy.throughput')))\n"
    )
    before = set(os.listdir(tempfile.gettempdir()))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("SWEPT") == 1 and "SWEPT 20" in done.stdout, done.stdout
    left = {d for d in set(os.listdir(tempfile.gettempdir())) - before if d.startswith("wblab-")}
    assert not left, f"temporary directories left behind: {left}"


def test_swept_sizes_sort_as_sizes_and_keep_their_text(sweep20, tmp_path):
    s = wblab.sweep(sweep20, out=tmp_path / "typed", jobs=2)
    t = s.tasks
    col = t["vm.dirty_bytes"]
    # The values as written, ordered by what they mean: 16MiB before 1GiB, not after it.
    assert col.cat.ordered and all(isinstance(v, str) for v in col.cat.categories)
    assert list(col.cat.categories) == sorted(col.cat.categories, key=lambda v: float(t.loc[col == v, "vm.dirty_bytes.bytes"].iloc[0]))
    assert (t["vm.dirty_bytes.bytes"] >= 16 << 20).all() and (t["vm.dirty_bytes.bytes"] <= 1 << 30).all()
    # A key of names keeps its names and gets no number.
    assert set(t["queue/scheduler"].cat.categories) <= {"mq-deadline", "bfq", "kyber"}
    assert not [c for c in t.columns if c.startswith("queue/scheduler.")]
    pivot = t[t.group == "reader"].pivot_table(index="vm.dirty_bytes", values="op_p99_ms", observed=True)
    assert list(pivot.index) == list(col.cat.categories[col.cat.categories.isin(pivot.index)])
