"""The SLA benchmark's pure parts and its cgroup bookkeeping (on a fake cgroup tree)."""

import os
from pathlib import Path

import pytest

from bench import common as C
from bench import emulation as E
from bench import sla_bench as B
from bench import sla_clients as SC


def test_percentile_nearest_rank():
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert SC.percentile(values, 50) == 50.0
    assert SC.percentile(values, 99) == 99.0
    assert SC.percentile(values, 100) == 100.0
    assert SC.percentile([7.0], 99) == 7.0
    assert SC.percentile([3.0, 1.0, 2.0], 50) == 2.0  # order does not matter
    with pytest.raises(ValueError):
        SC.percentile([], 50)


def test_read_lat_log_takes_nanoseconds_and_skips_junk():
    lines = ["1, 1033006, 1, 16384, 0", "2, 821761, 0, 16384, 0", "", "garbage"]
    assert SC.read_lat_log(lines) == [pytest.approx(1.033006), pytest.approx(0.821761)]


def test_fio_ops_per_sec_sums_jobs_over_their_runtime():
    report = {"jobs": [
        {"job_runtime": 2000, "read": {"total_ios": 100}, "write": {"total_ios": 100}},
        {"job_runtime": 4000, "read": {"total_ios": 0}, "write": {"total_ios": 400}},
    ]}
    assert SC.fio_ops_per_sec(report) == pytest.approx(200.0)


def test_fio_json_skips_notices_and_names_a_missing_report():
    assert C.fio_json('fio: note\n{"jobs": []}') == {"jobs": []}
    with pytest.raises(RuntimeError, match="no report"):
        C.fio_json("fio: terminating on signal 2\n")


def test_rados_bench_ops_from_the_summary():
    summary = ("  sec Cur ops   started  finished\n    1      16       100        84\n"
               "Total time run:         10.2332\nTotal writes made:      3131\n"
               "Write size:             4096\n")
    assert C.rados_bench_ops(summary) == pytest.approx(3131 / 10.2332)
    with pytest.raises(RuntimeError, match="no rados bench summary"):
        C.rados_bench_ops("error: pool not found\n")


def _run(mode, n, p99=None, ops=None, active=True):
    return {"mode": mode, "normal_clients": n, "urgent_active": active,
            "urgent_p99_ms": p99, "normal_ops_per_sec": ops}


def test_targets_ratios():
    runs = [
        _run("default", 0, 10.0), _run("default", 16, 35.0),
        _run("fixed", 0, 10.0), _run("fixed", 16, 11.0),
        _run("adaptive", 0, 10.0), _run("adaptive", 16, 13.0),
        _run("fixed", 16, ops=100.0, active=False),
        _run("adaptive", 16, ops=180.0, active=False),
        _run("adaptive", 4, ops=90.0, active=False),
    ]
    t = B.targets(runs)
    assert t["default_urgent_p99_growth"]["ratio"] == 3.5
    assert t["fixed_urgent_p99_growth"] == {"normal_clients": 16, "ratio": 1.1,
                                            "target": "<= 1.2"}
    assert t["adaptive_urgent_p99_growth"]["ratio"] == 1.3
    # only client counts measured in both modes are compared
    assert t["adaptive_over_fixed_idle"] == {"normal_clients": 16, "ratio": 1.8,
                                             "target": ">= 1.5"}


def test_targets_without_a_solo_run_or_idle_pair_are_left_out():
    assert B.targets([_run("fixed", 4, 10.0), _run("fixed", 4, ops=1.0, active=False)]) == {}


def test_busy_percent():
    assert C.busy_percent((1000, 900), (2000, 1650)) == 25.0
    assert C.busy_percent((5, 5), (5, 5)) == 100.0  # no time passed: no idle seen


def test_device_speeds_by_class():
    s = E.DeviceSpeeds(100, 400)
    assert (s.iops("hdd"), s.iops("ssd")) == (100, 400)
    with pytest.raises(E.EmulationError, match="nvme"):
        s.iops("nvme")


def _fake_blkio(root: Path) -> Path:
    root.mkdir()
    (root / E.LIMIT_FILES[1]).write_text("")
    return root


def test_throttle_refuses_a_missing_blkio_controller(tmp_path):
    with pytest.raises(E.EmulationError, match="blkio"):
        E.BlkioThrottle("run1", tmp_path, root=tmp_path / "nothing")


def _dev(path: Path) -> str:
    st = os.stat(path)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def test_disk_of_names_a_path_not_on_a_block_device(tmp_path):
    sysfs = tmp_path / "sys"
    sysfs.mkdir()
    with pytest.raises(E.EmulationError, match="not on a block device"):
        E.disk_of(tmp_path, sysfs=sysfs)


def test_disk_of_a_partition_is_its_disk(tmp_path):
    sysfs = tmp_path / "sys"
    part = tmp_path / "devices" / "vda" / "vda1"
    part.mkdir(parents=True)
    (part / "partition").write_text("1\n")
    (part.parent / "dev").write_text("254:0\n")
    sysfs.mkdir()
    (sysfs / _dev(tmp_path)).symlink_to(part)
    assert E.disk_of(tmp_path, sysfs=sysfs) == "254:0"
    (part / "partition").unlink()  # a whole disk is itself
    assert E.disk_of(tmp_path, sysfs=sysfs) == _dev(tmp_path)


def test_throttle_writes_limits_and_removes_its_groups(tmp_path, monkeypatch):
    monkeypatch.setattr(E, "disk_of", lambda p: "254:0")
    root = _fake_blkio(tmp_path / "blkio")
    t = E.BlkioThrottle("run1", tmp_path, root=root)
    t.limit("osd.0", 4242, 150)
    group = root / "ceph-sla-bench" / "run1" / "osd.0"
    assert (group / "blkio.throttle.write_iops_device").read_text() == "254:0 150\n"
    assert (group / "blkio.throttle.read_iops_device").read_text() == "254:0 150\n"
    assert (group / "cgroup.procs").read_text() == "4242\n"
    (group / "blkio.throttle.io_serviced").write_text(
        "254:0 Read 10\n254:0 Write 32\n254:0 Total 42\n8:0 Write 99\nTotal 141\n")
    assert t.serviced("osd.0") == 42
    # a real cgroup directory holds only kernel files; the fake one must be emptied
    for f in group.iterdir():
        f.unlink()
    other = root / "ceph-sla-bench" / "run2"
    other.mkdir()  # another run's groups are left alone
    assert t.remove() == []
    assert not (root / "ceph-sla-bench" / "run1").exists()
    assert other.exists()


def test_tables_render_runs_and_switches():
    from bench import plot_results

    results = {"runs": [
        {**_run("fixed", 4, 9.5, 80.0), "urgent_p50_ms": 2.5, "urgent_turnaround_s": 7.0,
         "cpu_busy_percent": 20.0, "hdd_device_use": 0.8, "hdd_device_use_max": 0.95,
         "ssd_device_use": 0.5, "ssd_device_use_max": 0.6},
        _run("adaptive", 4, ops=120.0, active=False),
    ], "switches": [
        {"to": "isolated", "normal_clients": 16, "reaction_secs": 5.0,
         "time_to_isolation_secs": 9.4, "settled_secs": 25.8, "pgs_moved": 62,
         "replicas_moved": 99, "bytes_moved": 41_926_656, "backfill_bytes_per_client_byte": 2.4,
         "urgent_p50_ms_during_switch": 3.8, "urgent_p99_ms_during_switch": 139.3},
    ]}
    text = plot_results.tables(results)
    assert "| fixed | 4 | 2.5 | 9.5 | 7.0 | 80.0 | 20.0 | 80% (max 95%) / 50% (max 60%) |" in text
    assert "| adaptive | 4 | 120.0 |  |  |" in text  # older results: no resource columns
    assert "| to isolated | 16 | 5.0 | 9.4 | 25.8 | 62 / 99 | 41.9 | 2.4 | 3.8 / 139.3 |" in text


def test_throttle_remove_reports_a_group_that_stays_busy(tmp_path, monkeypatch):
    import errno

    monkeypatch.setattr(E, "disk_of", lambda p: "254:0")
    root = _fake_blkio(tmp_path / "blkio")
    t = E.BlkioThrottle("run1", tmp_path, root=root)
    (t.base / "osd.3").mkdir(parents=True)
    real_rmdir = Path.rmdir

    def rmdir(self):
        if self.name == "osd.3":
            raise OSError(errno.EBUSY, "busy")
        real_rmdir(self)
    monkeypatch.setattr(Path, "rmdir", rmdir)
    assert t.remove(timeout=0.3) == ["osd.3"]
    assert (t.base / "osd.3").exists()


def test_primary_affinity_summary_medians_and_validity():
    from bench import primary_affinity as P

    def row(label: str, ops: float, hdd_primaries: int = 0) -> dict:
        weight = 0 if "affinity 0" in label else 1
        return {"mode": label, "normal_ops_per_sec": ops, "hdd_primary_affinity": weight,
                "pgs_with_ssd_replica_by_primary_class": {"hdd": hdd_primaries, "ssd": 40}}

    rows = [row("isolated", 100), row("shared", 150), row("isolated, hdd affinity 0", 101),
            row("shared, hdd affinity 0", 200),
            row("isolated", 110), row("shared", 140), row("isolated, hdd affinity 0", 99),
            row("shared, hdd affinity 0", 220)]
    s = P.summary(rows)
    assert s["median"]["isolated"] == 105 and s["median"]["shared, hdd affinity 0"] == 210
    assert s["median_over_isolated"]["shared"] == pytest.approx(1.38)
    assert s["ssd_primaries_held"] is True
    rows[3] = row("shared, hdd affinity 0", 200, hdd_primaries=1)
    assert P.summary(rows)["ssd_primaries_held"] is False
