"""The gain's prior from the devices: each region's read and write latency,
from the OSDs' perf counters, through the work model, so urgent devices
slower than the normal ones keep a pool isolated before its first switch."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest

from harness.fake_mgr import FakeCluster, make_module
from mgr_sla.core.device_prior import (
    MIN_DEVICE_OPS,
    NORMAL,
    URGENT,
    Calibration,
    DeviceMemory,
    KindLatency,
    OsdCounters,
    device_gain,
    region_latency,
)
from mgr_sla.core.gain_stats import KINDS
from mgr_sla.core.models.registry import MODELS
from mgr_sla.core.state import Role, Strategy
from mgr_sla.core.switch_cost import MAX_GAIN, Capacity, PoolCostInputs

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


Lat = dict[str, dict[str, list[KindLatency]]]
KIB16 = 16 * 1024.0


def devices(normal: tuple[float, float], urgent: tuple[float, float], busy: float = 0.5,
            urgent_size: float = 0.0, pool_ops: bool = True) -> Lat:
    """Service times (read ms, write ms) per region; the normal region `busy`
    (its latency its service time over 1 - busy), the urgent one idle; the
    normal region's ops 16 KiB, the urgent one's `urgent_size` (0: unknown),
    on the pools' ops (`pool_ops`) or its own clients'."""
    def kinds(r: float, w: float, u: float, size: float, pools: bool
              ) -> dict[str, list[KindLatency]]:
        return {"read": [KindLatency(r / 1e3 / (1 - u), r / 1e3, 1000, 0.0, size, pools)],
                "write": [KindLatency(w / 1e3 / (1 - u), w / 1e3, 1000, 0.0, size, pools)]}
    return {NORMAL: kinds(*normal, busy, KIB16, True),
            URGENT: kinds(*urgent, 0.0, urgent_size, pool_ops)}


def model(strategy: Strategy, reads: float, share: float = 0.5) -> float:
    cap = Capacity(1e12, 0.85, 2e12, 1e12, 1e13, 0.9)
    pool = PoolCostInputs(3, "p", strategy, 3, 1e9, 32, share, reads)
    return MODELS[strategy].cost(pool, cap, reads).expected_gain


def gain(strategy: Strategy, reads: float, lat: Lat,
         share: float = 0.5, osd_ratio: float = 1.0, calibration: Calibration | None = None
         ) -> float:
    got = device_gain(MODELS[strategy], reads, 3, share, model(strategy, reads, share), lat,
                      osd_ratio, calibration)
    assert got is not None
    return got.gain


# a 1:1 cluster (move's share 0.5), its HDDs half busy
SLOW = devices((8.0, 20.0), (24.0, 60.0))  # the SSDs a third of the HDDs' speed
FAST = devices((8.0, 20.0), (0.5, 1.0))
SAME = devices((8.0, 20.0), (8.0, 20.0))
MIXES = [0.0, 0.1, 0.5, 0.9, 1.0]


@pytest.mark.parametrize("reads", MIXES)
@pytest.mark.parametrize("strategy", list(Strategy))
def test_slow_urgent_devices_make_every_mix_lose(strategy: Strategy, reads: float) -> None:
    assert gain(strategy, reads, SLOW) < 1.0


def test_fast_urgent_devices_gain_by_the_normal_regions_relief_and_their_speed() -> None:
    # reads served by fast SSDs: the cap the benchmark measured
    assert gain(Strategy.COPY, 0.9, FAST) == MAX_GAIN
    # writes on move: the HDDs half as busy, the SSD replica faster than them:
    # (8 / 0.5) / (8 / 0.75)
    assert gain(Strategy.MOVE, 0.0, FAST) == pytest.approx(1.5, rel=0.01)
    # a write on copy waits for the normal copies, as busy as before: no gain
    assert gain(Strategy.COPY, 0.0, FAST) == pytest.approx(1.0)


def test_the_same_devices_share_the_work_evenly_by_move_and_copy_moves_the_queue() -> None:
    # move, 1:1: both regions end a quarter busy, from half: 1 / 0.5 over 1 / 0.75
    for reads in MIXES:
        assert gain(Strategy.MOVE, reads, SAME) == pytest.approx(1.5, rel=0.01)
    # copy of a read-only pool: its reads take the HDDs' queue along to the SSDs
    assert gain(Strategy.COPY, 1.0, SAME) == pytest.approx(1.0)


def test_an_idle_normal_region_gains_nothing_and_few_ssds_saturate() -> None:
    idle = devices((8.0, 20.0), (8.0, 20.0), busy=0.0)
    assert gain(Strategy.MOVE, 0.5, idle) == pytest.approx(1.0)
    # ten HDDs a fast SSD, the HDDs 60% busy: copy's reads of a read-heavy pool fit
    # on the SSDs; with SSDs only as fast as the HDDs they saturate
    ten = devices((8.0, 20.0), (0.5, 1.0), busy=0.6)
    assert gain(Strategy.COPY, 0.9, ten, osd_ratio=10.0) == MAX_GAIN
    flat = devices((8.0, 20.0), (8.0, 20.0), busy=0.6)
    assert gain(Strategy.COPY, 0.9, flat, osd_ratio=10.0) < 0.2


def test_a_kind_the_mix_needs_unmeasured_leaves_the_work_model() -> None:
    half: Lat = {NORMAL: SLOW[NORMAL], URGENT: {"write": SLOW[URGENT]["write"]}}
    copy = MODELS[Strategy.COPY]
    assert device_gain(copy, 0.5, 3, 0.2, 1.1, half) is None  # no urgent reads
    assert device_gain(copy, 0.0, 3, 0.2, 1.0, half) is not None  # writes only: measured
    assert device_gain(copy, 0.5, 3, 0.2, 1.1, {}) is None


def test_the_urgent_clients_own_ops_speak_last_and_only_at_the_pools_size() -> None:
    # the urgent region measured on its own clients' 8 MiB ops: reads from its
    # cache (0.5 ms), writes slow (60 ms); a pool's ops are 16 KiB
    big = devices((8.0, 20.0), (0.5, 60.0), urgent_size=8 * 2.0**20, pool_ops=False)
    assert device_gain(MODELS[Strategy.MOVE], 0.5, 3, 0.5, 2.0, big) is None
    slow = gain(Strategy.MOVE, 0.5, big, calibration=Calibration(150.0, 50.0, 0.0))
    fast = gain(Strategy.MOVE, 0.5, big, calibration=Calibration(150.0, 500.0, 0.0))
    assert slow == pytest.approx(gain(Strategy.MOVE, 0.5, devices((8.0, 20.0), (24.0, 60.0))))
    assert slow < 1.0 < fast
    # its own clients' ops of the pools' size, reread from cache, speak only
    # without a calibration: the benches compare the devices, not the caches
    cached = devices((8.0, 20.0), (0.2, 20.0), urgent_size=4 * 1024.0, pool_ops=False)
    assert gain(Strategy.COPY, 0.9, cached) > 2.0
    assert gain(Strategy.COPY, 0.9, cached, calibration=Calibration(150.0, 150.0, 0.0)) == \
        pytest.approx(gain(Strategy.COPY, 0.9, SAME))
    # what the urgent region answered the pools' ops speaks before the benches
    assert gain(Strategy.MOVE, 0.5, SAME, calibration=Calibration(150.0, 50.0, 0.0)) == \
        pytest.approx(gain(Strategy.MOVE, 0.5, SAME))


def test_the_urgent_regions_answer_to_pool_ops_outlives_its_own_clients_ops() -> None:
    """A shared spell measured the urgent region on the pools' ops; its own
    clients' ops after it are kept beside, not over, that figure."""
    memory = DeviceMemory()
    memory.update(NORMAL, {k: v[0] for k, v in SAME[NORMAL].items()})
    memory.update(URGENT, {k: KindLatency(v[0].secs, v[0].service_secs, 1000, 1.0, KIB16)
                           for k, v in SAME[URGENT].items()})
    memory.update(URGENT, {k: KindLatency(0.2, 0.1, 1000, 2.0, KIB16, pool_ops=False)
                           for k in KINDS})
    lat = memory.latency
    assert [f.at for f in lat[URGENT]["read"]] == [2.0, 1.0]  # newest first
    assert gain(Strategy.MOVE, 0.5, lat) == pytest.approx(gain(Strategy.MOVE, 0.5, SAME))
    # a calibration after it (the devices changed) retires it: the benches speak
    slow = gain(Strategy.MOVE, 0.5, lat, calibration=Calibration(150.0, 50.0, 1.5))
    assert slow == pytest.approx(gain(Strategy.MOVE, 0.5, SLOW))


def test_a_region_counts_a_kind_from_enough_ops_and_its_service_time_free_of_load() -> None:
    counters = {0: OsdCounters(100.0, {"read": (0.010 * 60, 60), "write": (0.030 * 10, 10)}),
                2: OsdCounters(100.0, {"read": (0.020 * 60, 60)}), 4: OsdCounters(0.0, {})}
    got = region_latency(counters, [0, 2, 4], now=5.0)
    assert set(got) == {"read"} and 120 >= MIN_DEVICE_OPS  # 10 writes: too few
    assert got["read"].secs == pytest.approx(0.015) and got["read"].ops == 120
    # osd.0: 0.7 ops/s x 12.9 ms; osd.2: 0.6 ops/s x 20 ms
    q0, q2 = 1 + 0.7 * (0.9 / 70), 1 + 0.6 * 0.020
    assert got["read"].service_secs == pytest.approx((0.6 / q0 + 1.2 / q2) / 120)
    # a busy device: 100 ops/s at 20 ms, a queueing factor of 3
    busy = region_latency({1: OsdCounters(10.0, {"read": (0.020 * 1000, 1000)})}, [1], 0.0)
    assert busy["read"].service_secs == pytest.approx(0.020 / 3)


def test_the_same_devices_under_other_loads_compare_alike() -> None:
    """A quiet normal region (10 ops/s) against a busy urgent one (150 ops/s)
    of the same devices, 5 ms service each: the loaded latencies differ near
    4x, the service times do not; the prior is the one an idle urgent region
    of the same devices gives."""
    quiet = {0: OsdCounters(100.0, {"read": (0.00526 * 500, 500), "write": (0.00526 * 500, 500)})}
    busy = {1: OsdCounters(10.0, {"read": (0.020 * 750, 750), "write": (0.020 * 750, 750)})}
    def mem(*regions: tuple[str, dict[int, OsdCounters], int]) -> Lat:
        memory = DeviceMemory()
        for region, counters, osd in regions:
            memory.update(region, region_latency(counters, [osd], 0.0))
        return memory.latency
    lat = mem((NORMAL, quiet, 0), (URGENT, busy, 1))
    assert lat[URGENT]["read"][0].secs / lat[NORMAL]["read"][0].secs > 3.5
    same = mem((NORMAL, quiet, 0), (URGENT, quiet, 0))
    got, idle = (device_gain(MODELS[Strategy.MOVE], 0.5, 3, 0.5, 2.0, d) for d in (lat, same))
    assert got is not None and idle is not None
    assert got.gain == pytest.approx(idle.gain, rel=0.01) and got.gain < 1.05  # a quiet region


# ---- the module shell, on the fake mgr -----------------------------------------

def _counters(cluster: FakeCluster, hdd: tuple[float, float], ssd: tuple[float, float],
              ssd_op_bytes: float = KIB16) -> None:
    """Every OSD's last samples: 500 reads and 500 writes over 100 s at the
    latencies given (ms; hdd: even OSDs, ssd: odd), of 16 KiB (the ssd ones
    `ssd_op_bytes`)."""
    for osd in range(8):
        r, w = ssd if osd % 2 else hdd
        size = ssd_op_bytes if osd % 2 else KIB16
        cluster.counters[osd] = {
            "osd.op_r_latency": [[0.0, 1e9, 100], [100.0, 1e9 + 500 * r * 1e6, 600]],
            "osd.op_w_latency": [[0.0, 1e9, 100], [100.0, 1e9 + 500 * w * 1e6, 600]],
            "osd.op_r_out_bytes": [[0.0, 1e6], [100.0, 1e6 + 500 * size]],
            "osd.op_w_in_bytes": [[0.0, 1e6], [100.0, 1e6 + 500 * size]]}


def _shared_after_quiet(prior: str, ssd_op_bytes: float = KIB16,
                        calibration: dict[str, float] | None = None, erasure: bool = False
                        ) -> tuple[FakeCluster, Any, dict[str, Any]]:
    """An auto pool at 90% reads (`erasure`: EC 2+1 on its own rule ecpool),
    urgent clients quiet from the start, the SSDs answering at a third of the
    HDDs' speed (on ops of `ssd_op_bytes`); `calibration` the IOPS per class
    `ceph sla advise --calibrate` stored; min_gain 1.05."""
    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    if erasure:
        cluster.rules.update(ecpool=7, sla_ec_ecpool=8)
        cluster.hdd_takes.add("ecpool")
    cluster.add_pool(3, "mixed", "ecpool" if erasure else "replicated_rule", erasure=erasure)
    _counters(cluster, hdd=(8.0, 20.0), ssd=(24.0, 60.0), ssd_op_bytes=ssd_op_bytes)
    store = {} if calibration is None else {"calibration": json.dumps(
        {"time": 0.0, "classes": {c: {"iops": v, "osds": [0]} for c, v in calibration.items()}})}
    m = make_module(cluster, store, {"min_dwell_secs": 0, "sustain_secs": 0, "step_wait_secs": 0,
                                  "min_gain": 1.05, "gain_prior": prior})
    m._rules.replace_check(lambda opts: None)
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    assert m.cmd_pool_set("mixed", role=Role.NORMAL).retval == 0
    for _ in range(10):
        cluster.ops[3] += 1000
        cluster.reads[3] = cluster.reads.get(3, 0) + 900
        m.clock = getattr(m, "clock", time.time()) + 5.0
        with m._store.act_lock:
            m._ticker.run(m.clock)
        m._rules.wait(5)
        m._admission.facts.limits.wait(5)
        m._placer.sender.wait(5)
    from mgr_sla.shell.commands_io import OutputFormat
    status = json.loads(m.cmd_status(format=OutputFormat.JSON).stdout)
    assert status["mode"] == "shared", status
    return cluster, m, next(p for p in status["pools"] if p["name"] == "mixed")


def test_slow_ssds_keep_an_ec_pool_on_its_own_rule_before_its_first_switch() -> None:
    """The ec strategy's prior too: an EC op waits for every shard it touches,
    so slow SSDs holding one shard slow the whole op; the model alone shares."""
    cluster, _, pool = _shared_after_quiet("devices", erasure=True)
    assert pool["strategy"] == "ec" and cluster.rule_of(3) == "ecpool", pool
    assert not any(pg.startswith("3.") for pg in cluster.upmaps)
    why = pool["kept_isolated"] or ""
    assert why.startswith("expected gain ") and "(devices: " in why, pool
    cluster, _, pool = _shared_after_quiet("model", erasure=True)
    assert pool["kept_isolated"] is None and cluster.rule_of(3) == "sla_ec_ecpool", pool


def test_slow_ssds_keep_a_pool_isolated_before_its_first_switch_and_say_why() -> None:
    cluster, m, pool = _shared_after_quiet("devices")
    assert cluster.rule_of(3) == "sla_isolated_normal" and cluster.pools[3]["size"] == 3
    assert not any(pg.startswith("3.") for pg in cluster.upmaps)
    why = pool["kept_isolated"] or ""
    assert why.startswith("expected gain ") and "(devices: " in why, pool
    assert "service time: reads " in why and "under min_gain 1.05x" in why, why
    # the model alone would have shared it: the devices decided
    cluster, _, pool = _shared_after_quiet("model")
    assert pool["kept_isolated"] is None, pool
    assert cluster.rule_of(3) != "sla_isolated_normal" or cluster.pools[3]["size"] == 4 \
        or any(pg.startswith("3.") for pg in cluster.upmaps)


def test_ssds_measured_on_their_own_clients_large_ops_compare_by_the_calibration() -> None:
    """The urgent region's figures from 8 MiB urgent ops say nothing of a
    pool's 16 KiB ones: without a calibration the work model speaks (and
    shares); with `osd bench` IOPS stored (the SSDs a third of the HDDs) the
    devices keep the pool isolated, and say by what."""
    big = 8 * 2.0**20
    _, _, pool = _shared_after_quiet("devices", ssd_op_bytes=big)
    assert pool["kept_isolated"] is None, pool
    cluster, _, pool = _shared_after_quiet("devices", ssd_op_bytes=big,
                                           calibration={"hdd": 150.0, "ssd": 50.0})
    why = pool["kept_isolated"] or ""
    assert "osd bench 50 vs 150 IOPS" in why and "under min_gain" in why, pool
    assert cluster.rule_of(3) == "sla_isolated_normal" and cluster.pools[3]["size"] == 3


def test_plan_shows_the_latencies_the_admission_used() -> None:
    _, m, _ = _shared_after_quiet("model")
    from mgr_sla.shell.commands_io import OutputFormat
    plan = json.loads(m.cmd_plan(format=OutputFormat.JSON).stdout)
    urgent, normal = plan["devices"]["urgent"], plan["devices"]["normal"]
    assert urgent["read"][0]["ms"] == pytest.approx(24.0) and normal["write"][0]["ops"] == 2000
    # 10 ops/s a device: at 14 ms (hdd) and 42 ms (ssd) mean latency
    assert normal["write"][0]["service_ms"] == pytest.approx(20.0 / 1.14, rel=1e-3)
    assert urgent["read"][0]["service_ms"] == pytest.approx(24.0 / 1.42, rel=1e-3)
    assert normal["read"][0]["kib_per_op"] == 16.0 and urgent["read"][0]["kib_per_op"] == 16.0


def test_a_large_region_is_read_a_slice_at_a_time() -> None:
    from mgr_sla.shell.device_latency import MAX_OSDS_READ, DeviceReader

    class Counters:
        asked: list[str] = []

        def get_counter(self, svc_type: str, svc_name: str, path: str) -> Any:
            self.asked.append(svc_name)
            return {path: [[0.0, 0, 0], [100.0, 2e9, 200]]}
        def get_store(self, key: str) -> str | None:
            return None
    port = Counters()
    reader = DeviceReader(port)  # type: ignore[arg-type]
    hdd = list(range(0, 2000, 2))
    classes = ("hdd", "ssd")
    # per OSD: two latency counters, and the bytes of each kind it served
    calls = 4 * (MAX_OSDS_READ + 2)
    got = reader.latency(0.0, hdd, [1, 3], classes, None)
    assert len(port.asked) == calls
    assert got[NORMAL]["read"][0].secs == pytest.approx(0.01)
    assert not got[URGENT]["read"][0].pool_ops  # its own clients': not shared
    reader.latency(30.0, hdd, [1, 3], classes, None)  # within the minute: nothing read
    assert len(port.asked) == calls
    # shared since 50: samples over 100 s reach back before it: still not the pools' ops
    assert not reader.latency(60.0, hdd, [1, 3], classes, 50.0)[URGENT]["read"][0].pool_ops
    assert reader.latency(200.0, hdd, [1, 3], classes, 50.0)[URGENT]["read"][0].pool_ops
    second = {int(n) for n in port.asked[calls:2 * calls] if int(n) % 2 == 0}
    assert second == set(hdd[MAX_OSDS_READ:2 * MAX_OSDS_READ])


def test_rare_slow_writes_weigh_by_their_time_in_the_prior() -> None:
    """Equal devices, writes 25 times slower than reads: at 96% reads the
    writes are half the time per op, so the prior counts them (by ops, 4%,
    they were left out and the pool's prior was its reads')."""
    lat = devices((6.0, 150.0), (6.0, 150.0))
    for strategy in (Strategy.COPY, Strategy.MOVE):
        got = device_gain(MODELS[strategy], 0.96, 3, 0.5, model(strategy, 0.96), lat)
        assert got is not None and "writes 150.0 ms urgent" in got.basis, got
    copy = device_gain(MODELS[Strategy.COPY], 0.96, 3, 0.5, model(Strategy.COPY, 0.96), lat)
    copy_reads = device_gain(MODELS[Strategy.COPY], 1.0, 3, 0.5, model(Strategy.COPY, 1.0), lat)
    assert copy is not None and copy_reads is not None and copy.gain > copy_reads.gain + 0.2
