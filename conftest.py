"""Root pytest configuration: bind ``streamarms.connectors`` to this checkout's ``connectors/``."""

from streamarms._paths import use_local_connectors

use_local_connectors()
