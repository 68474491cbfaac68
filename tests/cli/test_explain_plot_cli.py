"""``streamarms explain CHECKPOINT --plot FILE.png``: every key's interval against the threshold's band as a
picture (both modes, ``--top N``); what is drawn is what ``--table`` prints, in its order; a two-sided policy's
band is drawn twice; a usage error, a missing matplotlib or an unwritable file is one clear line (exit 2)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from test_cli_usability import six_key_replay

from streamarms.cli import explain, main
from streamarms.cli.explain_plot import Panel, draw

PNG = b"\x89PNG\r\n\x1a\n"


def _episode_ck(tmp_path, capsys, *extra):
    p, ck = six_key_replay(tmp_path, 3000), tmp_path / "ck.json"
    assert main(["run", "--rewards-file", str(p), "--policy", "cs", "--checkpoint", str(ck),
                 "--discovery-records", "50", *extra]) == 0
    capsys.readouterr()
    return ck


def test_an_episode_checkpoint_drawn_as_its_table_orders_it(tmp_path, capsys, monkeypatch):
    ck, png = _episode_ck(tmp_path, capsys), tmp_path / "keys.png"
    drawn: list[Panel] = []
    monkeypatch.setattr(explain, "draw", lambda panels, *a: drawn.extend(panels) or draw(panels, *a))
    assert main(["explain", str(ck), "--plot", str(png)]) == 0
    assert capsys.readouterr().out == f"wrote {png}: 6 keys of 6\n"
    assert png.read_bytes().startswith(PNG) and png.stat().st_size > 10_000
    [panel] = drawn
    assert [r["key"] for r in panel.shown(40)][0] == "k5"  # (the outlier first, as in --table)
    assert panel.title.startswith("episode 1 (") and "policy cs" in panel.title
    ev = json.loads((main(["explain", str(ck), "k5"]), capsys.readouterr().out)[1])
    assert panel.shown(40)[0]["state"] == ev["state"] and panel.shown(40)[0]["interval"] == ev["interval"]
    assert panel.thresholds == [(ev["threshold"], tuple(ev["threshold_interval"]))]
    assert main(["explain", str(ck), "--plot", str(tmp_path / "two.svg"), "--top", "2"]) == 0
    assert capsys.readouterr().out.endswith(": 2 keys of 6\n") and (tmp_path / "two.svg").read_text().startswith("<?xml")


def test_a_two_sided_episode_draws_both_bands(tmp_path, capsys, monkeypatch):
    ck = _episode_ck(tmp_path, capsys, "--two-sided")
    drawn: list[Panel] = []
    monkeypatch.setattr(explain, "draw", lambda panels, *a: drawn.extend(panels) or 0)
    assert main(["explain", str(ck), "--plot", str(tmp_path / "k.png")]) == 0
    [panel] = drawn
    assert len(panel.thresholds) == 2 and panel.thresholds[1][0] < panel.thresholds[0][0]


def test_a_continuous_checkpoint_draws_a_panel_a_group(tmp_path, capsys):
    p, ck, png = six_key_replay(tmp_path, 20_000), tmp_path / "ck.json", tmp_path / "groups.png"
    assert main(["run", "--rewards-file", str(p), "--forever", "--k", "1.5", "--checkpoint", str(ck)]) == 0
    capsys.readouterr()
    assert main(["explain", str(ck), "--plot", str(png)]) == 0
    assert capsys.readouterr().out == f"wrote {png}: 6 keys of 6\n" and png.read_bytes().startswith(PNG)
    from streamarms.checkpoint import FileCheckpointStore
    from streamarms.monitor import ContinuousMonitor

    mon = ContinuousMonitor.restore(FileCheckpointStore(str(ck)).load()["scheduler"]["monitor"])
    [panel] = explain.monitor_panels(mon)
    assert panel.title.startswith("group default: 6 keys, 1 flagged; threshold ")
    assert panel.shown(40)[0]["key"] == "k5" and panel.shown(40)[0]["flagged"]
    # (a drawing it cannot save: said before the checkpoint is read -- it was a traceback for a continuous one)
    assert main(["explain", str(ck), "--plot", "/nonexistent/dir/k.png"]) == 2
    assert "the directory /nonexistent/dir does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("args, needle", [
    (["--plot", "P.png", "--table"], "--table prints every key and --plot draws them: give one"),
    (["k5", "--plot", "P.png"], "--plot shows every key: drop the key 'k5'"),
    (["--top", "3"], "--top N shows the first N rows of --table (the first N keys of --plot): add --table or --plot"),
    (["--top", "0", "--table"], "N >= 1, got 0"),
    (["--plot", "/nonexistent/dir/k.png"], "--plot /nonexistent/dir/k.png: the directory /nonexistent/dir does not exist"),
    (["--plot", "P.xyz"], ".xyz is no file type matplotlib writes: name the file .png, .svg or .pdf")])
def test_what_cannot_be_drawn_says_why(tmp_path, capsys, args, needle):
    ck = _episode_ck(tmp_path, capsys)
    args = [str(tmp_path / a) if a.startswith("P") else a for a in args]
    assert main(["explain", str(ck), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("streamarms explain: error: ") and needle in err and "Traceback" not in err, err


def test_without_matplotlib_the_extra_is_named(tmp_path, capsys, monkeypatch):
    ck = _episode_ck(tmp_path, capsys)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert main(["explain", str(ck), "--plot", str(tmp_path / "k.png")]) == 2
    assert "pip install 'streamarms[plot]'" in capsys.readouterr().err


def test_run_plot_draws_at_the_stop_and_a_bad_name_is_refused_before_a_record_is_read(tmp_path, capsys):
    p, png = six_key_replay(tmp_path, 3000), tmp_path / "stop.png"
    base = ["run", "--rewards-file", str(p), "--policy", "cs", "--checkpoint", "none", "--discovery-records", "50",
            "--quiet"]
    assert main([*base, "--plot", str(png)]) == 0
    assert f"wrote {png}: 6 keys of 6" in capsys.readouterr().out and png.read_bytes().startswith(PNG)
    for bad, needle in ((tmp_path / "none" / "x.png", "the directory"), (tmp_path / "x.jpeg2", ".jpeg2 is no file")):
        assert main([*base, "--plot", str(bad)]) == 2
        assert needle in capsys.readouterr().err
