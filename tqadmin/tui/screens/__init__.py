"""Screens of the dashboard: one module per screen."""
