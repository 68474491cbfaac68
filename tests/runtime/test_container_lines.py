"""``--rewards-format container``: a container runtime's log entries (Kubernetes' CRI format, Docker's json-file)
read as the applications' lines -- JSON, or by a pattern --, a line written in parts joined, the runtime's time where
the line has none, and anything else a dead letter."""

from __future__ import annotations

import json

from streamarms.connectors.container_lines import ContainerLines, entry_line
from streamarms.connectors.line_time import LineTime
from streamarms.connectors.pattern_lines import PatternLines

T = "2023-11-14T22:13:20.123456789Z"


def _docker(log: str, stream: str = "stdout") -> str:
    return json.dumps({"log": log, "stream": stream, "time": T}) + "\n"


def test_cri_and_docker_entries_are_read_as_their_json_lines_with_the_runtime_s_time_where_they_have_none():
    t = ContainerLines()
    lines = [f'{T} stdout F {{"arm": "a", "reward": 1}}\n', _docker('{"arm": "b", "reward": 0, "timestamp": 5}\n'),
             f"{T} stdout F \n", "\n", f"{T} stderr F not json\n", "plain text\n", '{"arm": "c", "reward": 1}\n']
    recs = t.records("c.log", lines, 10)
    assert [(r.offset, r.key, r.timestamp) for r in recs[:2]] == [(10, b"a", 1700000000123), (11, b"b", 5)]
    assert [(r.offset, r.key.reason) for r in recs[2:]] == [(14, "not_json"), (15, "bad_row"), (16, "bad_row")]
    assert recs[2].value == b"not json"  # (the application's line: what the dead letter keeps)
    assert "no container runtime's log entry" in recs[3].key.detail
    assert t.header is None and not t.open and entry_line(lines[1]) == '{"arm": "b", "reward": 0, "timestamp": 5}'


def test_a_line_written_in_parts_is_joined_per_stream_across_reads_and_a_part_is_no_record():
    t = ContainerLines()
    first = [f'{T} stdout P {{"arm": "a", \n', f'{T} stderr F {{"arm": "e", "reward": 0}}\n',
             _docker('{"arm": "d", ', "stderr")]
    assert [(r.offset, r.key) for r in t.records("c.log", first, 0)] == [(1, b"e")]
    rest = [f'{T} stdout P "reward"\n', f"{T} stdout F : 1}}\n", _docker('"reward": 1}\n', "stderr")]
    recs = t.records("c.log", rest, 3)
    assert [(r.offset, r.key, r.parsed) for r in recs] == [
        (4, b"a", {"arm": "a", "reward": 1}), (5, b"d", {"arm": "d", "reward": 1})]
    other = t.records("d.log", [f"{T} stdout F  \"reward\": 1}}\n"], 0)  # (another file's parts are its own)
    assert other[0].key.reason in ("not_json", "not_object")


def test_the_lines_read_by_a_pattern_and_what_whole_says_of_a_last_line():
    t = ContainerLines(LineTime("time_local"), PatternLines("combined", LineTime("time_local")))
    access = '10.0.0.7 - - [14/Nov/2023:22:13:20 +0000] "GET /api/cart HTTP/1.1" 503 12 "-" "curl/8.0"'
    recs = t.records("c.log", [f"{T} stdout F {access} rt=0.5\n", _docker("GET /health\n")], 0)
    assert recs[0].parsed["status"] == "503" and recs[0].parsed["rt"] == "0.5" and recs[0].timestamp == 1700000000000
    assert recs[1].key.reason == "bad_row" and t.open and t.header[:2] == ["remote_addr", "remote_user"]
    assert "kubernetes.pod_name" in t.header  # (a run may name the pod of a kubelet's file with a pattern too)
    assert t.whole(f"{T} stdout F {access}") and not t.whole(f"{T} stdout P {access}")
    assert not t.whole('{"log": "GET / HTTP/1.1 200\\n", "str') and not ContainerLines().whole(f'{T} stdout F {{"a": ')
    assert ContainerLines().whole(f'{T} stdout F {{"a": 1}}')
    pairs = ContainerLines(lines=PatternLines("logfmt"))  # (its fields each line's own: no header; it raised)
    assert pairs.header is None and pairs.records("c.log", [f"{T} stderr F level=error ms=3"], 0)[0].parsed == {
        "level": "error", "ms": "3"}


def test_a_kubernetes_node_s_file_names_its_pod_in_each_record_and_the_line_s_text_is_kept():
    """``/var/log/pods/NAMESPACE_POD_UID/CONTAINER/0.log``: the pod is in the path, not in the lines; each record
    gets ``kubernetes`` (Fluent Bit's names) with the line's own text kept (``1.50`` is not written again as
    ``1.5``), unless the line has a field of that name; a dead letter is the line as it came."""
    t = ContainerLines()
    path = "/var/log/pods/shop_web-5d8-x2_0c1e/app/0.log"
    long = "x" * 5000  # (a record too long to keep parsed: its value's text is what the run reads)
    recs = t.records(path, [f'{T} stdout F {{"ms": 1.50}} \n', f'{T} stdout F {{"kubernetes": 1, "a": 2}}\n',
                            f'{T} stdout F {{"m": "{long}"}}\n', f"{T} stdout F oops\n"], 0)
    pod = {"namespace_name": "shop", "pod_name": "web-5d8-x2", "container_name": "app"}
    assert recs[0].value == b'{"ms": 1.50,"kubernetes":' + json.dumps(pod, separators=(",", ":")).encode() + b"}"
    assert recs[0].parsed == {"ms": 1.5, "kubernetes": pod}
    assert recs[1].parsed == {"kubernetes": 1, "a": 2} and recs[1].value == b'{"kubernetes": 1, "a": 2}'
    assert recs[2].parsed is None and json.loads(recs[2].value)["kubernetes"] == pod
    assert recs[3].key.reason == "not_json" and recs[3].value == b"oops"
    empty = t.records(path, [f"{T} stdout F {{}}\n"], 0)[0]
    assert json.loads(empty.value) == {"kubernetes": pod}
    assert "kubernetes" not in ContainerLines().records("/var/log/app.log", [f"{T} stdout F {{}}\n"], 0)[0].parsed


def test_kubectl_logs_prefix_and_timestamps_name_the_pod_and_the_time():
    t = ContainerLines()
    recs = t.records("-", [f'[pod/web-1/app] {T} {{"a": 1}}\n', '[pod/web-2/app] {"a": 2}\n', f'{T} {{"a": 3}}\n',
                           "[pod/web-3] x\n"], 0)
    assert [(r.parsed.get("kubernetes"), r.timestamp) for r in recs[:3]] == [
        ({"pod_name": "web-1", "container_name": "app"}, 1700000000123),
        ({"pod_name": "web-2", "container_name": "app"}, None), (None, 1700000000123)]
    assert recs[3].key.reason == "bad_row"
