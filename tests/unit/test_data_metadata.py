"""The data/metadata benchmark's pure parts, the DB device's throttle and its
record in the harness (no Ceph: fake cgroup tree, fake cluster dir)."""

import json
import socket
import struct
import threading
from pathlib import Path

import pytest

from bench import data_metadata_osd as DO
from bench import data_metadata_report as DR
from bench import emulation as E
from harness.cephcluster import Cluster


def test_cost_ratio_reads_hdd_to_ssd():
    assert DR.cost_ratio("1:2") == 2.0
    assert DR.cost_ratio("1:10") == 10.0
    assert DR.cost_ratio("2:5") == 2.5
    for bad in ("5", "a:b", "0:1", "1:-2"):
        with pytest.raises(ValueError):
            DR.cost_ratio(bad)


def test_capacity_cost_per_gb_of_data():
    f = 0.05
    assert DR.capacity_cost("hdd", 5, f) == 1.0
    assert DR.capacity_cost("ssd", 5, f) == 5.0
    assert DR.capacity_cost("hdd+ssd", 5, f) == pytest.approx(1.25)
    assert DR.capacity_cost("ssd+ssd", 5, f) == pytest.approx(5.25)
    with pytest.raises(ValueError, match="nvme"):
        DR.capacity_cost("nvme", 5, f)


def test_perf_per_cost_the_papers_shape():
    # the paper's relative figures: ssd 2.95x hdd, hdd+ssd ~2x, ssd+ssd above ssd; f = 6%
    perf = {"hdd": 1.0, "ssd": 2.95, "hdd+ssd": 2.0, "ssd+ssd": 3.2}
    table = DR.perf_per_cost(perf, 0.06)
    assert list(table) == ["1:2", "1:5", "1:10"]
    assert table["1:2"]["ssd"] == pytest.approx(1.48, abs=0.01)
    assert table["1:5"]["hdd+ssd"] == pytest.approx(2.0 / 1.3, abs=0.01)
    assert table["1:10"]["ssd+ssd"] == pytest.approx(3.2 / 10.6, abs=0.01)
    best = DR.best_per_ratio(table)
    assert best == {"1:2": "hdd+ssd", "1:5": "hdd+ssd", "1:10": "hdd+ssd"}
    # SSD only wins at 1:2 when it is fast enough
    assert DR.best_per_ratio(DR.perf_per_cost({**perf, "ssd": 4.0}, 0.06))["1:2"] == "ssd"


def test_speedups_over_hdd():
    assert DR.speedups({"hdd": 100.0, "ssd": 295.0}) == {"hdd": 1.0, "ssd": 2.95}
    assert DR.speedups({"ssd": 1.0}) == {}
    assert DR.speedups({"hdd": 0.0, "ssd": 1.0}) == {}


def _dump(db: int, stored: int, slow: int = 0) -> dict:
    return {"bluefs": {"db_used_bytes": db, "slow_used_bytes": slow, "db_total_bytes": 1 << 32},
            "bluestore": {"bluestore_stored": stored, "bluestore_allocated": stored * 2}}


def test_osd_space_sums_the_osds_and_tolerates_missing_loggers():
    space = DO.osd_space({0: _dump(10, 100, 1), 1: _dump(20, 300), 2: {}})
    assert space == {"db_used_bytes": 30, "slow_used_bytes": 1, "wal_used_bytes": 0,
                     "stored_bytes": 400, "allocated_bytes": 800, "sst_bytes": None}


def test_db_fraction_is_added_db_over_added_data_spillover_included():
    before = DO.osd_space({0: _dump(100, 1000)})
    after = DO.osd_space({0: _dump(130, 2000, slow=20)})
    assert DO.db_fraction(before, after) == 0.05
    assert DO.db_fraction(before, before) is None


# `ceph daemon osd.0 bluefs stats` on Pacific 16.2.15 with a separate DB device
BLUEFS_STATS = """1 : device size 0xffffe000 : using 0x13800000(312 MiB)
2 : device size 0x280000000 : using 0x1af24000(431 MiB)
RocksDBBlueFSVolumeSelector Usage Matrix:
DEV/LEV     WAL         DB          SLOW        *           *           REAL        FILES
LOG         0 B         18 MiB      0 B         0 B         0 B         16 MiB      1
WAL         0 B         282 MiB     0 B         0 B         0 B         57 MiB      1
DB          0 B         12 MiB      0 B         0 B         0 B         76 KiB      10
SLOW        0 B         0 B         0 B         0 B         0 B         0 B         0
TOTAL       0 B         312 MiB     0 B         0 B         0 B         0 B         12
MAXIMUMS:
LOG         0 B         24 MiB      0 B         0 B         0 B         20 MiB
DB          0 B         19 MiB      0 B         0 B         0 B         112 KiB
>> SIZE <<  0 B         3.8 GiB     9.5 GiB
"""


def test_bluefs_real_reads_the_usage_matrix():
    assert DO.bluefs_real(BLUEFS_STATS) == {"LOG": 16 << 20, "WAL": 57 << 20, "DB": 76 << 10,
                                           "SLOW": 0}
    assert DO.bluefs_real(BLUEFS_STATS.replace("76 KiB", "6.3 MiB"))["DB"] == round(6.3 * 2**20)
    assert DO.bluefs_real("1 : device size 0x1 : using 0x0(0 B)\n") == {}  # one shared device


def test_sst_fraction_needs_every_osd_and_new_data():
    real0, real1 = {"DB": 1000}, {"DB": 1500}
    before = DO.osd_space({0: _dump(0, 10_000), 1: _dump(0, 10_000)}, {0: real0, 1: real0})
    after = DO.osd_space({0: _dump(0, 20_000), 1: _dump(0, 20_000)}, {0: real1, 1: real1})
    assert (before["sst_bytes"], after["sst_bytes"]) == (2000, 3000)
    assert DO.sst_fraction(before, after) == 0.05
    assert DO.sst_fraction(before, before) is None
    partial = DO.osd_space({0: _dump(0, 20_000), 1: _dump(0, 20_000)}, {0: real1, 1: {}})
    assert partial["sst_bytes"] is None
    assert DO.sst_fraction(before, partial) is None
    assert DO.osd_space({0: _dump(0, 1)})["sst_bytes"] is None


def _fio(total_ios: int, io_bytes: int, runtime_ms: int = 2000) -> dict:
    return {"jobs": [{"jobname": "4m", "error": 0, "job_runtime": runtime_ms, "write": {
        "total_ios": total_ios, "io_bytes": io_bytes,
        "lat_ns": {"mean": 2.5e6, "percentile": {"50.000000": 2_000_000,
                                                 "99.000000": 40_500_000}}}}]}


def test_fio_writes_rates_over_the_measured_runtime_and_latency_in_ms():
    w = DO.fio_writes(_fio(100, 400_000_000))
    assert w["ops_per_sec"] == pytest.approx(50.0)
    assert w["mb_per_sec"] == pytest.approx(200.0)
    assert (w["p50_ms"], w["p99_ms"], w["mean_ms"]) == (2.0, 40.5, 2.5)


def test_fio_writes_refuses_an_empty_or_multi_job_report():
    with pytest.raises(RuntimeError, match="no writes"):
        DO.fio_writes(_fio(0, 0))
    two = _fio(1, 1)
    two["jobs"] *= 2
    with pytest.raises(ValueError, match="one fio job"):
        DO.fio_writes(two)


def test_asok_reply_framing():
    body = json.dumps({"bluefs": {"db_used_bytes": 7}}).encode()
    assert DO.asok_reply(struct.pack(">I", len(body)) + body) == {"bluefs": {"db_used_bytes": 7}}
    assert DO.asok_reply(struct.pack(">I", 4) + b"text", text=True) == "text"
    with pytest.raises(RuntimeError, match="no reply"):
        DO.asok_reply(b"")
    with pytest.raises(RuntimeError, match="cut short"):
        DO.asok_reply(struct.pack(">I", 100) + b"{}")


def test_asok_command_speaks_the_admin_socket_protocol(tmp_path):
    path = tmp_path / "osd.0.asok"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    seen = []

    def serve():
        conn, _ = server.accept()
        with conn:
            req = b""
            while not req.endswith(b"\0"):
                req += conn.recv(100)
            seen.append(json.loads(req[:-1]))
            body = json.dumps({"ok": True}).encode()
            conn.sendall(struct.pack(">I", len(body)) + body)
    t = threading.Thread(target=serve)
    t.start()
    try:
        assert DO.asok_command(path, "perf dump", timeout=5) == {"ok": True}
    finally:
        t.join(5)
        server.close()
    assert seen == [{"prefix": "perf dump", "format": "json"}]


def _rows():
    rows = []
    for cfg, ops in (("hdd", 10.0), ("ssd", 30.0), ("hdd+ssd", 20.0), ("ssd+ssd", 33.0),
                     ("uncapped", 50.0)):
        for wl, scale, frac in (("4m", 1.0, 0.01), ("4k", 20.0, 0.5)):
            rows.append({"config": cfg, "workload": wl, "ops_per_sec": ops * scale,
                         "mb_per_sec": ops * 4.194304 if wl == "4m" else ops * scale * 0.004096,
                         "p50_ms": 100.0 / ops, "p99_ms": 300.0 / ops, "cpu_busy_percent": 20.0,
                         "block_iops_per_osd": 140.0, "block_cap_iops": 150,
                         "db_iops_per_osd": 80.0 if "+" in cfg else None,
                         "db_cap_iops": 500 if "+" in cfg else None,
                         "sst_fraction": frac if "+" in cfg else None,
                         "db_used_fraction": frac * 3 if "+" in cfg else 0.3})
    return rows


def test_summarize_speedups_fraction_and_costs_per_workload():
    rows = _rows()
    s = DR.summarize(rows)
    assert s["speedup_over_hdd_4m"] == {"hdd": 1.0, "ssd": 3.0, "hdd+ssd": 2.0, "ssd+ssd": 3.3}
    assert s["db_fraction"]["4m"]["value"] == 0.01
    assert s["db_fraction"]["4m"]["measured"] == {"hdd+ssd": 0.01, "ssd+ssd": 0.01}
    assert s["db_fraction"]["4m"]["db_used_fraction"] == {"hdd+ssd": 0.03, "ssd+ssd": 0.03}
    assert s["db_fraction"]["4k"]["value"] == 0.5
    assert set(s["perf_per_cost"]) == {"1:2", "1:5", "1:10"}
    assert set(s["perf_per_cost"]["1:5"]) == {"hdd", "ssd", "hdd+ssd", "ssd+ssd"}  # no reference
    # 4 MB: MB/s over cost; hdd+ssd at 1:5 costs 1.05
    assert s["perf_per_cost"]["1:5"]["hdd+ssd"] == pytest.approx(20 * 4.194304 / 1.05, abs=0.01)
    assert s["perf_per_cost_4k"]["1:2"]["ssd"] == pytest.approx(600 / 2)
    assert s["best_perf_per_cost"]["1:10"] == "hdd+ssd"
    # rule-of-thumb DB sizes beside the measured one
    assert set(s["perf_per_cost_if_db_fraction"]) == {"0.04", "0.06"}
    assert s["perf_per_cost_if_db_fraction"]["0.06"]["1:10"]["hdd+ssd"] == pytest.approx(
        20 * 4.194304 / 1.6, abs=0.01)
    # each row gets its speedup; the reference row too
    assert next(r for r in rows if r["config"] == "uncapped"
                and r["workload"] == "4m")["speedup_over_hdd"] == 5.0


def test_summarize_ignores_a_negative_fraction():
    rows = _rows()
    for r in rows:
        if r["config"] == "ssd+ssd" and r["workload"] == "4m":
            r["sst_fraction"] = -0.002  # a compaction freed more than the run added
    f = DR.summarize(rows)["db_fraction"]["4m"]
    assert f["measured"] == {"hdd+ssd": 0.01} and f["value"] == 0.01


def test_summarize_falls_back_to_the_default_fraction():
    rows = [{**r, "sst_fraction": None} for r in _rows()]
    s = DR.summarize(rows)
    assert s["db_fraction"]["4m"]["value"] == DR.DEFAULT_DB_FRACTION
    assert "not measured" in s["db_fraction"]["4m"]["source"]


def test_table_renders_rows_and_cost_maps():
    rows = _rows()
    results = {"configs": rows, **DR.summarize(rows)}
    text = DR.table(results)
    assert "| hdd+ssd | 4m | 20.0 | 83.9 | 5.0 | 15.0 | 2.0 | 20.0 | 140 (150) | 80 (500) |" in text
    assert "| hdd | 4k | 200.0 |" in text and "| 140 (150) | - |" in text
    assert "| SSD:HDD price (MB/s per cost unit, 4 MB writes) | hdd | ssd | hdd+ssd | ssd+ssd" \
        in text
    assert "| 10:1 |" in text and "| hdd+ssd |\n" in text
    assert "DB fraction f (SST bytes per stored byte): 4m 1.000%, 4k 50.000%" in text


def test_throttle_caps_a_second_device_in_the_same_group(tmp_path, monkeypatch):
    monkeypatch.setattr(E, "disk_of", lambda p: "254:0")
    root = tmp_path / "blkio"
    root.mkdir()
    (root / E.LIMIT_FILES[1]).write_text("")
    t = E.BlkioThrottle("run1", tmp_path, root=root)
    t.limit("osd.0", 4242, 150, devices={"7:3": 500})
    group = root / "ceph-sla-bench" / "run1" / "osd.0"
    # one rule per write: the kernel keeps a rule per device
    for f in E.LIMIT_FILES:
        assert (group / f).read_text() == "254:0 150\n7:3 500\n"
    (group / "blkio.throttle.io_serviced").write_text(
        "254:0 Read 10\n254:0 Write 32\n7:3 Read 1\n7:3 Write 5\n7:3 Total 6\nTotal 48\n")
    assert t.serviced("osd.0") == 42
    assert t.serviced("osd.0", "7:3") == 6


def test_device_number_of_a_block_node_only(tmp_path):
    with pytest.raises(E.EmulationError, match="not a block device"):
        E.device_number(tmp_path)
    loop0 = Path("/dev/loop0")
    if loop0.exists():
        assert E.device_number(loop0) == "7:0"


def test_cluster_reads_its_db_devices(tmp_path):
    (tmp_path / "dbdevs").write_text(
        "dir /dev/shm/ceph-sla-db.c.x\nfile /dev/shm/ceph-sla-db.c.x/osd.0.db\n"
        "loop /dev/loop3 /dev/shm/ceph-sla-db.c.x/osd.0.db osd.0\n"
        "file /dev/shm/ceph-sla-db.c.x/osd.1.db\n"
        "loop /dev/loop5 /dev/shm/ceph-sla-db.c.x/osd.1.db osd.1\n")
    assert Cluster(tmp_path).db_devices() == {0: "/dev/loop3", 1: "/dev/loop5"}
    assert Cluster(tmp_path / "none").db_devices() == {}
