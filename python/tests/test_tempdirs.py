"""wblab.run() and wblab.sweep() without out= leave no temporary directory behind: a failed
call removes it at once, a result owns it until it is closed or garbage-collected."""

import gc
import tempfile

import pytest

import wblab

# count=10**6 is beyond the tasks a [[task]] may have: refused once the directory exists.
BAD_RUN = {"duration": "1s", "device": [{"name": "sda", "model": "ssd"}], "task": [{"name": "w", "job": "dd", "count": 10**6}]}
RUN = {"duration": "1s", "device": [{"name": "sda", "model": "ssd"}], "task": [{"name": "w", "job": "dd"}]}
SWEEP = """duration = "1s"
[[device]]
name = "sda"
model = "ssd"
[[task]]
name = "w"
job = "dd"
[sweep]
"vm.dirty_ratio" = [10, 20]
"""


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A temporary-directory root of this test's own, so other jobs cannot change the count."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def wblab_dirs(root):
    return sorted(root.glob("wblab-*"))


def test_runs_without_out_remove_their_directory(private_tmp):
    for _ in range(5):
        with pytest.raises(wblab.WblabError):
            wblab.run(BAD_RUN)
    assert wblab_dirs(private_tmp) == [], "a failed run removes its directory"
    results = [wblab.run(RUN) for _ in range(5)]
    assert len(wblab_dirs(private_tmp)) == 5, "each result owns its directory while it lives"
    assert all(r.tasks["bytes_written"].iloc[0] > 0 for r in results)
    del results
    gc.collect()
    assert wblab_dirs(private_tmp) == []
    # close() and a with block remove it at once; tables read before stay.
    r = wblab.run(RUN)
    ts = r.timeseries
    r.close()
    assert not r.dir.exists() and len(ts) > 0
    with wblab.run(RUN) as r:
        d = r.dir
        assert (d / "summary.json").exists()
    assert not d.exists() and wblab_dirs(private_tmp) == []


def test_sweeps_without_out_remove_their_directory(private_tmp):
    for k in range(5):
        with pytest.raises(wblab.WblabError):
            # Refused after the directory is made: an unknown backend, or resume off local.
            wblab.sweep(SWEEP, backend="spark" if k % 2 else "ray", resume=True)
    assert wblab_dirs(private_tmp) == [], "a failed sweep removes its directory"
    results = [wblab.sweep(SWEEP, jobs=1) for _ in range(5)]
    assert len(wblab_dirs(private_tmp)) == 5
    assert all(sorted(s.tasks["point"]) == [0, 1] for s in results)
    del results
    gc.collect()
    assert wblab_dirs(private_tmp) == []


def test_a_directory_given_as_out_is_kept(private_tmp, tmp_path):
    r = wblab.run(RUN, out=tmp_path / "kept")
    r.close()
    del r
    gc.collect()
    assert (tmp_path / "kept" / "summary.json").exists()
