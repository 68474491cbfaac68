"""The errors streamarms raises on purpose, in one small hierarchy.

Catch :class:`StreamarmsError` to handle every one of them. Each is also the built-in exception it
refines (``ValueError`` for bad values), so code written against the built-in keeps working.

* :class:`ConfigError` -- a bad setting (a flag, a TOML value, an unknown key): the command line prints
  its one-line message and exits 2.
* :class:`~streamarms.runtime.records.InvalidRecord` -- a record that cannot be used (dead-lettered).
* :class:`~streamarms.checkpoint.CheckpointError` -- a checkpoint that cannot be read or belongs to
  another run.
* :class:`SinkUnavailable` -- a sink or checkpoint store cannot deliver *right now* (its broker is
  unreachable): nothing is lost, the daemon postpones the checkpoint and tries again.

A bad reward given to a policy raises a plain ``ValueError`` naming the arm and the value (the
policies' contract, :mod:`streamarms.policies.base`).

>>> issubclass(ConfigError, StreamarmsError) and issubclass(ConfigError, ValueError)
True
>>> str(ConfigError.unknown("metrics_prot", ["metrics_port", "metrics_addr"], where="--config a.toml"))
"--config a.toml: unknown setting 'metrics_prot' (did you mean 'metrics_port'?)"
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["StreamarmsError", "ConfigError", "SinkUnavailable", "operational"]


class StreamarmsError(Exception):
    """Base of every error streamarms raises on purpose."""


class SinkUnavailable(StreamarmsError, RuntimeError):
    """A sink's ``flush`` (or a checkpoint store's ``save``) timed out: the records wait in the sink and
    may still be delivered; the state that emitted them must not be checkpointed yet."""


class ConfigError(StreamarmsError, ValueError):
    """A bad setting; the message is one line and names the setting and the value."""

    @classmethod
    def unknown(cls, key: str, known: Iterable[str], *, where: str = "") -> ConfigError:
        """An unknown setting ``key``, with the nearest of ``known`` as a suggestion (difflib)."""
        near = difflib.get_close_matches(key.replace("-", "_"), list(known), n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return cls(f"{where + ': ' if where else ''}unknown setting {key!r}{hint}")


#: modules whose exceptions are the environment's (a broker, a client library), not a fault of streamarms
_OPERATIONAL_MODULES = ("kafka", "streamarms.connectors")


def operational(error: BaseException) -> bool:
    """Whether ``error`` is an expected failure of the run's environment -- a streamarms error (a setting,
    a checkpoint, a sink), an OS / network error, a timeout, or an error of the Kafka client or of a
    connector -- rather than a bug: the daemon then logs its one-line message; anything else is logged
    with its traceback (a ``ZeroDivisionError`` says nothing without the line that raised it).

    >>> operational(ConfigError("--k: must be > 0")), operational(TimeoutError()), operational(ZeroDivisionError())
    (True, True, False)
    """
    if isinstance(error, (StreamarmsError, OSError, TimeoutError)):
        return True
    module = type(error).__module__ or ""
    return any(module == m or module.startswith(m + ".") for m in _OPERATIONAL_MODULES)
