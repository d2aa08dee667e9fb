"""What needs a look, written once: the conditions the dashboard paints red (:mod:`.conditions`) and the
Prometheus alerting rules for exactly those conditions over the exporter's metrics (:mod:`.rules`)."""
