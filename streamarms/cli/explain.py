"""``streamarms explain PATH [KEY]`` (or ``streamarms explain [KEY] --checkpoint PATH``): a key's current
evidence, read from a checkpoint of ``streamarms run`` (the continuous mode's running daemon also answers on
``/explain?key=KEY`` next to ``/metrics``); ``--table``: every key's, as a table.

With ``KEY``: the key's evidence as JSON -- its state, its mean estimate and interval, the samples behind
it, the threshold's estimate and interval, the margin (the gap between the two intervals in units of the
sum of their half-widths: positive when they are disjoint, i.e. when the key is classified); the continuous
mode adds its standing flag, its group and the samples since its last restart, an episode mode the episode
and the policy (a key seen after the episode started is ``"not in an episode"``: it joins the next). Without
``KEY``: the continuous mode's every group's threshold band and flagged keys; an episode mode's outliers
(with their evidence), normal and undecided counts, the threshold, and the keys waiting for the next
episode. ``--table`` prints every key's evidence as a text table instead (:mod:`.explain_table`; ``--top N``
the first N rows); ``--plot FILE.png`` draws it (:mod:`.explain_plot`: each key's interval against the threshold's
band). ``--checkpoint kafka:TOPIC`` reads the compacted topic (``--bootstrap-servers``, ``--group-id`` as
for ``run``), ``--checkpoint dir:PATH`` the incremental directory. Exit codes: 0 found, 1 unknown key, 2 no
usable checkpoint.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from typing import Any

from ..checkpoint import CheckpointError, CheckpointStore, FileCheckpointStore, check_blocks, checkpoint_key
from ..errors import ConfigError
from ..monitor import ContinuousMonitor
from ..monitor.monitor import waiting_for
from ..policies.snapshot_fields import MALFORMED
from ..runtime.evidence import episode_evidence, episode_summary, finite_pair, key_evidence
from .explain_plot import TOP, Panel, draw, plot_problem
from .explain_table import interval_text, table

__all__ = ["add_explain_parser", "explain_main", "summary"]


def add_explain_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("explain", help="a key's current evidence, from a checkpoint of streamarms run",
                              description=__doc__.split("\n\n")[0],
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("key", nargs="*", metavar="KEY", help="the stream key (none: a summary -- the continuous mode's groups and flagged keys, an episode's outliers and counts); `explain CHECKPOINT [KEY]` also reads the checkpoint given first")
    p.add_argument("--checkpoint", metavar="PATH|dir:PATH|kafka:TOPIC",
                   help="the checkpoint `run` writes")
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT[,..]", help="with --checkpoint kafka:TOPIC")
    p.add_argument("--group-id", default="streamarms", metavar="ID", help="the run's consumer group (its key)")
    p.add_argument("--table", action="store_true",
                   help="every key's evidence as a text table (outliers first, then undecided, then normal keys, "
                        "each by estimate), the threshold above it; JSON without it")
    p.add_argument("--plot", metavar="FILE", help="draw every key's estimate and interval against the threshold's "
                   "band to FILE (.png, .svg or .pdf; outliers red, undecided orange, normal grey; a panel a group "
                   "in the continuous mode); needs matplotlib (pip install 'streamarms[plot]')")
    p.add_argument("--top", type=int, metavar="N", help="with --table: the first N keys only; with --plot: the "
                   f"first N keys of each panel (default {TOP})")
    p.set_defaults(handler=explain_main)
    return p


def summary(mon: ContinuousMonitor) -> dict[str, Any]:
    """Every group's threshold band and its flagged keys (strict JSON).

    >>> mon = ContinuousMonitor(); _ = mon.update("a", 1.0, group="web")
    >>> summary(mon)["groups"][0]["name"], summary(mon)["groups"][0]["threshold_interval"]
    ('web', [None, None])
    """
    groups = []
    for name, g in sorted(mon.groups.items()):
        lo, hi = g.interval()
        est = g.estimate()
        flagged = sorted(k for k, group, _, is_flagged in mon.classes() if group == name and is_flagged)
        groups.append({"name": name, "keys": g.n, "threshold": est if est == est and abs(est) != float("inf") else None,
                       "threshold_interval": [lo if abs(lo) != float("inf") else None,
                                              hi if abs(hi) != float("inf") else None],
                       "epoch_since": g.since, "flagged": [mon.evidence(k) for k in flagged]})
        if abs(lo) == float("inf") or abs(hi) == float("inf"):  # no band: whom the threshold waits for
            groups[-1]["threshold_waiting_for"] = waiting_for(g)
    return {"records": mon.records, "keys": len(mon.keys), "counts": dict(mon.counts), "groups": groups}


def monitor_table(mon: ContinuousMonitor, top: int | None = None) -> str:
    """``--table`` of a continuous checkpoint: each group's threshold, then every key."""
    head = [f"group {g['name']}: {g['keys']:,} keys, threshold "
            f"{'-' if g['threshold'] is None else format(g['threshold'], '.4g')} {interval_text(g['threshold_interval'])}"
            for g in summary(mon)["groups"]]
    return table((mon.evidence(k) for k in mon.keys), head, top)


def episode_panel(policy: Any, known: list[str], episode: int, phase: str, flagged: dict[str, int]) -> Panel:
    """An episode checkpoint's keys and threshold(s): what ``--table`` prints and ``--plot`` draws."""
    if policy is None:
        return Panel(f"no episode yet ({phase}): {len(known):,} keys wait for the first",
                     [{"key": k, "state": "not in an episode"} for k in known])
    d = policy.decision()
    outliers, normals = set(d.outliers), set(d.normals)
    rows = [dict(episode_evidence(policy, k, episode, d, "outlier" if k in outliers else
                                  "normal" if k in normals else "undecided"), flagged=k in flagged)
            for k in policy.arms]
    rows += [{"key": k, "state": "not in an episode"} for k in known if k not in policy.index]
    th = "-" if d.threshold is None else format(d.threshold, ".4g")
    title = (f"episode {episode} ({'finished' if d.done else phase}), policy {policy.name}, "
             f"{d.pulls:,} samples; threshold {th} {interval_text(finite_pair(d.threshold_interval))}")
    thresholds = [(d.threshold, _ends(d.threshold_interval))]
    extra = d.extra if isinstance(d.extra, dict) else {}
    if extra.get("lower_threshold_interval") is not None:
        thresholds.append((extra.get("lower_threshold"), _ends(extra["lower_threshold_interval"])))
    return Panel(title, rows, thresholds)


def _ends(iv: Any) -> tuple[float | None, float | None]:
    """An interval's finite ends (``None`` for an open one)."""
    pair = finite_pair(iv) or (None, None)
    return pair[0], pair[1]


def episode_table(policy: Any, known: list[str], episode: int, phase: str, flagged: dict[str, int],
                  top: int | None = None) -> str:
    """``--table`` of an episode checkpoint: the episode and its threshold, then every key."""
    panel = episode_panel(policy, known, episode, phase, flagged)
    return table(panel.rows, [panel.title], top)


def monitor_panels(mon: ContinuousMonitor) -> list[Panel]:
    """A continuous checkpoint's groups, each with its keys and threshold band (``--plot``)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for k in mon.keys:
        ev = mon.evidence(k)
        rows.setdefault(str(ev.get("group")), []).append(ev)
    return [Panel(f"group {g['name']}: {g['keys']:,} keys, {len(g['flagged']):,} flagged; threshold "
                  f"{'-' if g['threshold'] is None else format(g['threshold'], '.4g')} "
                  f"{interval_text(g['threshold_interval'])}", rows.get(g["name"], []),
                  [(g["threshold"], _ends(g["threshold_interval"]))]) for g in summary(mon)["groups"]]


def plot(panels: list[Panel], path: str, title: str, top: int | None, most: int = 6) -> str:
    """``--plot``: draw ``panels`` (the ``most`` with the most outliers, then keys) to ``path``; what was drawn."""
    chosen = sorted(panels, key=lambda p: (-sum(r.get("state") == "outlier" for r in p.rows), -len(p.rows)))[:most]
    shown = [p for p in panels if any(p is c for c in chosen)]  # (in their order; by identity, not by value)
    if len(panels) > len(shown):
        title += f" ({len(shown)} of {len(panels):,} groups: those with the most outliers)"
    drawn = draw(shown, path, title, top or TOP)
    return f"wrote {path}: {drawn:,} keys of {sum(len(p.rows) for p in panels):,}"


def _store(opts: argparse.Namespace) -> CheckpointStore:
    secret = checkpoint_key()
    spec = opts.checkpoint
    if spec.startswith("kafka:"):
        if not opts.bootstrap_servers:
            raise CheckpointError("--checkpoint kafka:TOPIC needs --bootstrap-servers")
        from streamarms.connectors.kafka import BrokerUnreachable, client_config, probe_cluster
        from streamarms.connectors.kafka_checkpoint import KafkaCheckpointStore
        try:  # (one line within seconds, as run says it, not kafka-python's traceback after its own timeout)
            config = client_config(opts.bootstrap_servers)
            probe_cluster(config)
        except (BrokerUnreachable, ValueError) as e:
            raise CheckpointError(f"--bootstrap-servers {opts.bootstrap_servers}: {e}") from None
        return KafkaCheckpointStore(config, spec[len("kafka:"):], key=opts.group_id, create=False, secret=secret)
    if spec.startswith("dir:"):  # (read only: a load takes no lock and writes nothing)
        from ..chunked_checkpoint import ChunkedCheckpointStore
        return ChunkedCheckpointStore(spec[len("dir:"):], fsync=False, secret=secret)
    if os.path.isdir(spec):
        raise CheckpointError(f"--checkpoint {spec} is a directory: a directory of incremental checkpoints is "
                              f"dir:{spec}")
    return FileCheckpointStore(spec, fsync=False, secret=secret)


def _explain_episode(opts: argparse.Namespace, sched: dict[str, Any]) -> int:
    """An episode mode's checkpoint: the running (or last) episode's policy, restored from it."""
    from .. import registry  # noqa: F401  (loads every policy class: a checkpoint names one, never imports it)
    from ..runtime.scheduler import restore_policy

    policy = restore_policy(sched.get("policy"))
    known, episode = list(sched.get("arms") or {}), int(sched.get("episode") or 0)
    flagged = {str(k): int(v) for k, v in ((sched.get("alerts") or {}).get("flagged") or {}).items()}
    if opts.table:
        print(episode_table(policy, known, episode, str(sched.get("phase")), flagged, opts.top))
        return 0
    if opts.plot:
        print(plot([episode_panel(policy, known, episode, str(sched.get("phase")), flagged)], opts.plot,
                   f"streamarms: {opts.checkpoint}", opts.top))
        return 0
    if opts.key is None:
        print(json.dumps(episode_summary(policy, known, episode, str(sched.get("phase")), flagged=flagged),
                         indent=1, allow_nan=False))
        return 0
    try:
        ev = key_evidence(policy, known, opts.key, episode, flagged)
    except KeyError:
        print(f"streamarms explain: unknown key {opts.key!r} ({len(known)} keys in the checkpoint)", file=sys.stderr)
        return 1
    print(json.dumps(ev, indent=1, allow_nan=False))
    return 0


def _looks_like_checkpoint(arg: str) -> bool:
    return arg.startswith(("kafka:", "dir:")) or os.path.exists(arg)


def _named_like_a_file(arg: str) -> bool:
    """A missing path, not a key: a checkpoint's suffix, or a directory part that exists (a key may hold a ``/``).

    >>> _named_like_a_file("nofile.ckpt"), _named_like_a_file("/tmp/x"), _named_like_a_file("host-7")
    (True, True, False)
    """
    return arg.endswith(_CHECKPOINT_SUFFIXES) or (os.sep in arg and os.path.isdir(os.path.dirname(arg)))


#: the names a checkpoint file is usually given
_CHECKPOINT_SUFFIXES = (".ckpt", ".checkpoint", ".json")


def _near_checkpoint(arg: str) -> str | None:
    """A checkpoint file whose name is close to ``arg``'s in the folder it names (a typo: ``clicks.ckp`` for
    ``clicks.ckpt``), or ``None``."""
    folder = os.path.dirname(arg)
    try:
        names = [n for n in os.listdir(folder or ".") if n.endswith(_CHECKPOINT_SUFFIXES)]
    except OSError:
        return None
    near = difflib.get_close_matches(os.path.basename(arg), names, n=1, cutoff=0.8)
    return os.path.join(folder, near[0]) if near else None


def _positionals(opts: argparse.Namespace) -> str | None:
    """``opts.checkpoint`` and ``opts.key`` from ``explain [CHECKPOINT] [KEY]`` or ``explain [KEY]
    --checkpoint CHECKPOINT``; an error message when they cannot be told apart."""
    args: list[str] = opts.key
    if opts.checkpoint is None and args and (len(args) == 2 or _looks_like_checkpoint(args[0])):
        opts.checkpoint, args = args[0], args[1:]
    if len(args) > 1:
        return (f"one key at a time (given: {' '.join(args)})" if opts.checkpoint is not None else
                f"{args[0]} is not a checkpoint (no such file): streamarms explain CHECKPOINT [KEY]")
    if opts.top is not None and not (opts.table or opts.plot):
        return "--top N shows the first N rows of --table (the first N keys of --plot): add --table or --plot"
    if opts.top is not None and opts.top < 1:
        return f"--top N shows the first N rows of --table (the first N keys of --plot): N >= 1, got {opts.top}"
    if opts.table and opts.plot:
        return "--table prints every key and --plot draws them: give one"
    if opts.plot and (problem := plot_problem(opts.plot)) is not None:
        return problem
    if opts.plot:  # (before the checkpoint is read, as run checks it: a drawing it could not save was a traceback)
        from .run_checks import check_writable_file

        try:
            check_writable_file("--plot", opts.plot)
        except ConfigError as e:
            return str(e)
    near = _near_checkpoint(args[0]) if opts.checkpoint is None and args else None
    if opts.checkpoint is None and args and (near or _named_like_a_file(args[0])):
        return (f"no checkpoint file {args[0]} (no such file" + (f"; did you mean {near}?)" if near else ")")
                + ": give the path run's --checkpoint wrote, streamarms explain CHECKPOINT [KEY]")
    if (opts.table or opts.plot) and args:
        flag = "--table" if opts.table else "--plot"
        return f"{flag} shows every key: drop the key {args[0]!r}, or drop {flag} for its evidence as JSON"
    if opts.checkpoint is None:
        return ("the checkpoint `run` wrote is needed: streamarms explain CHECKPOINT [KEY], or "
                f"streamarms explain {args[0] if args else '[KEY]'} --checkpoint PATH|dir:PATH|kafka:TOPIC (a run "
                "of files or of the demo writes one only when given --checkpoint PATH; with Kafka it is "
                "kafka:streamarms-checkpoints unless --checkpoint said otherwise)")
    opts.key = args[0] if args else None
    return None


def explain_main(opts: argparse.Namespace) -> int:
    if (problem := _positionals(opts)) is not None:
        print(f"streamarms explain: error: {problem}", file=sys.stderr)
        return 2
    try:
        store = _store(opts)
        doc = store.load_streamed()  # (as a restore reads it: its memory, not the whole document's)
        if doc is None:
            raise CheckpointError(f"no checkpoint in {store.describe()}")
        check_blocks(doc, store.describe(), required=("scheduler",))
        sched = doc.get("scheduler", {})
        if sched.get("mode") in ("passive", "active"):
            try:
                return _explain_episode(opts, sched)
            except (CheckpointError, ValueError, *MALFORMED, OSError):
                raise
            except Exception as e:  # a policy that cannot be read back outside its daemon: say so, no traceback
                raise CheckpointError(f"cannot read the episode's policy from {store.describe()}: "
                                      f"{type(e).__name__}: {e}") from e
        if sched.get("mode") != "continuous":
            raise CheckpointError(f"the checkpoint in {store.describe()} is of the {sched.get('mode')!r} mode, "
                                  "which explain does not know")
        mon = ContinuousMonitor.restore(sched["monitor"])
    except BrokenPipeError:  # (`explain ... | head`: main's rule, not a checkpoint error)
        raise
    except (CheckpointError, ValueError, *MALFORMED, OSError) as e:
        # (a document with a valid hash and another shape: not ours -- say which part, never a traceback)
        shown = e if isinstance(e, (CheckpointError, ValueError, OSError)) else \
            f"the checkpoint is malformed: {type(e).__name__}: {e}"
        print(f"streamarms explain: error: {shown}", file=sys.stderr)
        return 2
    if opts.table:
        print(monitor_table(mon, opts.top))
        return 0
    if opts.plot:
        print(plot(monitor_panels(mon), opts.plot, f"streamarms: {opts.checkpoint}, continuous monitor", opts.top))
        return 0
    if opts.key is None:
        print(json.dumps(summary(mon), indent=1, allow_nan=False))
        return 0
    try:
        ev = mon.evidence(opts.key)
    except KeyError:
        print(f"streamarms explain: unknown key {opts.key!r} ({len(mon.keys)} keys in the checkpoint)", file=sys.stderr)
        return 1
    print(json.dumps(ev, indent=1, allow_nan=False))
    return 0
