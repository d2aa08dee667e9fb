"""Amazon SQS broker plugin (boto3), for ``sqs://REGION``.

Registered under the ``sqs`` scheme of the ``tqadmin.brokers`` entry-point group, exactly as a third-party
plugin would be. This module imports no driver: boto3 loads with the faces. Credentials come from boto3's
usual chain (environment, shared config and credentials files, SSO, instance or container roles); the
endpoint of a local SQS (moto, ElasticMQ, LocalStack) from ``--endpoint-url`` or ``AWS_ENDPOINT_URL``.
"""

from __future__ import annotations

from typing import ClassVar

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin, PluginOption
from tqadmin.plugin.capabilities import Capabilities, TransportCapabilities
from tqadmin.plugin.transport import BrokerTransport
from tqadmin_sqs import naming
from tqadmin_sqs.capabilities import CAPABILITIES, TRANSPORT_CAPABILITIES

ENDPOINT_URL = PluginOption(
    name="endpoint_url",
    help="SQS endpoint for a local SQS such as moto or ElasticMQ (default: AWS's endpoint of the region)",
    env="AWS_ENDPOINT_URL",
    flag="--endpoint-url",
)


class SqsPlugin(BrokerPlugin):
    name: ClassVar[str] = "sqs"
    schemes: ClassVar[tuple[str, ...]] = ("sqs",)
    capabilities: ClassVar[Capabilities] = CAPABILITIES
    options: ClassVar[tuple[PluginOption, ...]] = (ENDPOINT_URL,)
    name_separator: ClassVar[str] = naming.SEPARATOR
    transport_capabilities: ClassVar[TransportCapabilities | None] = TRANSPORT_CAPABILITIES
    start_hint: ClassVar[str] = (
        "start a local SQS (e.g. `moto_server -p 5000`) and point --endpoint-url at it, or check the region"
        " and AWS's endpoint"
    )

    def dlq_name(self, queue: str) -> str:
        return naming.dlq_name(queue)

    def admin(self, config: BrokerConfig) -> BrokerAdmin:
        from tqadmin_sqs.admin import SqsAdmin

        return SqsAdmin(config)

    def transport(self, config: BrokerConfig) -> BrokerTransport:
        from tqadmin_sqs.transport import SqsTransport

        return SqsTransport(config)
