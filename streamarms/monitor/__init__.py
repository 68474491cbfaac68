"""Continuous monitoring (issue 14): a pure, clock-free core that classifies every key forever.

* :mod:`.restart`: restart rules per key -- the Shiryaev-Roberts e-detector (default) and fixed windows;
* :mod:`.key`: one key's evidence (segment sequence, restart rule, epoch sequence, standing flag);
* :mod:`.table`, :mod:`.columns`: every key's evidence in columns, one slot a key (issue 13: ~0.7 KB a
  key instead of ~1.4 KB of objects); ``monitor.keys`` makes a key's :class:`KeyState` on demand;
* :mod:`.rows`: the columns in a checkpoint, one binary row per key, made as the checkpoint is written;
* :mod:`.group`: a group's k-sigma threshold in epochs (restarted when its members change);
* :mod:`.monitor`: :class:`ContinuousMonitor`, the alerts and their evidence, the false-alarm guarantee.

Integration design (not built yet)
----------------------------------
* ``streamarms run --forever`` (continuous by default): the runtime keeps one :class:`ContinuousMonitor`
  instead of restarting episodes; every decoded record goes to ``update(key, reward, time=record
  timestamp, group=...)`` (the passive mode: no sampling plan, every record is evidence). The returned
  alert dicts go through the existing alert sink; ``alert_id`` = ``"<key>:<kind>:<record>"`` for
  deduplication after at-least-once redelivery.
* ``--group-by FIELD``: the codec extracts the field as ``group``; the metrics exporter caps the number of
  distinct group labels (beyond the cap: ``"other"``) so the Prometheus label stays bounded.
* Checkpoints: ``snapshot()`` is JSON and continues bit for bit; it is stored with the consumer offsets
  of the records it covers (the existing checkpoint store), so a restart neither loses nor double-counts.
  Per-key snapshots let the Kafka compacted-topic store write only the keys that changed.
* ``streamarms explain KEY`` / ``GET /explain?key=``: :meth:`ContinuousMonitor.evidence`. Grafana: export
  each group's threshold interval and the flagged keys' intervals as gauges.
* Backfill: replay older offsets / from a timestamp through ``update`` before going live; stream time is
  the record's timestamp, so alerts raised during backfill carry their historical times.

>>> mon = ContinuousMonitor(k=2.0)
>>> mon.update("a", 1.0, time=0.0, group="eu")
[]
>>> mon.evidence("a")["state"]
'undecided'
"""

from .group import ThresholdGroup
from .key import NORMAL, OUTLIER, UNDECIDED, KeyState
from .monitor import DEFAULT_GROUP, ContinuousMonitor
from .restart import EDetector, WindowRestart

__all__ = ["ContinuousMonitor", "ThresholdGroup", "KeyState", "EDetector", "WindowRestart", "DEFAULT_GROUP",
           "OUTLIER", "NORMAL", "UNDECIDED"]
