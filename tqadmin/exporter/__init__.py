"""``tqadmin exporter``: every profile's queues, workers, task telemetry and cron served to Prometheus.

One poller a profile reads its broker and state store once per interval, whatever the number of scrapers
(:mod:`.polling`); the departed workers' counts stay in the totals (:mod:`.ledger`); a scrape turns the last
readings into bounded series (:mod:`.series`); :mod:`.service` runs the pollers and the HTTP endpoint, and
:mod:`.beside` serves it beside another run (the demo).
"""
