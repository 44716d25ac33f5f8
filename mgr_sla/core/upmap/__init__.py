"""The upmap planner: which replicas of which PGs go to urgent OSDs, as
pg_upmap_items, from plain maps. Pure.
"""
