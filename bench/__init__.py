"""Benchmarks of the sla module and its CRUSH rules; each script runs from the
checkout's root as a module, e.g. `python3 -m bench.tick_bench --help`, and
writes its results as JSON with a "provenance" block (bench/provenance.py).

common.py      what the cluster benchmarks share: a mini cluster's lifetime,
               emulated device speeds' cgroups, CPU counters, fio/rados output
provenance.py  the commit, date, command, machine, Ceph release and placement
               design a results file was measured with
sim/           the policy simulator's model (policy_sim.py)
"""
