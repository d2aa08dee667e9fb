"""The distributed cron: schedules, fire times with splay, misfire policy, the scheduler and its status."""
