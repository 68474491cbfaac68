"""What ``streamarms run`` says when it stops, one function a line: the episode that was running
(:func:`unfinished_text`), the keys no episode examined (:func:`not_examined_text`), why no (further) episode
started (:func:`not_started_text`, :func:`frozen_clock_text`), a file's incomplete last line, the refusals by
reason and what most likely caused them (:func:`refusals_hint`, :func:`key_field_hint`); :func:`stop_lines` puts
them in order. Each takes the numbers the run's summary holds and returns text (empty, or ``None``, when there is
nothing to say); :func:`unfinished` and :func:`not_examined` work out the summary's two episode entries."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from ..policies.ksigma_estimates import too_few_for_k
from ..registry import POLICIES
from ..runtime import DISCOVERING, FINISHED, RUNNING, EventClock, RewardCodec, SchedulerConfig
from ..runtime.continuous import ContinuousRunner
from ..runtime.evidence import finite_or_none, finite_pair
from ..runtime.key_rule import KeyRule
from .continuous import no_threshold_text
from .one_line import one_line
from .settings import RunSettings

__all__ = ["stop_lines", "files_summary", "lost_files_text", "unfinished", "not_examined", "not_started_text", "frozen_clock_text", "incomplete_text", "episode_text", "waiting_keys",
           "not_examined_text", "unfinished_text", "clipped_text", "refusals_text", "refusals_hint", "key_field_hint", "grouped_keys", "grouped_keys_text", "stop_table", "stop_plot",
           "time_unit_text"]


def _names(keys: Any) -> str:
    """The keys as a list in a line (their line breaks escaped: a key cannot forge a line of the report)."""
    return ", ".join(one_line(str(k)) for k in keys)


def stop_lines(out: dict[str, Any], sched: Any, s: RunSettings, cfg: SchedulerConfig | None,
               clock: EventClock | None) -> list[str]:
    """The lines a run prints when it stops (not ``--quiet``): what it read, used, refused and flagged, then
    each of the lines below that has something to say. ``out``: the run's summary (``--summary-json``)."""
    st = sched.stats()
    share = st["used"] / st["records"] if st["records"] else 0.0
    what = "continuous monitor" if isinstance(sched, ContinuousRunner) else f"{sched.episodes_done} episode(s)"
    lines = [f"stopped ({out['stop_reason']}) after {out['elapsed_seconds']:.1f} s: {what}, {st['used']:,} rewards "
             f"used of {st['records']:,} seen ({100 * share:.1f}%), {refusals_text(st['invalid'])}"
             f"{clipped_text(sched.codec)}; flagged now: {_names(sorted(sched.alerts.flagged)) or 'none'}"]
    if out.get("follow_files_lost"):
        lines.append(lost_files_text(out["follow_files_lost"]))
    if out.get("unfinished_episode"):
        lines.append(unfinished_text(out["unfinished_episode"]))
    if out.get("not_examined"):
        lines.append(not_examined_text(out["not_examined"], cfg))
    if out.get("no_threshold"):
        lines.append(no_threshold_text(out["no_threshold"]))
    lines.append(not_started_text(sched, cfg) or ("" if out.get("keys_grouped") else  # the grouping is the cause
                                                  frozen_clock_text(clock, s, sched.episodes_done)) or "")
    lines.append(out.get("reward_rule_unmatched") or "")
    if not isinstance(sched, ContinuousRunner):
        few = too_few_keys_text(out, s.k, POLICIES[s.policy].ksigma)
        lines.append(few or beyond_reach_text(out, s.two_sided, s.reward_model, s.reward_bounds[1], s.k) or "")
    lines.append(refusals_hint(st["records"], st["invalid"], bool(s.rewards_file),
                               bool(s.dead_letter_file or s.dead_letter_topic), s.reward_model, s.key_field,
                               s.rewards_file_given or s.rewards_file or (),
                               _topics(s) if s.bootstrap_servers and s.line_pattern is None else ""))
    lines.append(key_field_hint(st["known_arms"], st["records"], st["invalid"], s.key_field,
                                None if s.key_ids else sched.known_arms))
    if out.get("keys_grouped"):
        lines.append(grouped_keys_text(out["keys_grouped"], s, clock))
    return [line for line in lines if line]


def unfinished(sched: Any, stop_reason: str | None) -> dict[str, Any] | None:
    """The episode running when the daemon stopped (input exhausted, Ctrl-C, an error), summarised as a
    finished one is (the scheduler's episode summary, its reason the stop's), or ``None`` when none was
    running. A threshold not yet finite is ``None``: JSON has no NaN."""
    if isinstance(sched, ContinuousRunner) or sched.phase != RUNNING:
        return None
    d = sched.decision()
    if d is None:
        return None
    u: dict[str, Any] = sched.episodes.summary(d, sched.clock(), f"stopped: {stop_reason or 'unknown'}",
                                               sched.records, sched.policy_name)
    u["no_record"] = sched.silence.unheard()  # no record (so no sample) since the episode started
    cfg = sched.config  # an episode past its interval without a timeout held the later ones back
    if cfg.episode_timeout is None and u["duration"] >= cfg.episode_interval > 0 and (
            cfg.max_episodes is None or sched.episode < cfg.max_episodes):
        u["held_back"] = cfg.episode_interval
    pol = sched.episodes.policy
    u["waiting_count"], u["waiting"] = waiting_keys(sched.known_arms, pol.arms if pol is not None else [])
    u["threshold"], u["threshold_interval"] = finite_or_none(u["threshold"]), finite_pair(u["threshold_interval"])
    return u


def not_examined(sched: Any) -> dict[str, Any] | None:
    """The keys the last episode did not examine (first seen after it started) when none is running, or
    ``None`` (none such, or no episode yet): :func:`not_examined_text` says them."""
    last = sched.episodes.policy
    if isinstance(sched, ContinuousRunner) or sched.phase == RUNNING or last is None or not sched.episodes_done:
        return None
    n, keys = waiting_keys(sched.known_arms, last.arms)
    return {"episode": sched.episode, "count": n, "keys": keys, "max_episodes_reached": sched.phase == FINISHED} \
        if n else None


def not_started_text(sched: Any, cfg: SchedulerConfig | None) -> str | None:
    """Why no episode ran, when the run stopped while still discovering keys (a short replay) or after the
    policy refused the keys it was given (e.g. GOLD's rho on too few keys)."""
    if isinstance(sched, ContinuousRunner) or sched.episodes_done or sched.episode or cfg is None:
        return None
    n = len(sched.known_arms)
    refused = sched.episodes.build_error
    if refused:
        return f"no episode started: the policy refused the {n} keys: {refused}"
    if sched.phase != DISCOVERING:
        return None
    if not sched.records:
        return "no episode started: no record was read (the input is empty)"
    why = (f"it needs at least {cfg.min_arms} keys" if n < cfg.min_arms else
           f"the first starts after {cfg.discovery_records:,} record{'' if cfg.discovery_records == 1 else 's'} "
           f"without a new key (--discovery-records) "
           f"or {cfg.discovery_seconds:g} s (--discovery-seconds)")
    ep = sched.episodes
    gap = (ep.new_key_record - ep.first_key_record) // (n - 1) if n >= 3 and ep.first_record_at is not None else 0
    if gap >= max(100, cfg.discovery_records // 4):  # (an interleaved stream's keys all come in its first records)
        why += (f"; its keys came one at a time, a new one every {gap:,} records or so, as when a file is sorted or "
                "concatenated by key (interleave the records first: shuffled, or sorted by their time; streamarms "
                "inspect says how) or its keys are many and each rare")
    return f"no episode started: the run stopped while discovering keys ({n} so far); {why}"


def frozen_clock_text(clock: EventClock | None, s: RunSettings, episodes: int) -> str | None:
    """Why no further episode starts, when it is that stream time stands still: the records carry no
    timestamps (``None`` otherwise, or when no further episode was asked for).

    >>> from streamarms.cli.settings import RunSettings
    >>> frozen_clock_text(EventClock(), RunSettings(max_episodes=3), 1)[:60]
    'the records carry no timestamps, so stream time (the clock o'
    >>> frozen_clock_text(EventClock(5.0), RunSettings(), 1) is None, frozen_clock_text(None, RunSettings(), 1)
    (True, None)
    """
    if clock is None or clock.now > 0.0 or not episodes or s.mode != "passive" or s.episode_interval <= 0 \
            or (s.max_episodes is not None and episodes >= s.max_episodes):
        return None
    return ("the records carry no timestamps, so stream time (the clock of the passive mode) stands still: "
            f"the next episode, due --episode-interval {s.episode_interval:g} s after the last one started, "
            "never starts (nor do --want-timeout and --episode-timeout elapse); give the records a timestamp "
            "(--timestamp-field NAME reads one of their fields or columns as it), run with --clock wall (a live "
            "stream), or with --episode-interval 0 (each episode right after the last)")


def files_summary(source: Any) -> dict[str, Any]:
    """What a files' source adds to the run's summary: the files ending in a line not read yet, and the files removed
    before they were read to their end (``follow_files_lost``: rotations a follower behind owed, a pattern's files
    gone while the run was stopped; :mod:`~streamarms.connectors.owed_rotations`; their lines lost).

    >>> class Followed: incomplete = {}; owed = type("Owed", (), {"lost": 2})()
    >>> files_summary(Followed())
    {'incomplete_last_lines': {}, 'follow_files_lost': 2}
    """
    out: dict[str, Any] = {}
    if hasattr(source, "incomplete"):  # a JSONL replay: files ending in a line not read yet
        out["incomplete_last_lines"] = source.incomplete
    if (lost := getattr(getattr(source, "owed", None), "lost", 0)) > 0:
        out["follow_files_lost"] = lost
    return out


def lost_files_text(n: int) -> str:
    """The stop line of a run that found files of its logs removed before it read them to their end: rotations a
    follower behind had yet to read, or a pattern's files gone while the run was stopped.

    >>> print(lost_files_text(1))
    1 file of the logs read was removed before the run read all of it (logrotate's rotate N with the run that many rotations behind, or retention while the run was stopped): its unread lines are lost; the warnings above name it
    """
    one = n == 1
    return (f"{n:,} file{'' if one else 's'} of the logs read {'was' if one else 'were'} removed before the run read "
            f"all of {'it' if one else 'them'} (logrotate's rotate N with the run that many rotations behind, or "
            f"retention while the run was stopped): {'its' if one else 'their'} unread lines are lost; the warnings "
            f"above name {'it' if one else 'them'}")


def incomplete_text(path: str, n: int, checkpoint: bool, follow: bool = False) -> str:
    """The warning for a replayed file whose last line was left unread (no line end and, unless following,
    not a whole JSON object: a line still being written).

    >>> print(incomplete_text("r.jsonl", 17, True))
    r.jsonl ends in an incomplete line of 17 bytes (no newline, not a whole record; or a container's line written in parts, its last part not written): not read; a restart with the same --checkpoint reads it once it is complete
    >>> print(incomplete_text("r.jsonl", 17, False, follow=True))
    r.jsonl ends in a line of 17 bytes without its newline (--follow reads a line once its newline is written): not read; a later run reads it once it is complete
    """
    what = (f"a line of {n:,} byte{'' if n == 1 else 's'} without its newline (--follow reads a line once its "
            "newline is written)" if follow else
            f"an incomplete line of {n:,} byte{'' if n == 1 else 's'} (no newline, not a whole record; or a "
            "container's line written in parts, its last part not written)")
    return (f"{path} ends in {what}: not read; " + ("a restart with the same --checkpoint reads it once it is complete"
                                                     if checkpoint else "a later run reads it once it is complete"))


def episode_text(e: dict[str, Any], truth: list[str] | None) -> str:
    """An episode's end for a person (the embedded demo); ``truth``: the known outliers, if any.

    >>> print(episode_text({"episode": 2, "done": True, "samples": 900, "records": 3000, "arms": 6,
    ...                     "outliers": ["k5"], "undecided": []}, ["k5"]))
    episode 2 done: 900 rewards used of 3,000 seen (30.0%), 6 arms
      outliers found: k5
      true outliers:  k5  -> all found, no false alarm
    """
    used_share = e["samples"] / e["records"] if e["records"] else 0.0
    out = [f"episode {e['episode']} {'done' if e['done'] else 'ended: ' + e['reason']}: "
           f"{e['samples']:,} rewards used of {e['records']:,} seen ({100 * used_share:.1f}%), {e['arms']} arms",
           f"  outliers found: {_names(e['outliers']) or 'none'}"]
    if truth is not None:
        found, known = set(e["outliers"]), set(truth)
        missed, false = sorted(known - found), sorted(found - known)
        verdict = "all found, no false alarm" if not missed and not false else \
            f"missed {_names(missed) or 'none'}; false alarms {_names(false) or 'none'}"
        out.append(f"  true outliers:  {_names(truth) or 'none'}  -> {verdict}")
    if e["undecided"]:
        out.append(f"  undecided: {len(e['undecided'])} arms")
    return "\n".join(out)


def waiting_keys(known: Sequence[str], in_episode: Sequence[str], cap: int = 100) -> tuple[int, list[str]]:
    """The keys known but not in the running episode (first seen after it started: they wait for the next
    one): how many, and the first ``cap`` of them in order of arrival.

    >>> waiting_keys(["a", "b", "c", "d"], ["b", "a"])
    (2, ['c', 'd'])
    """
    inside = set(in_episode)
    out = [a for a in known if a not in inside]
    return len(out), out[:cap]


def not_examined_text(w: dict[str, Any], cfg: SchedulerConfig | None, show: int = 5) -> str:
    """One line on the keys the run's last episode did not examine (first seen after it started), when the run
    stopped with none running: a one-episode replay decided without them.

    >>> w = {"episode": 1, "count": 3, "keys": ["c", "d", "e"], "max_episodes_reached": True}
    >>> print(not_examined_text(w, SchedulerConfig()))
    3 keys were not in episode 1, the last (first seen after it started), and no episode classified them: c, d, e; \
the next episode would (--max-episodes), and the first starts once 1,000 records bring no new key \
(--discovery-records) or 10 s of stream time after the first record once the keys settle (--discovery-seconds)
    """
    keys = _names(w["keys"][:show]) + (f", +{w['count'] - show} more" if w["count"] > show else "")
    one = w["count"] == 1
    out = (f"{w['count']} key{'' if one else 's'} {'was' if one else 'were'} not in episode {w['episode']}, the last "
           f"(first seen after it started), and no episode classified {'it' if one else 'them'}: {keys}; the next "
           "episode would" + (" (--max-episodes)" if w.get("max_episodes_reached") else ""))
    if cfg is not None and w["episode"] == 1:
        out += (f", and the first starts once {cfg.discovery_records:,} records bring no new key (--discovery-records) "
                f"or {cfg.discovery_seconds:g} s of stream time after the first record once the keys settle "
                "(--discovery-seconds)")
    return out


def unfinished_text(u: dict[str, Any], show: int = 5) -> str:
    """One line on the episode that was running when the run stopped: what it had classified, and which
    keys it had not (the first ``show`` by name).

    >>> print(unfinished_text({"episode": 1, "samples": 1200, "outliers": ["h7"], "normals": 40,
    ...                        "undecided": ["h1", "h2"], "threshold": 0.0287, "threshold_interval": [0.02, 0.04]}))
    episode 1 unfinished at the stop (1,200 samples): 1 outlier (h7), 40 normal, 2 undecided (h1, h2); threshold 0.0287 [0.02, 0.04]
    >>> print(unfinished_text({"episode": 1, "samples": 0, "outliers": [], "normals": 0, "undecided": ["a", "b"],
    ...                        "threshold": None, "no_record": ["b"]}))
    episode 1 unfinished at the stop (0 samples): 0 outliers, 0 normal, 2 undecided (a, b); no record since it started (the episode waits for it; --episode-silence-records): b
    >>> print(unfinished_text({"episode": 2, "samples": 9, "outliers": [], "normals": 1, "undecided": ["a"],
    ...                        "threshold": None, "policy": "wrr"}))
    episode 2 unfinished at the stop (9 samples): 0 outliers, 1 normal, 1 undecided (a); --policy cs (streamarms' own engine, intervals valid at every count) decides on far fewer records (README: 0.04-0.44x WRR's samples)
    >>> print(unfinished_text({"episode": 1, "samples": 9, "outliers": [], "normals": 1, "undecided": ["a"],
    ...                        "threshold": None, "waiting_count": 1, "waiting": ["late-key"]}))
    episode 1 unfinished at the stop (9 samples): 0 outliers, 1 normal, 1 undecided (a); 1 key was first seen after it started and waits for the next episode (--episode-timeout ends an episode that cannot decide): late-key
    >>> print(unfinished_text({"episode": 1, "samples": 9, "outliers": [], "normals": 1, "undecided": ["a"],
    ...                        "threshold": None, "duration": 7200.0, "held_back": 300.0}))
    episode 1 unfinished at the stop (9 samples): 0 outliers, 1 normal, 1 undecided (a); it ran 7,200 s of stream time, past --episode-interval (300 s), so no later episode started: --episode-timeout SEC ends an episode that cannot decide
    """
    und = u["undecided"]
    names = _names(und[:show]) + (f", +{len(und) - show} more" if len(und) > show else "")
    out = (f"episode {u['episode']} unfinished at the stop ({u['samples']:,} samples): {len(u['outliers'])} "
           f"outlier{'' if len(u['outliers']) == 1 else 's'}" + (f" ({_names(u['outliers'])})" if u["outliers"] else "")
           + f", {u['normals']} normal, {len(und)} undecided" + (f" ({names})" if und else ""))
    if u.get("threshold") is not None:
        iv = u.get("threshold_interval")
        out += f"; threshold {u['threshold']:.4g}" + (f" [{iv[0]:.4g}, {iv[1]:.4g}]" if iv and None not in iv else "")
    if u.get("no_record"):
        quiet = u["no_record"]
        out += (f"; no record since it started (the episode waits for {'it' if len(quiet) == 1 else 'them'}; "
                f"--episode-silence-records): {_names(quiet[:show])}" + (f", +{len(quiet) - show} more" if len(quiet) > show else ""))
    if u.get("waiting_count"):
        n, first = u["waiting_count"], u["waiting"]
        out += (f"; {n:,} key{' was' if n == 1 else 's were'} first seen after it started and wait{'s' if n == 1 else ''} "
                f"for the next episode (--episode-timeout ends an episode that cannot decide): {_names(first[:show])}"
                + (f", +{n - show:,} more" if n > show else ""))
    if u.get("held_back"):
        out += (f"; it ran {u['duration']:,.0f} s of stream time, past --episode-interval ({u['held_back']:g} s), so no "
                "later episode started: --episode-timeout SEC ends an episode that cannot decide")
    if und and u.get("policy") in ("rr", "wrr") and not u.get("no_record"):
        out += ("; --policy cs (streamarms' own engine, intervals valid at every count) decides on far fewer "
                "records (README: 0.04-0.44x WRR's samples)")
    return out


def too_few_keys_text(out: dict[str, Any], k: float, ksigma: bool) -> str | None:
    """Said when a k-sigma run flagged nothing and none of its episodes (the unfinished one too) had keys enough for
    its ``k`` to hold an outlier (:func:`~streamarms.policies.ksigma_estimates.too_few_for_k`): the cause, where the
    other closing lines would guess at another (a threshold near 1, an episode that cannot decide). ``None`` otherwise.

    >>> print(too_few_keys_text({"episodes": [{"arms": 3, "outliers": []}], "flagged": []}, 2.0, True))
    no key could be flagged: with 3 keys no key can be an outlier at k = 2: a mean is at most sqrt(n - 1) = 1.41 standard deviations from the keys' mean (Samuelson's inequality), so every key is normal whatever the data; it takes 6 keys at k = 2, or a k below 1.41
    """
    if not ksigma or out.get("flagged"):
        return None
    episodes = [*out.get("episodes", []), *([out["unfinished_episode"]] if out.get("unfinished_episode") else [])]
    sizes = [e.get("arms", len(e.get("outliers", [])) + e.get("normals", 0) + len(e.get("undecided", [])))
             for e in episodes]
    if not sizes or any(too_few_for_k(n, k) is None for n in sizes):
        return None
    return f"no key could be flagged: {too_few_for_k(max(sizes), k)}"


def beyond_reach_text(out: dict[str, Any], two_sided: bool, model: str, top: float, k: float) -> str | None:
    """Said when a one-sided run could flag no key: in every episode (the unfinished one too) the threshold's interval
    reached ``top``, the highest reward a key can have (a rate's 1), so no key could be confidently above it, and
    nothing was flagged. The keys sit near the top (right answers, successes: ~0.9 with a spread of 0.05 puts
    ``mu + 2 sigma`` at 1), and a key that stands out stands out *below*, which a one-sided run never flags. ``None``
    otherwise (also for a model without a top).

    >>> print(beyond_reach_text({"episodes": [{"threshold": 0.998, "threshold_interval": [0.96, 1.02],
    ...                                        "outliers": []}], "flagged": []}, False, "bernoulli", 1.0, 2.0))
    no key could be flagged: the threshold's interval reached 1.02 or more, at or past 1, the highest reward a key can have (a key is flagged once it is surely above the threshold; its keys sit near the top, and mu + 2 sigma is at or near 1); a key that stands out here stands out below: --two-sided flags those too, or make the other outcome the reward (--reward-in false for a true/false field)
    >>> beyond_reach_text({"episodes": [{"threshold": 0.4, "outliers": []}], "flagged": []}, False, "bernoulli", 1.0, 2.0)
    """
    if two_sided or model not in ("bernoulli", "bounded") or out.get("flagged"):
        return None
    episodes = [*out.get("episodes", []), *([out["unfinished_episode"]] if out.get("unfinished_episode") else [])]
    reach = [max((x for x in [e.get("threshold"), *(e.get("threshold_interval") or [])] if x is not None), default=None)
             for e in episodes if not e.get("outliers")]
    ends = [r for r in reach if r is not None and r >= top]
    if not episodes or len(ends) < len(episodes):
        return None
    other = (", or make the other outcome the reward (--reward-in false for a true/false field)" if model == "bernoulli"
             else "")
    return (f"no key could be flagged: the threshold's interval reached {min(ends):.4g} or more, at or past {top:g}, "
            "the highest reward a key can have (a key is flagged once it is surely above the threshold; its keys sit "
            f"near the top, and mu + {k:g} sigma is at or near {top:g}); a key that stands out here stands out below: "
            f"--two-sided flags those too{other}")


def clipped_text(codec: RewardCodec) -> str:
    """``--clip``'s count for a run's last line (empty without ``--clip``).

    >>> from streamarms.models import BoundedModel
    >>> c = RewardCodec(model=BoundedModel(0, 5000), clip=True); c.clipped = 1200
    >>> clipped_text(c), clipped_text(RewardCodec())
    (', 1,200 rewards clipped to [0, 5000]', '')
    """
    if codec.clip is None:
        return ""
    return f", {codec.clipped:,} reward{'s' if codec.clipped != 1 else ''} clipped to [{codec.clip[0]:g}, {codec.clip[1]:g}]"


def refusals_text(invalid: dict[str, int], top: int = 3) -> str:
    """The refused records of a run for its last line: the total, then the commonest reasons.

    >>> refusals_text({"not_json": 0})
    '0 refused'
    >>> refusals_text({"value_missing": 30, "not_json": 2, "key_missing": 1, "not_finite": 1, "out_of_model": 1})
    '35 refused (value_missing 30, not_json 2, key_missing 1, +2 more reasons)'
    """
    counts = sorted(((v, k) for k, v in invalid.items() if v), key=lambda t: (-t[0], t[1]))
    total = sum(v for v, _ in counts)
    if not counts:
        return "0 refused"
    shown = ", ".join(f"{k} {v:,}" for v, k in counts[:top])
    more = f", +{len(counts) - top} more reason{'s' if len(counts) - top > 1 else ''}" if len(counts) > top else ""
    return f"{total:,} refused ({shown}{more})"


def _topics(s: Any) -> str:
    """The flags that name the run's Kafka topics, for an ``inspect`` command."""
    return f"--bootstrap-servers {shlex.quote(s.bootstrap_servers)}" + "".join(
        f" --rewards-topic {shlex.quote(t)}" for t in s.rewards_topic or ())


def all_refused_text(stop_reason: str | None, stats: dict[str, Any], records_before: int,
                     quiet: bool = False) -> str | None:
    """The error of a run that read its input to the end and refused every record (a field named wrong, another
    format): exit 2, as a bad setting found before the first record is, so that a script sees it. ``None`` for any
    other run, and for a restart (its checkpoint's ``records_before`` records counted in ``stats``) that read nothing
    new or whose checkpoint has used records (one bad line appended to a file read well is a dead letter, not a bad
    setting).

    >>> print(all_refused_text("input exhausted", {"records": 2, "invalid": {"not_json": 2}}, 0))
    every record read (2) was refused: nothing to detect outliers in (its last lines say why)
    >>> print(all_refused_text("input exhausted", {"records": 2, "invalid": {"not_json": 2}}, 1, quiet=True))
    every record read (2) was refused: nothing to detect outliers in (without --quiet the run says why)
    >>> all_refused_text("input exhausted", {"records": 2, "invalid": {"not_json": 1}}, 0)  # (one used)
    >>> all_refused_text("input exhausted", {"records": 2, "invalid": {"not_json": 2}}, 2)  # (nothing new)
    >>> all_refused_text("signal", {"records": 2, "invalid": {"not_json": 2}}, 0)  # (not read to the end)
    """
    records, refused = stats["records"], sum(stats["invalid"].values())
    if stop_reason != "input exhausted" or records == records_before or refused < records:
        return None
    why = "without --quiet the run says why" if quiet else "its last lines say why"
    return f"every record read ({records:,}) was refused: nothing to detect outliers in ({why})"


def refusals_hint(records: int, invalid: dict[str, int], from_file: bool, dead_letters: bool,
                  model: str = "bernoulli", key_field: str | None = None, files: Sequence[str] = (),
                  topics: str = "") -> str:
    """One line of advice when most of a run's records were refused (empty otherwise): where to see them,
    and for JSONL replays the commonest mistakes (an envelope line whose ``"value"`` is null; a line whose key
    is under another name, or is not a string or an integer; lines that are not JSON objects). ``key_field``: the field ``--key-field`` names, which most records lacking a key lack.
    ``files``: the ``--rewards-file`` files as given, for the ``streamarms inspect`` command that shows what their
    records hold (when they lack a key or a reward, or are no JSON). ``topics``: the flags that name a run's Kafka topics
    read as JSON, for the ``inspect`` command that names the format of values that are log lines.

    >>> refusals_hint(100, {"not_json": 10}, True, False)
    ''
    >>> print(refusals_hint(100, {"value_missing": 100}, True, True))
    most records were refused (100 of 100): the dead letters name each one and why; their "value" is null: a JSONL line with "key" and "value" carries its record in "value" ({"key": "eu", "value": {"reward": 1}}); a line without "value" is the record ({"key": "eu", "reward": 1})
    >>> print(refusals_hint(100, {"key_missing": 100}, True, True, key_field="hots"))
    most records were refused (100 of 100): the dead letters name each one and why; most records have no field 'hots' (--key-field): streamarms inspect FILE lists the fields they have
    >>> print(refusals_hint(100, {"not_json": 100}, False, False, topics="--bootstrap-servers k:9092 --rewards-topic logs"))
    most records were refused (100 of 100): the first are logged; --dead-letter-file/--dead-letter-topic keeps them all with the reason; a Kafka record's value is read as one JSON object, or as a log line with --line-pattern (named formats: combined, ingress-nginx, haproxy, envoy, alb, logfmt): streamarms inspect --bootstrap-servers k:9092 --rewards-topic logs names the format of the latest values and suggests the flags
    >>> print(refusals_hint(100, {"bad_timestamp": 100}, True, True))  # doctest: +ELLIPSIS
    most records were refused (100 of 100): the dead letters name each one and why; their time field is not a time read without a format ...: --timestamp-format names its format ...
    >>> print(refusals_hint(100, {"out_of_model": 90}, True, True))
    most records were refused (90 of 100): the dead letters name each one and why; the rewards are numbers the bernoulli model (0 or 1) does not hold: --reward-at-least N makes each a flag (1 at or above N: a status >= 500, a latency >= 1000), or --reward-model bounded --reward-range LOW,HIGH compares the numbers themselves
    """
    refused = sum(invalid.values())
    if not records or refused * 2 <= records:
        return ""
    where = ("the dead letters name each one and why" if dead_letters
             else "the first are logged; --dead-letter-file/--dead-letter-topic keeps them all with the reason")
    out = f"most records were refused ({refused:,} of {records:,}): {where}"
    if from_file and invalid.get("value_missing", 0) * 2 > refused:
        out += ('; their "value" is null: a JSONL line with "key" and "value" carries its record in "value" '
                '({"key": "eu", "value": {"reward": 1}}); a line without "value" is the record ({"key": "eu", "reward": 1})')
    elif key_field is not None and invalid.get("key_missing", 0) * 2 > refused:
        out += f"; most records have no field {key_field!r} (--key-field)" + (
            "" if files else ": streamarms inspect FILE lists the fields they have" if from_file else
            ": name the field of the records' values that holds their key")  # (files: the inspect line below)
    elif from_file and invalid.get("key_missing", 0) * 2 > refused:
        out += ('; a JSONL line is a JSON object naming its key in "arm" or "key" ({"arm": "eu", "reward": 1}), or in "key" '
                'with the record in "value" ({"key": "eu", "value": {"reward": 1}}), a string or an integer')
    elif invalid.get("missing_reward", 0) * 2 > refused:
        out += ("; most records have no reward field: --reward-missing X reads a record without it as the reward X "
                "(--reward-missing 0: a flag a log writes only when it is set), or --reward-field names another")
    elif invalid.get("out_of_model", 0) * 2 > refused:
        out += ("; the rewards are numbers the bernoulli model (0 or 1) does not hold: --reward-at-least N makes each "
                "a flag (1 at or above N: a status >= 500, a latency >= 1000), or --reward-model bounded --reward-range "
                "LOW,HIGH compares the numbers themselves" if model == "bernoulli" else
                f"; the rewards lie outside the {model} model's range: widen --reward-range, or --clip counts a reward "
                "beyond it as the range's end")
    elif from_file and invalid.get("bad_timestamp", 0) * 2 > refused:
        out += ("; their time field is not a time read without a format (a number since the epoch, ISO 8601): "
                "--timestamp-format names its format (strptime: '%a, %d %b %Y %H:%M:%S %Z' reads 'Fri, 01 Mar 2024 "
                "00:00:00 GMT'), --timestamp-unit a number's unit, or --timestamp-field another field")
    elif topics and invalid.get("not_json", 0) * 2 > refused:
        out += ("; a Kafka record's value is read as one JSON object, or as a log line with --line-pattern (named "
                f"formats: combined, ingress-nginx, haproxy, envoy, alb, logfmt): streamarms inspect {topics} names the "
                "format of the latest values and suggests the flags")
    elif from_file and (invalid.get("not_json", 0) + invalid.get("not_object", 0)) * 2 > refused:
        out += ('; a JSONL file holds one JSON object a line ({"arm": "eu", "reward": 1, "timestamp": 1700000000123}); '
                'a table with a header line is read as one by its name (.csv, .tsv) or --rewards-format csv|tsv')
    shapeless = sum(invalid.get(r, 0) for r in ("key_missing", "not_json", "not_object", "missing_reward",
                                                "value_missing", "not_numeric", "bad_timestamp"))
    if files and shapeless * 2 > refused and "-" not in files:
        shown = " ".join(shlex.quote(f) for f in files[:2]) + (" ..." if len(files) > 2 else "")
        out += f"; streamarms inspect {shown} shows what the records hold and suggests the flags that read them"
    return out


def stop_table(sched: Any) -> str:
    """``--table``: every key's evidence at the stop, as ``streamarms explain CHECKPOINT --table`` prints it (the
    running or last episode's keys, or the continuous monitor's)."""
    from .explain import episode_table, monitor_table

    if isinstance(sched, ContinuousRunner):
        return monitor_table(sched.monitor)
    return episode_table(sched.policy, sched.known_arms, sched.episode, sched.phase, dict(sched.alerts.flagged))


def time_unit_text(now: float, s: Any) -> str:
    """A warning when the records' times, read in ``--timestamp-unit``, put the stream clock (``now``, in s) before
    2001 but are a time of this century in another unit (a time in seconds read as ms is a valid time of January
    1970: no record is refused, and the stream clock runs 1000 times too slow); else empty.

    >>> from types import SimpleNamespace as S
    >>> print(time_unit_text(1_700_000.0, S(timestamp_unit="ms", timestamp_format=None)))
    the records' times read in ms are in 1970 (1970-01-20T16:13:20Z), and as s they are 2023-11-14T22:13:20Z: read in ms, the stream clock (episodes, timeouts, windows) runs 1,000 times too slow; give --timestamp-unit s
    >>> time_unit_text(1_700_000_000.0, S(timestamp_unit="ms", timestamp_format=None))
    ''
    """
    from streamarms.connectors.line_time import UNIT_MS, as_time, epoch_unit

    unit = getattr(s, "timestamp_unit", "ms") or "ms"
    if s.timestamp_format or unit not in UNIT_MS:
        return ""
    written = now * 1000 / UNIT_MS[unit]  # (the number the records write)
    # (a time of this century in another unit is none in this one: the clock, which only accepted times move, is
    # before 2001)
    other = epoch_unit(written)
    if other is None or other == unit:
        return ""
    day = as_time(now, "s")
    return (f"the records' times read in {unit} are in {day[:4]} ({day}), and as {other} they are "
            f"{as_time(written, other)}: read in {unit}, the stream clock (episodes, timeouts, windows) runs "
            f"{round(UNIT_MS[other] / UNIT_MS[unit]):,} times too slow; give --timestamp-unit {other}")


def stop_plot(sched: Any, path: str) -> str:
    """``--plot``: every key's evidence at the stop drawn to ``path``, as ``streamarms explain CHECKPOINT --plot``
    draws it; the line that says so (or why it was not drawn: the run's result stands either way)."""
    from .explain import episode_panel, monitor_panels, plot

    try:
        if isinstance(sched, ContinuousRunner):
            return plot(monitor_panels(sched.monitor), path, "streamarms run: continuous monitor at the stop", None)
        panel = episode_panel(sched.policy, sched.known_arms, sched.episode, sched.phase, dict(sched.alerts.flagged))
        return plot([panel], path, "streamarms run: at the stop", None)
    except (OSError, ValueError) as e:  # (the disk full, the folder gone since the start)
        return f"--plot {path}: not drawn: {e}"


def grouped_keys(sched: Any, replay: bool = False) -> dict[str, Any] | None:
    """The run's evidence that its records come grouped by key (each key's records in one block: a file sorted
    or concatenated by key), or ``None``. Episodes: at least 3 keys went silent and were forgotten, at most one in
    ten of them came back, and at least 2 episodes ended for silent keys -- a live stream's keys that pause come
    back, a grouped stream's never do, and its episodes see a few keys at a time. The continuous monitor, on a
    replay of files (``replay``; live, keys that stop are keys that stopped): in a group of at least 5 keys and
    20 records a key, the median key has had no record for a quarter of the group's records or more -- its
    threshold then waits on keys that will not come back."""
    if isinstance(sched, ContinuousRunner):
        return _grouped_monitor(sched) if replay else None
    keys = sched.keys
    silent = sum(1 for e in sched.history if str(e.get("reason", "")).startswith("silent keys"))
    if keys.left < 3 or keys.returned * 10 > keys.left or silent < 2:
        return None
    return {"keys_left": keys.left, "keys_returned": keys.returned, "silent_episodes": silent,
            "episodes": len(sched.history)}


def _grouped_monitor(sched: ContinuousRunner) -> dict[str, Any] | None:
    for name, g in sorted(sched.monitor.groups.items()):
        n = g.n
        if n < 5 or g.records < 20 * n:
            continue
        silences = sorted(g.records - seen for seen in g.last_seen.values())
        if silences[n // 2] * 4 >= g.records:
            return {"group": name, "keys": n, "median_silence": silences[n // 2], "records": g.records}
    return None


def grouped_keys_text(g: dict[str, Any], s: RunSettings, clock: EventClock | None) -> str:
    """What :func:`grouped_keys` found, and the command that interleaves the records (by their time when they
    carry one, else shuffled; a table keeps its header line first).

    >>> from streamarms.cli.settings import RunSettings
    >>> g = {"keys_left": 25, "keys_returned": 0, "silent_episodes": 8, "episodes": 8}
    >>> print(grouped_keys_text(g, RunSettings(rewards_file=["w.csv"], rewards_format="csv"), None))
    the records come grouped by key: 25 keys went silent and none came back (8 of 8 episodes ended for silent keys), as when a file is sorted or concatenated by key; an episode compares keys whose records it sees side by side, so it saw a few at a time and could decide little; interleave the records first, e.g. shuffled: (head -n 1 w.csv; tail -n +2 w.csv | shuf) > w.shuffled.csv
    """
    if "group" in g:  # the continuous monitor's
        out = (f"the records come grouped by key: half of the {g['keys']:,} keys of group {g['group']!r} have had no "
               f"record for {g['median_silence']:,} of its {g['records']:,} records or more, as when a file is sorted or "
               "concatenated by key; a threshold compares keys whose records it sees side by side, and it waits for "
               "keys that will not come back; ")
    else:
        back = "none" if not g["keys_returned"] else f"only {g['keys_returned']:,}"
        out = (f"the records come grouped by key: {g['keys_left']:,} keys went silent and {back} came back "
               f"({g['silent_episodes']} of {g['episodes']} episodes ended for silent keys), as when a file is sorted "
               "or concatenated by key; an episode compares keys whose records it sees side by side, so it saw a few "
               "at a time and could decide little; ")
    if not s.rewards_file:
        return out + "produce the records interleaved (in the order they happened)"
    path = s.rewards_file[0]
    stem, dot, ext = path.rpartition(".") if "." in path.rsplit("/", 1)[-1] else (path, "", "")
    f, shuffled, by_time = shlex.quote(path), shlex.quote(f"{stem}.shuffled{dot}{ext}"), shlex.quote(f"{stem}.by-time{dot}{ext}")
    timed = clock is not None and clock.now > 0.0
    if s.rewards_format in ("csv", "tsv"):
        return out + ("interleave the records first: sort the rows by their time, the header line kept first"
                      if timed else f"interleave the records first, e.g. shuffled: (head -n 1 {f}; tail -n +2 {f} | shuf) > {shuffled}")
    if s.rewards_format == "jsonl" and timed:
        return out + (f"interleave the records first, e.g. in time order: jq -c -s "
                      f"{shlex.quote(f'sort_by(.{s.timestamp_field})[]')} {f} > {by_time}")
    if timed:
        return out + "interleave the records first: sort the lines by their time"
    return out + f"interleave the records first, e.g. shuffled: shuf {f} > {shuffled}"


def key_field_hint(keys: int, records: int, invalid: dict[str, int], key_field: str | None,
                   known: Sequence[str] | None = None) -> str:
    """One line when nearly every record had a key of its own (a request id picked as the key): no key then has
    the records a rate needs, and the run's other lines (thousands undecided, ``too_many_arms``) do not say why.
    ``known``: the keys (a sample is read); when they are paths with ids, which ``--key-ids`` folds into a tenth
    as many keys or fewer, the line names that flag instead.

    >>> known = [f"/api/users/{i}/orders" for i in range(5_000)] + [f"/api/items/{i}" for i in range(5_000)]
    >>> print(key_field_hint(10_000, 50_000, {"too_many_arms": 40_000}, "path", known))
    10,000 keys in 10,000 records, and they are paths with ids: --key-ids reads /api/users/0/orders as /api/users/:id/orders (2 keys in the first 10,000 in place of 10,000)

    >>> print(key_field_hint(10_000, 50_000, {"too_many_arms": 40_000}, "id"))
    10,000 keys in 10,000 records: nearly every record has a key of its own (--key-field id), so no key has the records a rate needs; key the records by what many of them share (a host, an endpoint, a user)
    >>> key_field_hint(20, 50_000, {}, None)
    ''
    """
    seen = records - invalid.get("too_many_arms", 0)
    if keys < 1_000:
        return ""
    fold = KeyRule.ids_fold(known) if known else None
    if fold is not None:
        first, sampled, folded = fold
        flag = "--key-ids" if key_field else "--key-field arm --key-ids"
        return (f"{keys:,} keys in {seen:,} records, and they are paths with ids: {flag} reads {first} as "
                f"{KeyRule(ids=True).apply(first)} ({folded:,} keys in the first {sampled:,} in place of {sampled:,})")
    if keys * 2 < seen:
        return ""
    return (f"{keys:,} keys in {seen:,} records: nearly every record has a key of its own "
            f"(--key-field {key_field or 'not given: the arm or key field'}), so no key has the records a rate "
            "needs; key the records by what many of them share (a host, an endpoint, a user)")
