"""Admin actions written once over the plugin contract: filters, transfers, purge, export, audit."""
