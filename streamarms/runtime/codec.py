"""Record keys to arm names, record values to rewards: :class:`RewardCodec`."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

from ..models import BoundedModel, RewardModel
from ..validation import json_kind
from . import decoder
from .durations import UNITS, duration_in, is_duration, unit_of
from .field_path import FieldPath
from .records import InvalidRecord, RefusedKey
from .reward_rule import RewardRule

__all__ = ["RewardCodec"]

_NUMBERS = frozenset((int, float))  # the JSON numbers (bool is its own type)
_NUMBERS_BOOLEANS = frozenset((int, float, bool))  # ... and the booleans, where they are rewards 1 and 0
#: a JSON number (RFC 8259), the only text ``numeric_strings`` reads as one (not "nan", "1_000", " 1", "0x1")
JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
#: a number with a decimal comma (``0,25``): read only in a table separated by ``;`` (``connectors/csv_lines.py``;
#: elsewhere its refusal says so)
DECIMAL_COMMA = re.compile(r"-?[0-9]+,[0-9]+")
#: a text that names a category (``ERROR``, ``timed_out``): a refused one hints at ``reward_in``
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_NOT_WORDS = frozenset(("nan", "inf", "infinity", "null", "none", "true", "false"))
#: the text ``numeric_strings`` reads as a boolean (any case: ``True``, ``FALSE``)
_BOOLEAN_TEXT = frozenset(("true", "false"))


class RewardCodec:
    """Decodes record keys into arm names and record values into rewards.

    Key: UTF-8, at most ``max_key_bytes`` bytes. Value: a JSON object whose ``reward_field`` (a name with
    dots: a nested field, :class:`~streamarms.runtime.field_path.FieldPath`) is a JSON
    number (not a string), finite, and accepted by ``model`` (if given), or a boolean: ``true`` is the reward
    1 and ``false`` 0 (an error flag's rate) under a model of rates (the default Bernoulli, bounded on
    ``[0, 1]``; else refused). ``clip`` (a bounded ``model``): a finite reward outside the model's range
    counts as the nearest end of it (winsorized: a latency above a timeout range is the timeout, not a dead
    letter), counted in :attr:`clipped`.

    Two rules for fields that are not the reward as such (both off by default: a value of another type is a
    dead letter, never a guess): ``numeric_strings`` reads a JSON string holding a JSON number (``"0.005"``,
    ``"503"``: logs that quote every value, as nginx's ``escape=json`` format) as that number, and ``"true"`` /
    ``"false"`` in any case (a table's ``True`` cell) as the boolean; ``at_least``
    makes the reward 1 when the number is at least it and 0 otherwise (an error rate from status codes,
    ``at_least=500``; a rate of slow requests from latencies), for a model that holds 0 and 1; ``reward_in``
    (not with ``at_least``) makes it 1 when the field's text -- a string, an integer's digits, a boolean's
    ``true``/``false`` -- is one of the values given and 0 otherwise (the rate of ``"level": "ERROR"`` lines:
    ``reward_in=["ERROR", "FATAL"]``); ``reward_match`` (a third, alone) makes it 1 when a regular expression is
    found in that text (``reward_match="timed out"`` on a message). The rules: :class:`RewardRule`. ``missing``
    is the reward of a value without the field (a flag a log writes only when it is set), which is else refused.
    ``unit`` (``"ms"``) reads a duration written with its unit (``"1.2s"``, Go's ``"1m30s"``:
    :mod:`~streamarms.runtime.durations`) as the number of ``unit`` it lasts; a JSON number is already in ``unit``.

    >>> c = RewardCodec(model=None)
    >>> c.arm(b"eu-west"), c.reward("eu-west", b'{"reward": 0.25, "x": 1}')
    ('eu-west', 0.25)
    >>> c.reward("eu-west", b'{"reward": "1"}')
    Traceback (most recent call last):
    ...
    streamarms.runtime.records.InvalidRecord: not_numeric: reward of arm 'eu-west' is not a JSON number: '1' (--numeric-strings reads a number written as a string)
    >>> from streamarms.models import BoundedModel
    >>> c = RewardCodec(model=BoundedModel(0, 5000), clip=True)
    >>> c.reward("h1", b'{"reward": 31000}'), c.reward("h1", b'{"reward": 120}'), c.clipped
    (5000.0, 120.0, 1)
    >>> RewardCodec("http.ms", model=None).rewards([b'{"http": {"ms": 12}}', b'{"http.ms": 3}', b'{"http": 1}'])
    [12.0, 3.0, None]
    >>> from streamarms.models import BernoulliModel
    >>> c = RewardCodec("status", BernoulliModel(), numeric_strings=True, at_least=500)
    >>> c.rewards([b'{"status": "503"}', b'{"status": 200}', b'{"status": "-"}'])
    [1.0, 0.0, None]
    >>> RewardCodec("latency", model=None, unit="ms").rewards([b'{"latency": "17.19ms"}', b'{"latency": "1.2s"}'])
    [17.19, 1200.0]
    >>> c = RewardCodec("level", BernoulliModel(), reward_in=["ERROR", "FATAL"])
    >>> c.rewards([b'{"level": "ERROR"}', b'{"level": "INFO"}', b'{"level": 3}', b'{"level": null}'])
    [1.0, 0.0, 0.0, None]
    """

    def __init__(self, reward_field: str = "reward", model: RewardModel | None = None, *,
                 request_id_field: str = "request_id", max_key_bytes: int = 256, clip: bool = False,
                 numeric_strings: bool = False, at_least: float | None = None,
                 reward_in: Sequence[str] | None = None, reward_match: str | None = None,
                 missing: float | None = None, unit: str | None = None) -> None:
        if max_key_bytes < 1:
            raise ValueError(f"max_key_bytes must be >= 1, got {max_key_bytes}")
        if unit is not None and unit not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
        if unit is not None and (reward_in is not None or reward_match is not None):
            raise ValueError("a unit reads durations as numbers; reward_in and reward_match read texts")
        if clip and not isinstance(model, BoundedModel):
            raise ValueError("clipping needs the bounded reward model (its range is what rewards are clipped to)")
        #: the rule that makes each reward 0 or 1 (``--reward-at-least``, ``--reward-in``, ``--reward-match``), and
        #: what it met before its first 1 (``None``: no rule, the reward is the field's number)
        self.rule = RewardRule.of(at_least, reward_in, reward_match, clip, model)
        if missing is not None:
            try:
                if isinstance(missing, bool) or not isinstance(missing, (int, float)) or not math.isfinite(missing):
                    raise ValueError("not a finite number")
                if model is not None:
                    model.check("", float(missing))
            except ValueError as e:
                raise ValueError(f"missing must be a reward the model holds, got {missing!r}: {e}") from None
        #: the reward of a value without the reward's field (``None``: such a value is refused, ``missing_reward``)
        self.missing = None if missing is None else float(missing)
        #: a string holding a JSON number counts as that number
        self.numeric_strings = numeric_strings
        #: the reward is 1 when the field's number is at least this, else 0 (``None``: the number itself)
        self.at_least = at_least
        #: a boolean reward is 1 (true) or 0 (false): a model of rates (``RewardModel.of_rates``, or none) and
        #: no ``at_least`` that compares numbers
        self.booleans = at_least is None and (model is None or model.of_rates())
        #: neither rule: the batch paths read the field's number inline (else each record by :meth:`reward_of`)
        self.plain = not numeric_strings and self.rule is None and missing is None and unit is None
        self.unit = unit  # (the unit a duration's text is read in; None: a text is no number)
        #: the range rewards are clipped to (``None``: no clipping) and how many were
        self.clip = (model.low, model.high) if isinstance(model, BoundedModel) and clip else None
        self.clipped = 0
        self.reward_field = reward_field
        #: the field as a path, for a name with dots (``None``: a plain name, read as ``obj[reward_field]``)
        self.reward_path = FieldPath(reward_field) if "." in reward_field else None
        self._field = self.reward_path or itemgetter(reward_field)
        self.model = model
        self.request_id_field = request_id_field
        self.max_key_bytes = max_key_bytes
        #: value -> reward of the values :meth:`rewards` accepted (see there); ``None``: switched off
        self._memo: dict[Any, float | None] | None = {}
        self._memo_for: tuple[Any, ...] = ()

    def arm(self, key: bytes | str | None) -> str:
        """The arm name of a record key: its UTF-8 text (a ``str`` key must have a UTF-8 form: one with a
        lone surrogate has none, and would fail later as a Kafka key, a metrics label or UTF-8 text); a
        :class:`~streamarms.runtime.records.RefusedKey` is refused with its source's reason.

        >>> RewardCodec().arm("\\ud800")
        Traceback (most recent call last):
        ...
        streamarms.runtime.records.InvalidRecord: key_not_utf8: key '\\ud800' is not valid Unicode (a lone surrogate)
        """
        if key is None:
            raise InvalidRecord("key_missing", "record has no key (--key-field NAME reads it from a field of the value)")
        if type(key) is RefusedKey:
            raise InvalidRecord(key.reason, key.detail)
        if isinstance(key, str):
            try:
                raw = key.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidRecord("key_not_utf8", f"key {key[:64]!r} is not valid Unicode (a lone surrogate)") from None
            arm = key
        else:
            raw = bytes(key)
            try:
                arm = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidRecord("key_not_utf8", f"key {raw[:64]!r} is not UTF-8") from None
        if len(raw) > self.max_key_bytes:
            raise InvalidRecord("key_too_long", f"key of {len(raw)} bytes > max_key_bytes={self.max_key_bytes}: "
                                                f"{raw[:64]!r}...")
        if not arm:
            raise InvalidRecord("key_missing", "record has an empty key")
        return arm

    def parse(self, arm: str, value: bytes | str | None) -> dict[str, Any]:
        """The value as a JSON object."""
        if value is None:
            raise InvalidRecord("value_missing", f"record of arm {arm!r} has no value")
        try:
            obj = decoder.loads(value)
        except ValueError as e:  # any failure (syntax, UTF-8, depth, overflow): refuse, never crash
            shown = bytes(value[:80]) if isinstance(value, (bytes, bytearray, memoryview)) else value[:80]
            raise InvalidRecord("not_json", f"value of arm {arm!r} is {e}: {shown!r}") from None
        if not isinstance(obj, dict):
            raise InvalidRecord("not_object", f"value of arm {arm!r} is JSON but not an object: "
                                              + json_kind(obj))
        return obj

    def reward_of(self, arm: str, obj: dict[str, Any], count: bool = True) -> float:
        """The reward in a parsed value (``count``: a clipped one counts in :attr:`clipped`)."""
        try:
            v = self._field(obj)
        except KeyError:
            if self.missing is not None:
                return self.missing
            raise InvalidRecord("missing_reward", f"value of arm {arm!r} has no {self.reward_field!r} field") from None
        if self.rule is not None and self.at_least is None:
            return self._matched(arm, v)
        x = decoder.number(v)
        if x is None and self.unit is not None and type(v) is str:
            x = duration_in(v, self.unit)
        if x is None and self.numeric_strings and type(v) is str:
            if JSON_NUMBER.fullmatch(v):
                x = float(v)
            elif v.lower() in _BOOLEAN_TEXT:  # a table's True/False cell (pandas writes them so)
                v = v.lower() == "true"
        if v is True or v is False:
            return self._boolean(arm, v)
        if x is None:
            shown = repr(v[:80]) if isinstance(v, str) else json_kind(v)  # never repr a deep value
            hint = _hint(v, self.unit, self.numeric_strings, self.at_least, self.model) if isinstance(v, str) else ""
            raise InvalidRecord("not_numeric", f"reward of arm {arm!r} is not a JSON number: {shown}{hint}")
        if not math.isfinite(x):
            raise InvalidRecord("not_finite", f"reward of arm {arm!r} is not finite: {x!r}")
        if self.at_least is not None:
            assert self.rule is not None
            x = self.rule.of_number(x)
        c = self.clip
        if c is not None and not c[0] <= x <= c[1]:  # (the batch paths refuse it: they come here for it)
            x = c[0] if x < c[0] else c[1]
            self.clipped += count
        if self.model is not None:
            try:
                self.model.check(arm, x)
            except ValueError as e:
                raise InvalidRecord("out_of_model", str(e)) from None
        return x

    def _matched(self, arm: str, v: Any) -> float:
        """``reward_in``'s (``reward_match``'s) reward: 1 when the field's text is one of the values (the pattern is
        found in it), else 0; a value with no such text (a fraction, null, an array, an object) is refused."""
        t = type(v)
        if t is str:
            text = v
        elif t is bool:
            text = "true" if v else "false"
        elif t is int:
            text = str(v)
        else:
            shown = "a JSON number with a fraction" if t is float else json_kind(v)
            flag = self.rule.flag.split()[0] if self.rule is not None else ""
            raise InvalidRecord("not_numeric", f"reward of arm {arm!r} is {shown}: {flag} matches a text, an "
                                               "integer or a boolean")
        assert self.rule is not None  # (called under the rule only)
        return self.rule.of_text(text)

    def _boolean(self, arm: str, v: bool) -> float:
        """A boolean reward: 1 (true) or 0 (false) under a model of rates, else refused saying why."""
        if self.at_least is not None:
            raise InvalidRecord("not_numeric", f"reward of arm {arm!r} is a boolean ({str(v).lower()}), not a number "
                                               "to compare with --reward-at-least")
        if not self.booleans:
            assert self.model is not None  # (without a model every boolean is read)
            raise InvalidRecord("not_numeric", f"reward of arm {arm!r} is a boolean ({str(v).lower()}): true and false "
                                               f"are the rewards 1 and 0 under a model of rates (the default, bernoulli, "
                                               f"or bounded on [0, 1]), not the {self.model.name} model")
        return 1.0 if v else 0.0

    def reward(self, arm: str, value: bytes | str | None, count: bool = True) -> float:
        return self.reward_of(arm, self.parse(arm, value), count)

    def rewards(self, values: Sequence[bytes | str | None], parsed: Sequence[Any] | None = None) -> list[float | None]:
        """A poll batch's values decoded in one pass: the reward of each value :meth:`reward` accepts
        (the same float), ``None`` for every other one -- the caller then asks :meth:`reward` why,
        record by record, so a refusal's reason and text never depend on the path. One tight loop
        without the per-record calls of :meth:`reward` (the batched path of
        :meth:`~streamarms.runtime.scheduler.Scheduler.offer_batch`). ``parsed[i]``, if given and not
        ``None``, is ``values[i]`` already parsed by the source (a JSONL line is parsed once, not twice):
        the same object the parser would return. Values longer than ``decoder._SHORT`` take the
        per-record path (its nesting limit), as do what the parser refuses.

        >>> RewardCodec(model=None).rewards([b'{"reward": 1}', b'{"reward": "1"}', b'[1]', None, b'{"reward": 2.5}'])
        [1.0, None, None, None, 2.5]
        >>> RewardCodec(model=None).rewards([b'{"reward": true}', b'{"reward": false}'])
        [1.0, 0.0]
        >>> RewardCodec(model=None).rewards([b'{"reward": 1}', b'{"reward": 1}'], [{"reward": 3}, None])
        [3.0, 1.0]
        """
        if not self.plain:
            return self._rewards_by_rule(values, parsed)
        memo = self._memo
        if parsed is None and memo and self._memo_for == (decoder._loads, self.reward_field, self.model):
            try:
                known = list(map(memo.get, values))
            except TypeError:  # an unhashable value (a bytearray): the passes below
                known = [None]
            if None not in known:
                return known
        if parsed is None or None not in parsed:
            fast = self._rewards_clean(values, parsed)
            if fast is not None:
                if parsed is None and memo is not None:
                    self._remember(values, fast)
                return fast
        # the fast parser itself (read per batch: a benchmark may swap it); its failures are retried by reward()
        loads, field, path, check, isfinite = decoder._loads, self.reward_field, self.reward_path, None, math.isfinite
        short, booleans = decoder._SHORT, self.booleans
        accepts = None
        if self.model is not None:
            check = self.model.check
            accepts = getattr(self.model, "accepts", None)  # a float model.check passes, as a predicate
        out: list[float | None] = []
        append = out.append
        # (one pass; a value the parser refuses, of another type or out of the model becomes None)
        for obj, v in zip(parsed if parsed is not None else repeat(None, len(values)), values):
            if obj is None:
                try:
                    obj = loads(v) if len(v) <= short else None  # type: ignore[arg-type]
                except Exception:  # the per-record path says why
                    obj = None
            x: Any = (obj.get(field) if path is None else path.get(obj)) if type(obj) is dict else None  # a float once checked below
            t = type(x)
            if t is float:
                if not isfinite(x):
                    x = None
            elif t is int:
                try:
                    x = float(x)
                except OverflowError:
                    x = None
            elif t is bool and booleans:
                append(1.0 if x else 0.0)  # (a model of rates: a boolean is a reward)
                continue
            else:
                append(None)
                continue
            if x is not None:
                if accepts is not None:
                    if not accepts(x):
                        x = None
                elif check is not None:
                    try:
                        check("", x)
                    except Exception:
                        x = None
            append(x)
        return out

    def _rewards_by_rule(self, values: Sequence[bytes | str | None],
                         parsed: Sequence[Any] | None) -> list[float | None]:
        """:meth:`rewards` with a rule (``numeric_strings``, ``at_least``): :meth:`reward_of` on each value (a
        clipped one is ``None``: the record path counts it, once)."""
        out: list[float | None] = []
        for obj, v in zip(parsed if parsed is not None else repeat(None, len(values)), values):
            if type(obj) is not dict:
                try:
                    obj = self.parse("", v)
                except InvalidRecord:
                    out.append(None)
                    continue
            out.append(self.by_rule(obj))
        return out

    def by_rule(self, obj: dict[str, Any]) -> float | None:
        """The reward of a parsed value by :meth:`reward_of`, not counted: ``None`` when it is refused, or at
        an end of the clip range (maybe clipped: the record path says, and counts it once)."""
        try:
            x = self.reward_of("", obj, False)
        except InvalidRecord:
            return None
        clip = self.clip
        return None if clip is not None and (x == clip[0] or x == clip[1]) else x

    #: distinct values the memo of :meth:`rewards` holds at most; past it the memo is switched off for good
    MEMO_SIZE = 4096

    def _remember(self, values: Sequence[bytes | str | None], xs: list[float | None]) -> None:
        """The memo of :meth:`rewards`: a clean batch's values and their rewards, so that a batch made
        only of values seen before is one dict lookup a value (a Bernoulli stream has two or three
        distinct values: validating every record then costs ~40 ns instead of ~230). A value is a
        byte string (or str) and the same bytes always give the same reward under the same parser,
        field and model -- the memo is keyed by them and starts afresh if any changes. Streams whose
        values are mostly distinct (continuous rewards, a request id in every value) fill it within a
        few batches: it is then switched off, and costs nothing more.

        >>> c = RewardCodec(model=None)
        >>> c.rewards([b'{"reward": 1}', b'{"reward": 0}']), c.rewards([b'{"reward": 0}', b'{"reward": 1}'])
        ([1.0, 0.0], [0.0, 1.0])
        >>> sorted(c._memo.values())
        [0.0, 1.0]
        """
        memo = self._memo
        assert memo is not None
        key = (decoder._loads, self.reward_field, self.model)
        if self._memo_for != key:
            memo.clear()
            self._memo_for = key
        try:
            memo.update(zip(values, xs))
        except TypeError:  # an unhashable value: leave the memo as it was
            return
        if len(memo) > self.MEMO_SIZE:
            self._memo = None

    def _rewards_clean(self, values: Sequence[bytes | str | None],
                       parsed: Sequence[Any] | None) -> list[float | None] | None:
        """:meth:`rewards` of a batch in which every value is accepted, in C-level passes (``map``, ``set``),
        or ``None`` -- at the first value that is not (any exception, a type or a value out of place) --
        and then :meth:`rewards`' record loop decides, value by value. Each pass does what the loop does
        to each value: the same parser on each value alone (never one parse of the values joined: a value
        that is no JSON by itself could then combine with its neighbour into valid JSON), ``obj[field]``
        (a non-object or a missing field raises), the type test (``int`` or ``float``; ``bool`` where it is a
        reward), ``float(x)`` (an int too large raises), and the model's test: its finite ``support`` if it has
        one (Bernoulli: a set inclusion), else finiteness (the plain sum of finite floats is finite or has
        overflowed: either way no false acceptance) and ``accepts`` on each. Why: the record loop cost
        ~0.6 us a record, a third of the daemon's own cost per record while idle, ~0.4 us of it loop
        overhead around the parser (``benchmarks/kafka_throughput.py``).

        >>> c = RewardCodec(model=None)
        >>> c._rewards_clean([b'{"reward": 1}', b'{"reward": 0.5}'], None), c._rewards_clean([b'{"reward": "1"}'], None)
        ([1.0, 0.5], None)
        >>> c._rewards_clean([b'{"reward": true}', b'{"reward": 0}'], None)
        [1.0, 0.0]
        """
        model = self.model
        support = accepts = None
        if model is not None:
            support = model.support
            if support is None:
                accepts = getattr(model, "accepts", None)
                if accepts is None:
                    return None  # only model.check, record by record: the loop
        try:
            if parsed is None:
                if max(map(len, values)) > decoder._SHORT:  # type: ignore[arg-type]  # (None: TypeError)
                    return None  # (the per-record path counts brackets first)
                parsed = list(map(decoder._loads, values))
            xs: list[Any] = list(map(self._field, parsed))  # a non-dict or no field: an exception
            types = set(map(type, xs))
            if not types <= (_NUMBERS_BOOLEANS if self.booleans else _NUMBERS):
                return None
            if int in types or bool in types:
                xs = list(map(float, xs))  # OverflowError: too large for a double; a boolean is 1.0 or 0.0
        except Exception:  # whatever it is, the record loop says which value and why
            return None
        if support is not None:
            return xs if support.issuperset(xs) else None
        if not math.isfinite(sum(xs)):
            return None
        if accepts is not None and not all(map(accepts, xs)):
            return None
        return xs


def _hint(v: str, unit: str | None, numeric_strings: bool, at_least: float | None, model: Any = None) -> str:
    """What a refused text reward says reads it (the refusal's end): a flag (``--reward-in``, not beside
    ``--reward-at-least``, and only under the bernoulli model: a word among a bounded model's latencies is no
    category of them), or where a decimal comma is read."""
    flags = at_least is None and (model is None or model.name == "bernoulli")
    number = JSON_NUMBER.fullmatch(v)
    return (f" (--reward-unit {unit_of(v)} reads a duration with its unit as the number of {unit_of(v)} it lasts)"
            if unit is None and is_duration(v) else
            f" (--reward-unit {unit} reads a number with a unit: 850us, 17.19ms, 1.2s, 1m30s)"
            if unit is not None and not number else
            " (--numeric-strings reads a number written as a string)"
            if not numeric_strings and number else
            " (a decimal comma is read only in a table's reward column: one separated by semicolons, or --decimal-comma)"
            if DECIMAL_COMMA.fullmatch(v) else
            " (--numeric-strings reads true and false written as strings as 1 and 0)"
            if not numeric_strings and v.lower() in _BOOLEAN_TEXT else
            f" (--reward-in {v[:40]},.. makes the reward 1 where the field is one of those texts, else 0)"
            if flags and _WORD.fullmatch(v) and v.lower() not in _NOT_WORDS else "")
