"""The placement strategies' pure models: what each wants of a pool in each
mode, what it needs installed, what a switch costs and gains with it. The
acting half of each strategy (mon commands) is in placement/."""
