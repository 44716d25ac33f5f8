"""Policy simulator for the SLA module at a scale one machine cannot run.

demand.py   urgent demand (daily cycle + bursts) and what the module measures
model.py    device queues, load shares from PG mappings, switches and backfill,
            latency and throughput tables per urgent load (pure, no Ceph)
policy.py   the module's real decision core driving the modes, and each
            trajectory's score (pure, no Ceph)
mapping.py  the CRUSH part: a generated map and PG mappings from osdmaptool
scenario.py one run's model and urgent demand, built from policy_sim's options
report.py   what a run prints (table, header, recommendation) and its JSON summary
"""
