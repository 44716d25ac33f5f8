"""Policy simulator for the SLA module at a scale one machine cannot run.

demand.py  urgent demand (daily cycle + bursts) and what the module measures
model.py   device queues, load shares from PG mappings, switches and backfill,
           the module's real decision core driving the modes (pure, no Ceph)
mapping.py the CRUSH part: a generated map and PG mappings from osdmaptool
"""
