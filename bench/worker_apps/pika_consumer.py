"""The floor: a raw pika consumer that acks each message and does nothing else."""

import sys

import pika

queue, prefetch = sys.argv[1], int(sys.argv[2])
connection = pika.BlockingConnection(pika.URLParameters("amqp://guest:guest@127.0.0.1:5672/%2F"))
channel = connection.channel()
channel.basic_qos(prefetch_count=prefetch)
channel.basic_consume(queue, lambda ch, method, _p, _b: ch.basic_ack(method.delivery_tag))
channel.start_consuming()
