"""What tests share and run beside the code under test: local servers (Redis, a RabbitMQ node, moto's SQS),
proxies that cut or slow a connection, fakes (the management API, an SQS endpoint with faults, an SQS that
hangs), samples of other frameworks' messages, hostile values, and the cron's fakes and sink. Imported as
``tests.support.NAME``.
"""
