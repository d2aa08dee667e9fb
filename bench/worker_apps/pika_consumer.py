"""The floor: a raw pika consumer that counts each message (by its ``message_id``) and acks it, nothing else.

SIGTERM ends it through ``SystemExit``, so its counts are written at exit (``counting``).
"""

import signal
import sys

import pika
from counting import ran


def stop(_signum: int, _frame: object) -> None:
    sys.exit(0)


def settle(channel, method, properties, _body) -> None:  # type: ignore[no-untyped-def]
    ran(properties.message_id)
    channel.basic_ack(method.delivery_tag)


queue, prefetch = sys.argv[1], int(sys.argv[2])
signal.signal(signal.SIGTERM, stop)
connection = pika.BlockingConnection(pika.URLParameters("amqp://guest:guest@127.0.0.1:5672/%2F"))
channel = connection.channel()
channel.basic_qos(prefetch_count=prefetch)
channel.basic_consume(queue, settle)
channel.start_consuming()
