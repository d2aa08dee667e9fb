"""Widgets of the dashboard; each renders one piece of state the app publishes."""
