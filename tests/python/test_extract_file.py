"""Extractor.extract_file: byte for byte the command's output (Tianchi CSV and JSONL, broken
rows among them), and nothing lost when the Python process dies: killed with SIGKILL at seeded
random moments and resumed, the file ends as one uninterrupted call's; a resume of another run is
refused naming what differs; pocketdec.files.ResumableOutput on its own."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import helpers  # noqa: F401  (points pocketdec at this build)
import pocketdec
import pytest
from pocketdec.files import ResumableOutput

N = helpers.DEV_LIMIT or 283  # dev reviews (all of them; fewer under a sanitizer)
KILLS = 3 if helpers.SANITIZED else 6


@pytest.fixture(scope="module")
def ex():
    with pocketdec.Model(helpers.TIANCHI, threads=2) as m, pocketdec.Extractor(m, helpers.SCHEMA) as e:
        yield e


def corpus(tmp_path):
    """The dev reviews as CSV and as JSONL, each with broken rows the command reports."""
    rows = helpers.dev_reviews(N)
    csv_path, jsonl_path = tmp_path / "reviews.csv", tmp_path / "reviews.jsonl"
    with open(csv_path, "w", encoding="utf-8") as f:
        f.write("id,Reviews\n")
        for k, (rid, text) in enumerate(rows):
            f.write(f"{rid},{text}\n")
            if k == 3:
                f.write('77777,"an unclosed quote\n')  # broken: its id written with no records
            if k == 5:
                f.write("88888\n")  # one field: broken
    with open(jsonl_path, "w", encoding="utf-8") as f:
        for k, (rid, text) in enumerate(rows):
            f.write(json.dumps({"id": rid, "text": text}, ensure_ascii=False) + "\n")
            if k == 2:
                f.write('{"id": 5, "text": }\n\n')  # broken JSON, then a blank line
    return csv_path, jsonl_path


def command(src, out, *extra):
    """The command's output and its summary's counts."""
    p = subprocess.run([helpers.POCKETDEC, "extract", "--model", helpers.TIANCHI, "--schema", helpers.SCHEMA, "--input",
                        str(src), "--output", str(out), "--threads", "2", *extra], capture_output=True, text=True)
    assert p.returncode == 1, p.stderr  # 1: broken rows
    m = re.search(r"extract: (\d+) reviews, (\d+) records, (\d+) broken rows, (\d+) failed", p.stderr)
    return out.read_bytes(), dict(zip(("reviews", "records", "broken", "failed"), map(int, m.groups())))


def test_the_commands_bytes(ex, tmp_path):
    csv_path, jsonl_path = corpus(tmp_path)
    for src, fmt in ((csv_path, "tianchi"), (jsonl_path, "jsonl"), (csv_path, "jsonl")):
        want, counts = command(src, tmp_path / "cli.out", "--format", fmt)
        got = tmp_path / "py.out"
        stats = ex.extract_file(src, got, format=fmt, parallel=2)
        assert got.read_bytes() == want, (src, fmt)
        assert {k: stats[k] for k in counts} == counts and stats["broken"] > 0
        assert len(stats["problems"]) == counts["broken"] and all(str(src) in p for p in stats["problems"])
        assert b"\ncomplete yes\n" in (tmp_path / "py.out.progress").read_bytes()


def test_shop_export_and_gb18030(ex, tmp_path):
    """The library's reader of review files under Python and the command alike: a shop's
    export (its columns named, its other columns carried into JSONL lines) and a GB18030
    file, byte for byte; a GB18030 file without encoding= refused naming the option."""
    rows = helpers.dev_reviews(4)

    def quoted(text):
        return '"' + text.replace('"', '""') + '"'
    shop, gb = tmp_path / "shop.csv", tmp_path / "gb.csv"
    shop.write_text("review_id,rating,content,date,sku\n" + "".join(
        f"r{rid},{k % 5 + 1},{quoted(text)},2024-05-0{k + 1},SKU-{k}\n" for k, (rid, text) in enumerate(rows)),
        encoding="utf-8")
    gb.write_bytes(("id,Reviews\n" + "".join(f"{rid},{quoted(text)}\n" for rid, text in rows)).encode("gb18030"))
    cases = ((shop, "jsonl", {"id_column": "review_id", "text_column": "content"}),
             (shop, "tianchi", {"id_column": "review_id"}),
             (gb, "jsonl", {"encoding": "gb18030"}))
    for src, fmt, opts in cases:
        args = [a for k, v in opts.items() for a in ("--" + k.replace("_", "-"), v)]
        p = subprocess.run([helpers.POCKETDEC, "extract", "--model", helpers.TIANCHI, "--schema", helpers.SCHEMA,
                            "--input", str(src), "--output", str(tmp_path / "cli.out"), "--threads", "2",
                            "--format", fmt, *args], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        want = (tmp_path / "cli.out").read_bytes()
        stats = ex.extract_file(src, tmp_path / "py.out", format=fmt, **opts)
        assert (tmp_path / "py.out").read_bytes() == want, (src, fmt)
        assert stats["reviews"] == len(rows) and stats["broken"] == 0
        if src == shop and fmt == "jsonl":
            first = json.loads(want.split(b"\n")[0])
            assert first["id"] == f"r{rows[0][0]}" and (first["rating"], first["date"], first["sku"]) == \
                ("1", "2024-05-01", "SKU-0"), first
    e = helpers.error_of(ex.extract_file, gb, tmp_path / "x.out")
    assert e.code == 2, e  # PD_ERR_FORMAT
    assert str(gb) in e.message and "--encoding gb18030" in e.message and "GB18030" in e.message, e.message
    e = helpers.error_of(ex.extract_file, shop, tmp_path / "x.out")  # review_id: no "id" column
    assert e.code == 2 and "review_id,rating,content,date,sku" in e.message, e.message
    e = helpers.error_of(ex.extract_file, gb, tmp_path / "x.out", encoding="no-such-encoding")
    assert e.code == 7 and "no-such-encoding" in e.message, e.message


_CHILD = """
import sys
import pocketdec
m = pocketdec.Model(sys.argv[1], threads=1)
ex = pocketdec.Extractor(m, sys.argv[2])
ex.extract_file(sys.argv[3], sys.argv[4], format="jsonl", resume=sys.argv[5] == "1")
"""


def test_killed_and_resumed(ex, tmp_path):
    _, src = corpus(tmp_path)
    ref, out = tmp_path / "ref.jsonl", tmp_path / "out.jsonl"
    ex.extract_file(src, ref, format="jsonl")
    want = ref.read_bytes()
    env = dict(os.environ, PYTHONPATH=os.path.join(helpers.ROOT, "python"))
    rng, size, kills = random.Random(56), 0, 0
    for k in range(KILLS):
        p = subprocess.Popen([sys.executable, "-c", _CHILD, helpers.TIANCHI, helpers.SCHEMA, str(src), str(out),
                              "1" if k else "0"], env=env)
        while p.poll() is None and (not out.exists() or out.stat().st_size <= size):
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.1))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
        data = out.read_bytes()
        whole = int(next(x for x in (tmp_path / "out.jsonl.progress").read_text().split("\n") if
                         x.startswith("bytes ")).split()[1])
        assert whole <= len(data) and data[:whole] == want[:whole], f"kill {k + 1}"
        size = whole
    assert kills == KILLS
    ex.extract_file(src, out, format="jsonl", resume=True)
    assert out.read_bytes() == want


def test_another_run_refused(ex, tmp_path):
    csv_path, _ = corpus(tmp_path)
    out = tmp_path / "out.csv"
    first = ex.extract_file(csv_path, out)
    before = out.read_bytes()
    with pocketdec.Extractor(ex.model, helpers.SCHEMA, min_confidence=0.5) as other:
        e = helpers.error_of(other.extract_file, csv_path, out, resume=True)
    assert e.status == "invalid argument" and "min_confidence: was 'None', now '0.5'" in e.message
    assert out.read_bytes() == before
    e = helpers.error_of(ex.extract_file, csv_path, out, format="jsonl", resume=True)
    assert "format: was 'tianchi', now 'jsonl'" in e.message
    again = ex.extract_file(csv_path, out, resume=True)  # finished: nothing left to do
    assert {k: again[k] for k in ("reviews", "records", "broken")} == {k: first[k] for k in ("reviews", "records", "broken")}
    assert out.read_bytes() == before
    e = helpers.error_of(ex.extract_file, tmp_path / "missing.csv", out)
    assert e.status == "i/o error" and "missing.csv: cannot open" in e.message
    with pytest.raises(pocketdec.Error):
        ex.extract_file(csv_path, out, format="xml")


def test_resumable_output_alone(tmp_path):
    path = tmp_path / "o.txt"
    with ResumableOutput(path, "job: a\n") as o:
        assert o.state is None
        o.commit(b"one\n", "n=1")
        o.commit(b"", "n=2")
    with open(path, "ab") as f:
        f.write(b"tor")  # a torn tail
    o = ResumableOutput(path, "job: a\n", resume=True)
    assert o.state == "n=2" and path.read_bytes() == b"one\n"
    o.commit(b"two\n", "n=3")
    o.finish()
    assert path.read_bytes() == b"one\ntwo\n"
    with pytest.raises(pocketdec.Error):
        o.commit(b"x", "n=4")
    e = helpers.error_of(ResumableOutput, path, "job: b\n", resume=True)
    assert "job: was 'a', now 'b'" in e.message
    e = helpers.error_of(ResumableOutput(path, "job: a\n").commit, b"x", "two\nlines")
    assert e.status == "invalid argument"
