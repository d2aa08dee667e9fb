"""The ceiling on Redis: a raw redis-py loop that reads a stream's consumer group, counts each entry (by its
id) and acks each batch."""

import sys

import redis
from counting import ran

stream, group, prefetch, url = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
client = redis.Redis.from_url(url)
while True:
    read = client.xreadgroup(group, "raw", {stream: ">"}, count=prefetch, block=100)
    for _stream, entries in read or ():
        for entry_id, _fields in entries:
            ran(entry_id.decode())
        client.xack(stream, group, *(entry_id for entry_id, _ in entries))
