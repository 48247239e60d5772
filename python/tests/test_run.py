"""wblab.run, wblab.check and the command line from Python."""

import json

import pandas as pd
import pytest

import wblab


def test_run_gives_the_results_as_frames(scenarios, tmp_path):
    r = wblab.run(scenarios / "default.toml", out=tmp_path / "default")
    tasks = r.tasks
    assert list(tasks["name"]) == ["dd"] * 4 + ["reader"]
    # The frames are the files `wblab run` writes, read back.
    summary = json.loads((tmp_path / "default" / "summary.json").read_text())
    assert tasks["throughput_mb_s"].tolist() == [t["throughput_mb_s"] for t in summary["tasks"]]
    assert (tasks.loc[tasks["name"] == "dd", "pauses.count"] > 0).all(), "the writers were throttled"
    ts = r.timeseries
    assert ts["t_s"].is_monotonic_increasing and len(ts) == int(summary["sim_seconds"])
    assert (ts["nr_dirty_pages"] <= ts["dirty_thresh_pages"] * 1.1).all(), "dirty pages stay near the threshold"
    assert set(r.throttle["device"]) == {"sda"}
    assert {"pos_ratio", "dirty_ratelimit_kib_s"} <= set(r.throttle.columns)
    # A histogram holds every operation its task counted.
    h = r.histograms
    reader = h[(h["owner"] == "reader") & (h["kind"] == "op_latency")]
    assert reader["count"].sum() == tasks.loc[tasks["name"] == "reader", "op_latency_ms.count"].iloc[0]
    assert len(r.ops) > 0 and len(r.iostat) > 0 and not r.devices.empty


def test_a_dict_or_text_runs_as_the_file_does(tmp_path):
    text = 'duration = "5s"\nseed = 3\n[[device]]\nname = "sda"\nmodel = "ssd"\n[[task]]\nname = "copy"\njob = "dd"\n'
    as_dict = {
        "duration": "5s",
        "seed": 3,
        "device": [{"name": "sda", "model": "ssd"}],
        "task": [{"name": "copy", "job": "dd"}],
    }
    a = wblab.run(text, out=tmp_path / "a")
    b = wblab.run(as_dict, out=tmp_path / "b")
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    assert a.tasks["bytes_written"].iloc[0] == b.tasks["bytes_written"].iloc[0] > 0
    # Another seed is honoured.
    c = wblab.run(text, out=tmp_path / "c", seed=9)
    assert c.summary["scenario"]["seed"] == 9


def test_errors_name_the_file_line_and_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[device]]\nname = "sda"\n"queue/schedulr" = "bfq"\n')
    with pytest.raises(wblab.WblabError) as e:
        wblab.run(bad)
    msg = str(e.value)
    assert f"{bad}:3:1" in msg and "queue/schedulr" in msg and "did you mean `queue/scheduler`" in msg
    with pytest.raises(wblab.WblabError, match="cannot read the scenario file"):
        wblab.check(tmp_path / "missing.toml")
    with pytest.raises(wblab.WblabError, match=r"has a \[sweep\]"):
        wblab.run('[[device]]\nname = "sda"\n[sweep]\nseed = [1, 2]\n')


def test_check_resolves_every_knob(scenarios):
    sc = wblab.check(scenarios / "default.toml")
    assert sc["name"] == "default" and sc["sysctl"]["dirty_ratio"] > 0
    assert sc["devices"][0]["queue"]["scheduler"]


def test_the_command_line_runs_from_the_package(capsys):
    assert wblab._wblab.main(["kernels"]) == 0
    assert wblab._wblab.main(["run", "--no-such-flag"]) != 0


def test_polars_when_installed(scenarios, tmp_path):
    pl = pytest.importorskip("polars")
    r = wblab.run(scenarios / "default.toml", out=tmp_path / "r")
    assert isinstance(r.to_polars("timeseries"), pl.DataFrame)


def test_measure_reports_a_failure_as_an_error(tmp_path):
    # The real measurement needs root and minutes; its failure path needs neither.
    with pytest.raises(wblab.WblabError, match="wblab measure"):
        wblab.measure(tmp_path / "missing.toml", out=tmp_path / "m")


def test_results_of_older_builds_read_with_todays_columns(scenarios):
    # validation/measured was written before every column named its unit.
    r = wblab.Result(scenarios.parent / "validation" / "measured" / "v1-ext4-8mib" / "r1")
    assert {"nr_dirty_pages", "dirty_thresh_pages", "bo_kib"} <= set(r.timeseries.columns)
    th = r.throttle
    assert {"write_bw_kib_s", "dirty_ratelimit_kib_s", "pos_ratio"} <= set(th.columns)
    # An 8 MiB/s loop: write bandwidth in KiB/s, pos_ratio a plain ratio.
    late = th[th["t_s"] > th["t_s"].max() / 2]
    assert 6000 < late["write_bw_kib_s"].mean() < 10000
    assert late["pos_ratio"].dropna().between(0, 3).all()


def test_several_kernels_give_one_result_each(tmp_path):
    text = 'kernel = ["2.6.24", "6.x"]\nduration = "3s"\n[[task]]\nname = "w"\njob = "dd"\n'
    runs = wblab.run(text, out=tmp_path / "k")
    assert list(runs) == ["2.6.24", "6.x"], "one Result per kernel, in the file's order"
    for kernel, r in runs.items():
        assert (tmp_path / "k" / kernel / "summary.json").is_file()
        assert r.tasks["name"].tolist() == ["w"]
    # The kernels differ in their throttling: the old one pauses the writer less finely.
    assert runs["2.6.24"].tasks["pauses.count"].iloc[0] != runs["6.x"].tasks["pauses.count"].iloc[0]


def test_check_takes_what_run_takes(scenarios, tmp_path):
    resolved = wblab.check(scenarios / "fio" / "randread-qd32.fio")
    assert resolved["tasks"] and resolved["until_done"], "a job file, resolved as wblab.run runs it"
    bad = tmp_path / "bad.fio"
    bad.write_text("[j]\nrw=read\nsize=1m\nioengine=libiao\n")
    with pytest.raises(wblab.WblabError, match=r"did you mean `libaio`"):
        wblab.check(bad)


def test_errors_about_a_dict_name_its_keys():
    scenario = {
        "duration": "10s",
        "sysctl": {"vm.dirty_ratoi": 20},
        "device": [{"name": "sda", "model": "hdx"}],
        "task": [{"name": "w", "job": "dd", "bs": "1MiBB"}],
    }
    with pytest.raises(wblab.WblabError) as e:
        wblab.check(scenario)
    message = str(e.value)
    for path in ['sysctl["vm.dirty_ratoi"]', "device[0].model", "task[0].bs"]:
        assert f"<dict> at {path}: " in message, message
    assert "<dict>:" not in message, "no line of TOML the user never saw"
    with pytest.raises(wblab.WblabError, match=r"<dict> at device\[0\]\.model"):
        wblab.run(scenario)


def test_fio_json_as_a_frame(scenarios):
    r = wblab.run(scenarios / "fio" / "randrw-70-30.fio")
    assert r.fio_json["jobs"], "fio.json as fio prints it"
    f = r.fio
    assert set(f["direction"]) == {"read", "write"}, "a row per direction that did I/O"
    assert (f["iops"] > 0).all() and "clat_ns.mean" in f.columns
    reads = f[f.direction == "read"]["total_ios"].sum()
    writes = f[f.direction == "write"]["total_ios"].sum()
    assert 0.6 < reads / (reads + writes) < 0.8, "rwmixread=70"
    assert wblab.run(scenarios / "default.toml").fio.empty, "no fio jobs, no rows"
