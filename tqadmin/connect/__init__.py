"""What every connection shares: the capped backoff between reconnects and restarts, the ``?prefix=``
namespace a state-store or broker URL carries, and the Redis plumbing the store and the Redis plugin both go
through.
"""
