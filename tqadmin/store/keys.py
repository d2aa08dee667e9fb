"""The state store's names: the prefix every backend keeps its data under (the SQLite stores use it as a
namespace), and the Redis key names with the hash-tag rule that keeps them working on Redis Cluster.

Redis Cluster runs a script or a MULTI only when every key it touches lives in one slot, and a key's slot is
computed from its hash tag (the text between the first ``{`` and the next ``}``) when it has one. So:

- a job's record is ``<prefix>:job:{<job id>}``: claim, renew, complete and release touch only that key,
  and the jobs spread over the whole cluster;
- a user's ``ctx.once`` effect runs in the same MULTI as the job's completion mark, so on a cluster every
  key it writes must carry the job's tag: ``f"orders:{job_tag(ctx.job_id)}"`` (on one Redis any key works);
- heartbeats share one tag, ``{<prefix>:hb}``, so a beat updates the latest snapshot, the liveness index
  and the worker's history in one script. Heartbeats are a few writes a second, far from a hot slot.

Job ids may contain braces; the tag then drops them and the full id follows the tag, so two ids never share
a key.
"""

from __future__ import annotations

DEFAULT_PREFIX = "tq"


def job_tag(job_id: str) -> str:
    """The hash tag of a job's keys, ``{<id>}`` with braces removed from the id (``{_}`` when nothing is
    left: Redis ignores an empty tag ``{}`` and would hash the whole key)."""
    return "{" + (job_id.replace("{", "").replace("}", "") or "_") + "}"


def job_key(prefix: str, job_id: str) -> str:
    tag = job_tag(job_id)
    if "{" in job_id or "}" in job_id:
        return f"{prefix}:job:{tag}:{job_id}"
    return f"{prefix}:job:{tag}"


def heartbeat_tag(prefix: str) -> str:
    return "{" + prefix + ":hb}"


def heartbeat_keys(prefix: str) -> tuple[str, str, str]:
    """(latest snapshots hash, last-beat zset, promised-ttl hash)."""
    tag = heartbeat_tag(prefix)
    return f"{tag}:latest", f"{tag}:seen", f"{tag}:ttl"


def history_key(prefix: str, worker_id: str) -> str:
    return f"{heartbeat_tag(prefix)}:hist:{worker_id}"


def check_prefix(prefix: str) -> str:
    if not prefix or "{" in prefix or "}" in prefix:
        raise ValueError("a store key prefix must be non-empty and contain no braces")
    return prefix
