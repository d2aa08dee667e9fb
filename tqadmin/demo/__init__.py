"""`tqadmin demo`: the whole pipeline on the configured brokers, with failures injected on purpose.

The pieces are separate so each can be tested alone: :mod:`layout` (which queues and workers), :mod:`chaos`
(which run fails, and how), :mod:`tasks` (the task module the workers load), :mod:`traffic` (the steady
publisher with a few malformed messages), :mod:`orchestrator` (worker processes, shutdown without orphans)
and :mod:`summary` (the headless report).
"""
