"""Worker telemetry: cumulative counters and mergeable latency histograms, snapshots, windowed figures.

Workers record; readers (``tqadmin stats``, the TUI) merge the live snapshots and take deltas between two
readings, so a poll costs O(workers), never O(jobs). Imports no driver.
"""
