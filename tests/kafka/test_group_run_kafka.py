"""``streamarms run --group-threshold`` against the real broker (Tansu), each member a real process:
three members of one consumer group on a 6-partition topic find the same outliers as one member
alone (and as the truth), each outlier alerted exactly once across the group, every member ends the
episode, and the members merged the group's stats (staleness exported).

A member killed mid-episode: the others take its partitions over. A member that starts fresh (no
checkpoint) while the group runs an episode joins that episode, taking its partitions over from the
stats topic; one that starts after the group's episode ended numbers its own episode after it.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import threading
import time

import pytest
from test_runtime_kafka import FAST_GROUP, KEYS, MEANS, OUTLIERS, ROOT, T0, cli, produce, read_topic

from streamarms.connectors.kafka import ensure_topics
from streamarms.group_chunks import split_chunk_key

pytestmark = [pytest.mark.kafka, pytest.mark.drill]

PER_KEY = 6_000


def _records(seed=13, per_key=PER_KEY):
    rng = random.Random(seed)
    order = [a for a in range(len(KEYS)) for _ in range(per_key)]
    rng.shuffle(order)
    return [(KEYS[a], b'{"reward": %d}' % (rng.random() < MEANS[a]), T0 + n) for n, a in enumerate(order)]


def _args(broker, topic, tag, member, tmp_path, extra=()):
    return [*extra, "--bootstrap-servers", broker.bootstrap, "--rewards-topic", topic, "--alerts-topic", f"alerts-{tag}",
            "--group-id", f"g-{tag}", "--group-threshold", "--group-member", member, "--group-interval", "0.5",
            "--policy", "cs", "--k", "2", "--delta", "0.1", "--max-episodes", "1", "--checkpoint", "none",
            "--discovery-records", "2000", "--summary-json", str(tmp_path / f"{tag}-{member}.json"),
            "--create-topics", *FAST_GROUP]


def _wait_assigned(logs, members, parts, timeout=90):
    """Until every member's last assignment holds parts / members partitions (the group settled)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = []
        for f in logs:
            found = re.findall(r"assigned (\d+) partitions", f.read_text())
            last.append(int(found[-1]) if found else -1)
        if all(n == parts // members for n in last):
            return True
        time.sleep(0.5)
    return False


def _run_group(broker, tag, members, tmp_path, recs, extra=()):
    topic = f"rewards-{tag}"
    ensure_topics({"bootstrap_servers": [broker.bootstrap]}, {topic: 6})
    logs = [tmp_path / f"{tag}-m{i}.log" for i in range(members)]
    procs = [subprocess.Popen(cli(_args(broker, topic, tag, f"m{i}", tmp_path, extra)), cwd=ROOT,
                              stdout=subprocess.DEVNULL,
                              stderr=open(logs[i], "wb")) for i in range(members)]
    try:
        assert _wait_assigned(logs, members, 6), [f.read_text()[-2000:] for f in logs]
        produce(broker.bootstrap, topic, recs, partitions=6)
        for p in procs:
            p.wait(timeout=150)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, f in zip(procs, logs):
        assert p.returncode == 0, f.read_text()[-3000:]
    summaries = [json.loads((tmp_path / f"{tag}-m{i}.json").read_text()) for i in range(members)]
    alerts = [json.loads(r.value) for r in read_topic(broker.bootstrap, f"alerts-{tag}")]
    return summaries, alerts, [f.read_text() for f in logs]


def test_three_members_find_the_outliers_of_one_member(kafka_broker, tmp_path):
    recs = _records()
    one, one_alerts, _ = _run_group(kafka_broker, "grp1", 1, tmp_path, recs)
    three, three_alerts, logs = _run_group(kafka_broker, "grp3", 3, tmp_path, recs)
    assert set(one[0]["episodes"][0]["outliers"]) == OUTLIERS
    found = [a for s in three for a in s["episodes"][0]["outliers"]]
    assert sorted(found) == sorted(OUTLIERS)  # each outlier found by exactly one member (its owner)
    assert sorted(a["arm"] for a in three_alerts if a["kind"] == "outlier") == sorted(OUTLIERS)
    assert sorted(a["arm"] for a in one_alerts if a["kind"] == "outlier") == sorted(OUTLIERS)
    # the members split the keys and all ended the group's episode as done
    assert sum(s["episodes"][0]["arms"] for s in three) == len(KEYS)
    assert all(s["episodes"][0]["done"] and not s["episodes"][0]["undecided"] for s in three)
    assert all("group episode 1: 20 keys over 6 partitions" in log for log in logs)


def test_three_members_with_chunked_stats_values_find_the_outliers_of_one_member(kafka_broker, tmp_path):
    """As above with ``--group-chunk-keys 1``: every partition's value of several keys goes in one chunk a
    key (the stats topic holds a chunk key per key of such partitions), and the group finds the
    outliers of one member (the truth, test above), each alerted once, all members ending the episode."""
    three, alerts, logs = _run_group(kafka_broker, "grpchunk", 3, tmp_path, _records(),
                                     extra=("--group-chunk-keys", "1"))
    found = [a for s in three for a in s["episodes"][0]["outliers"]]
    assert sorted(found) == sorted(OUTLIERS)
    assert sorted(a["arm"] for a in alerts if a["kind"] == "outlier") == sorted(OUTLIERS)
    assert sum(s["episodes"][0]["arms"] for s in three) == len(KEYS)
    assert all(s["episodes"][0]["done"] and not s["episodes"][0]["undecided"] for s in three)
    stats = read_topic(kafka_broker.bootstrap, "g-grpchunk-stats")
    last = {r.key.decode(): r.value for r in stats}  # what compaction keeps
    heads = [json.loads(v) for k, v in last.items() if v is not None and split_chunk_key(k) is None]
    chunks = {k for k, v in last.items() if v is not None and split_chunk_key(k)}
    keys = {h["partition"]: h["keys"] for h in heads}  # per partition (a partition of one key: one record)
    assert sum(keys.values()) == len(KEYS) and len(chunks) == sum(n for n in keys.values() if n > 1) > 0
    assert all(isinstance(h.get("chunks"), list) for h in heads if h.get("keys", 0) > 1)


def test_kill_9_one_member_mid_episode_the_others_take_over(kafka_broker, tmp_path):
    """Three members; once the group's episode runs, one is killed (SIGKILL). The two others take its
    partitions over from the stats topic (key state + position) after the session timeout, finish the
    episode with the outliers of one member, and no outlier is alerted twice (not even by alert_id)."""
    recs = _records(seed=21)
    tag = "grpkill"
    topic = f"rewards-{tag}"
    ensure_topics({"bootstrap_servers": [kafka_broker.bootstrap]}, {topic: 6})
    logs = [tmp_path / f"{tag}-m{i}.log" for i in range(3)]
    procs = [subprocess.Popen(cli(_args(kafka_broker, topic, tag, f"m{i}", tmp_path)), cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=open(logs[i], "wb")) for i in range(3)]
    try:
        assert _wait_assigned(logs, 3, 6), [f.read_text()[-2000:] for f in logs]
        # paced (about 6k records/s): the episode lasts long enough to kill a member in the middle of it
        producer = threading.Thread(target=lambda: [(produce(kafka_broker.bootstrap, topic, recs[i:i + 3000],
                                                             partitions=6), time.sleep(0.5))
                                                    for i in range(0, len(recs), 3000)], daemon=True)
        producer.start()
        deadline = time.monotonic() + 60
        while "group episode 1:" not in logs[2].read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)
        assert procs[2].poll() is None, "the member finished before it could be killed"
        procs[2].kill()
        procs[2].wait()
        for p in procs[:2]:
            p.wait(timeout=150)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, f in zip(procs[:2], logs):
        assert p.returncode == 0, f.read_text()[-3000:]
    text = [f.read_text() for f in logs[:2]]
    assert any("taking over rewards-grpkill" in t for t in text), text[0][-3000:]
    summaries = [json.loads((tmp_path / f"{tag}-m{i}.json").read_text()) for i in range(2)]
    alerts = [json.loads(r.value) for r in read_topic(kafka_broker.bootstrap, f"alerts-{tag}")]
    outlier_alerts = sorted(a["arm"] for a in alerts if a["kind"] == "outlier")
    assert outlier_alerts == sorted(OUTLIERS), alerts
    found = sorted(a for s in summaries for a in s["episodes"][0]["outliers"])
    assert len(found) == len(set(found)) and set(found) <= OUTLIERS, found
    assert all(s["episodes"][0]["done"] for s in summaries)
    # the group's decision is the stats topic's (the partitions' changelog): a partition a rebalance moved as
    # the episode ended may be in neither survivor's summary (its new owner had not joined yet), not in none
    # of the partitions' final values
    arms = _final_arms(kafka_broker, tag, topic)
    assert sorted(arms) == sorted(KEYS)
    assert {a for a, st in arms.items() if st and st.get("state") == 1} == OUTLIERS, arms
    assert all(st and st.get("state") for st in arms.values())  # every key decided


def _final_arms(broker, tag, topic):
    """Every key's final state as the group's stats topic holds it (the latest value of each partition)."""
    from streamarms.connectors.group_stats import KafkaStatsReader
    reader = KafkaStatsReader({"bootstrap_servers": [broker.bootstrap]}, f"g-{tag}-stats", f"g-{tag}")
    try:
        reader.catch_up(timeout=30)
        out = {}
        for p in range(6):
            v = reader.value_of(f"{topic}:{p}")
            assert v is not None and v.get("episode") == 1, (p, v)
            out.update(v["arms"])
        return out
    finally:
        reader.close()


def _paced(bootstrap, topic, recs, chunk=3000, pause=0.5, hold=None):
    """Produce in chunks (about 6k records/s): an episode long enough to act in the middle of it. ``hold``: called
    before each chunk, may wait."""

    def run():
        for i in range(0, len(recs), chunk):
            if hold is not None:
                hold()
            produce(bootstrap, topic, recs[i:i + chunk], partitions=6)
            time.sleep(pause)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _wait_for(path, text, timeout=60):
    deadline = time.monotonic() + timeout
    while text not in path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return text in path.read_text()


def test_a_member_that_starts_fresh_mid_episode_joins_it(kafka_broker, tmp_path):
    """Two members run episode 1; a third starts with no checkpoint in the middle of it: it joins episode 1
    (never an episode of its own), taking its partitions over from the stats topic at the positions the
    values name; the group's outliers are the truth (one member's, test above), each alerted once, and the
    three hold the 20 keys between them. (A member that starts after the group's episode: its next episode
    is the group's next -- tests/test_group_member.py.)"""
    recs = _records(seed=31)
    tag = "grpjoin"
    topic = f"rewards-{tag}"
    ensure_topics({"bootstrap_servers": [kafka_broker.bootstrap]}, {topic: 6})
    logs = [tmp_path / f"{tag}-m{i}.log" for i in range(3)]

    def start(i):
        return subprocess.Popen(cli(_args(kafka_broker, topic, tag, f"m{i}", tmp_path)), cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=open(logs[i], "wb"))

    procs = [start(0), start(1)]
    try:
        assert _wait_assigned(logs[:2], 2, 6), [f.read_text()[-2000:] for f in logs[:2]]
        # once the group's episode started, the records wait until the third member joined it: with all of them
        # coming, the group sometimes decided while the member joined (its rebalance took ~5 s: 1 of 10 runs alone,
        # more in CI's long tier), and the member then rightly ran no episode of its own
        joined_late = threading.Event()
        _paced(kafka_broker.bootstrap, topic, recs,
               hold=lambda: "group episode 1:" in logs[0].read_text() and joined_late.wait(120))
        assert _wait_for(logs[0], "group episode 1:"), logs[0].read_text()[-3000:]
        time.sleep(1.0)
        assert all(p.poll() is None for p in procs), "the group finished before the third member could join"
        procs.append(start(2))
        _wait_for(logs[2], "joining group episode 1", timeout=90)
        joined_late.set()
        for p in procs:
            p.wait(timeout=150)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, f in zip(procs, logs):
        text = f.read_text()
        # Tansu may keep a member that left during a join as the group's leader: a member still in the group
        # when the others leave can then not leave cleanly (its work is done and reported)
        wedged = "episode 1 done" in text and "its coordinator seems stuck" in text.split("episode 1 done", 1)[1]
        assert p.returncode == 0 or wedged, text[-3000:]
    late = logs[2].read_text()
    joined = re.search(r"joining group episode 1 \(20 keys, deciding\): taking over (.*)", late)
    assert joined, late[-3000:]
    taken = dict(re.findall(r"(rewards-grpjoin:\d+)@\[(\d+)", joined.group(1)))
    assert taken, joined.group(0)
    # the source reads each taken-over partition from the position its value names: no record twice
    assigned = dict(re.findall(r"(rewards-grpjoin:\d+)@(\d+)", late[joined.end():].split("assigned", 1)[1].split("\n")[0]))
    assert {p: assigned[p] for p in taken} == taken, (taken, assigned)
    summaries = [json.loads((tmp_path / f"{tag}-m{i}.json").read_text()) for i in range(3)]
    first = [s["episodes"][0] for s in summaries]
    assert all(e["episode"] == 1 and e["done"] for e in first)
    assert sorted(a for e in first for a in e["outliers"]) == sorted(OUTLIERS)
    # every key is held by a member; more than 20 when one member finishes the group's episode and leaves
    # (--max-episodes 1) while another has yet to see the decision: the rebalance hands the second the
    # first's partitions, already decided, and its summary counts them too (seen once in CI: 22; members
    # finish up to ~0.4 s apart). Their alerts are not repeated: the exactly-once check below.
    assert sum(e["arms"] for e in first) >= len(KEYS)
    alerts = [json.loads(r.value) for r in read_topic(kafka_broker.bootstrap, f"alerts-{tag}")]
    assert sorted(a["arm"] for a in alerts if a["kind"] == "outlier") == sorted(OUTLIERS), alerts


def test_idle_members_and_a_late_joiner_run_the_groups_next_episode_together(kafka_broker, tmp_path):
    """Two members run episode 1 and idle; a third starts fresh after it: its first episode is the group's
    episode 2 (not a second episode 1 over the group's values). The members' own next starts differ (each
    on its own stream clock) and the late one announces first: the idle ones follow the board at once
    (``GroupMember._follow_board``; or a rebalance after the announcement joins them, ``on_assign``: under
    load both happen, and both go through ``_join``) instead of holding the group until their own clocks get
    there -- the variant that once stalled -- and the three run episode 2 on all 20 keys together."""
    tag = "grpidle"
    topic = f"rewards-{tag}"
    ensure_topics({"bootstrap_servers": [kafka_broker.bootstrap]}, {topic: 6})
    logs = [tmp_path / f"{tag}-m{i}.log" for i in range(3)]

    def start(i):
        # The idle members' own episode 2 is due 300 s of stream time after episode 1 (record timestamps 1 ms
        # apart: the first batch spans 120 s), ~180k records into the second batch, produced once the third
        # member is in the group; the late one starts it after its 2,000 discovery records, and the idle
        # ones must join it first (at 150 s, ~30k records in, they sometimes reached their own start in the
        # same 20 ms and began it on their own). The second batch is twice the first (240k
        # records): how many an episode uses varies with when the members exchange their statistics (up to
        # 90% of a 120k batch), and with 90k left after the start it sometimes ran out first (the members
        # then waited for records that never came).
        # --alert-repeat: an outlier is alerted in every episode (which member owns a key in episode 2 varies)
        return subprocess.Popen(cli([*_args(kafka_broker, topic, tag, f"m{i}", tmp_path), "--max-episodes", "2",
                                     "--episode-interval", "300", "--alert-repeat"]), cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=open(logs[i], "wb"))

    recs = _records(seed=33)
    procs = [start(0), start(1)]
    try:
        assert _wait_assigned(logs[:2], 2, 6), [f.read_text()[-2000:] for f in logs[:2]]
        produce(kafka_broker.bootstrap, topic, recs, partitions=6)
        assert all(_wait_for(f, "episode 1 done", timeout=120) for f in logs[:2]), [f.read_text()[-2000:] for f in logs[:2]]
        procs.append(start(2))
        assert _wait_for(logs[2], "group episode 1 is over: this member's next episode is 2"), logs[2].read_text()[-3000:]
        assert _wait_assigned(logs, 3, 6), [f.read_text()[-2000:] for f in logs]
        produce(kafka_broker.bootstrap, topic, [(k, v, t + len(recs)) for k, v, t in _records(seed=34, per_key=2 * PER_KEY)], partitions=6)
        for p in procs:
            p.wait(timeout=150)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, f in zip(procs, logs):
        text = f.read_text()
        wedged = "episode 2 done" in text and "its coordinator seems stuck" in text.split("episode 2 done", 1)[1]
        assert p.returncode == 0 or wedged, text[-3000:]
    summaries = [json.loads((tmp_path / f"{tag}-m{i}.json").read_text()) for i in range(3)]
    second = [s["episodes"][-1] for s in summaries]
    assert all(e["episode"] == 2 and e["done"] for e in second), second
    assert sorted(a for e in second for a in e["outliers"]) == sorted(OUTLIERS)
    assert sum(e["arms"] for e in second) == len(KEYS)
    assert all("group episode 2: 20 keys over 6 partitions" in f.read_text() for f in logs)
    # each idle member joined the group's episode 2 (a look at the board, or a rebalance that came after the
    # late one's announcement: both go through _join) instead of beginning its own on its own clock
    assert all("joining group episode 2" in f.read_text() for f in logs[:2]), [f.read_text()[-3000:] for f in logs[:2]]
    alerts = [json.loads(r.value) for r in read_topic(kafka_broker.bootstrap, f"alerts-{tag}")]
    for ep in (1, 2):
        assert sorted(a["arm"] for a in alerts if a["kind"] == "outlier" and a["episode"] == ep) == sorted(OUTLIERS), alerts
