"""wblab.sweep: the same table on this machine's cores, on Ray and on Dask."""

import filecmp
import shutil

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


def test_the_command_line_takes_a_backend(sweep20, tmp_path, capsys):
    pytest.importorskip("distributed")
    from wblab.__main__ import main

    assert main(["sweep", str(sweep20), "--backend", "dask", "-j", "2", "--out", str(tmp_path / "dask")]) == 0
    assert "20 points on dask" in capsys.readouterr().out
    wblab.sweep(sweep20, out=tmp_path / "local")
    same_tables(tmp_path / "local", tmp_path / "dask")
