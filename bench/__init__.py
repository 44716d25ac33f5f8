"""Benchmarks of the sla module and its CRUSH rules; each script runs from the
checkout's root as a module, e.g. `python3 -m bench.tick_bench --help`, and
writes its results as JSON with a "provenance" block (bench/provenance.py).

common.py               what the cluster benchmarks share: a mini cluster's lifetime,
                        emulated device speeds' cgroups, CPU counters, fio/rados output
provenance.py           the commit, date, command, machine, Ceph release and placement
                        design a results file was measured with
sim/                    the policy simulator's model (policy_sim.py)

The parts of the larger scripts, each named after its script:

sla_plan.py             sla_bench's plans, modes and module settings (also
                        strategy_bench's and primary_affinity's)
sla_clients.py          sla_bench's fio clients and the figures read from fio
sla_cluster.py          sla_bench's cluster and what it measures on it (Bench)
data_metadata_osd.py    what data_metadata reads from the OSDs and fio
data_metadata_report.py data_metadata's layouts, workloads, cost model and report
strategy_cluster.py     strategy_bench's cluster and its rounds
strategy_figures.py     strategy_bench's pure figures (fio, osdmaptool, PG stats)
strategy_map.py         what strategy_bench reads of its pool (acting sets, PG stats)
tick_cluster.py         tick_bench's fake mgr data for a cluster of any size
upmap_rig.py            upmap_scale's mon-only rig and its mon commands
upmap_osdmap.py         upmap_scale's CRUSH tree, rules, pool and planned entries
upmap_pacings.py        upmap_scale's pacings and what each costs the mon
"""
