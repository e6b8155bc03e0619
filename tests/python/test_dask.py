"""Sharding a corpus (docs/extraction.md, "Sharding a large corpus with batch engines"): the
output of pocketdec.dask on a two-process distributed.LocalCluster, and of the GNU parallel
recipes, equals one `pocketdec extract` run byte for byte, broken rows included (and reviews
with quotes, control characters, emoji and long texts).

The cluster tests need dask and distributed (Debian: python3-dask, python3-distributed), the
recipe tests GNU parallel (Debian: parallel); without them they are skipped, saying so."""

import json
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

import helpers
from helpers import POCKETDEC, SCHEMA, TIANCHI, run

import pocketdec
from pocketdec import dask as pdd
from pocketdec.files import BrokenRow

try:
    import numpy as np
except ImportError:
    np = None

try:
    import dask.bag
    import distributed
    NO_DASK = None
except ImportError as e:
    NO_DASK = f"dask and distributed are needed (Debian: python3-dask python3-distributed): {e}"


def gnu_parallel():
    path = shutil.which("parallel")
    if not path:
        return None
    p = subprocess.run([path, "--version"], capture_output=True, text=True)
    return path if p.returncode == 0 and p.stdout.startswith("GNU parallel") else None


PARALLEL = gnu_parallel()
needs_dask = pytest.mark.skipif(NO_DASK is not None, reason=NO_DASK or "")
needs_parallel = pytest.mark.skipif(PARALLEL is None, reason="GNU parallel is needed (Debian: parallel)")

N = helpers.DEV_LIMIT or 100  # dev reviews

# Rows the command refuses (reported, skipped: nothing written) or takes in an unusual form,
# put after the dev review of that index.
ODD = {
    3: '{"id": 7, "txt": "no text"}',
    8: "not json",
    12: "   \t",                                               # blank: nothing, not broken
    17: '{"id": "q\\"\\u001f\\\\é", "text": "物流很快，包装也很好"}\r',  # escaped id, CRLF
    23: '{"id": 1, "id": 2, "text": "x"}',                    # duplicate key
    29: '{"id": 5, "text": ""}',                              # empty review: no records
    31: '{"id": 1.5, "text": "x"}',                           # id neither string nor integer
    37: '{"id": 8, "text": "a\\ud800"}',                      # lone surrogate
    41: b'{"id": 9, "text": "\xff"}',                         # invalid UTF-8
    44: '[1, 2]',
    47: '{"id": 10, "text": "x\\u0000"}',
    52: '{"id": 11, "text": NaN}',
    58: '{"id": 99999999999999999999, "text": "x"}',           # past int64
    # reviews whose records hold what JSON escapes or what is long
    2: '{"id": "quotes", "text": "包装说\\"很好\\"，物流\\\\很快，味道\'不错\'"}',
    6: '{"id": "controls", "text": "物流很快\\u0001\\t包装也很好\\r\\n味道不错\\u001f，\\b价格\\f便宜"}',
    20: '{"id": "emoji", "text": "😀😀质量很好👍，价格便宜💰，物流🚚很快，包装😡太差了"}',
    33: json.dumps({"id": "long", "text": "，".join(["这个面霜真的非常非常非常好用而且一点都不油腻"] * 25)},
                   ensure_ascii=False),
}
WRITTEN = (2, 6, 17, 20, 29, 33)  # the odd rows the command writes a line for
VALID = len(WRITTEN) + 1  # not broken: those and the blank line
BROKEN = len(ODD) - VALID
assert max(ODD) < N, "every odd row is put after a dev review"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A JSONL file of N dev reviews with the odd rows, and one run of the command over it."""
    d = tmp_path_factory.mktemp("dask")
    reviews = helpers.dev_reviews(N)
    with open(d / "reviews.jsonl", "wb") as f:
        f.write(b"\xef\xbb\xbf")  # a byte order mark, dropped from the first line
        for i, (rid, text) in enumerate(reviews):
            f.write(json.dumps({"id": rid, "text": text}, ensure_ascii=False).encode() + b"\n")
            if i in ODD:
                odd = ODD[i]
                f.write((odd if isinstance(odd, bytes) else odd.encode()) + b"\n")
    p = subprocess.run([POCKETDEC, "extract", "--model", TIANCHI, "--schema", SCHEMA, "--input", d / "reviews.jsonl",
                        "--output", d / "one.jsonl", "--format", "jsonl"], capture_output=True, text=True)
    assert p.returncode == 1, p.stderr  # 1: broken rows
    assert f"{N + VALID - 1} reviews" in p.stderr and f"{BROKEN} broken rows" in p.stderr, p.stderr
    return d, reviews, (d / "one.jsonl").read_bytes(), p.stderr


# ------------------------------------------------------------ the writer and the reader

def test_reader_refuses_what_the_command_refuses():
    """Every item is read by the library's reader (files.jsonl_row), a Line as that line of its file."""
    broken = [b'{"id": 1}', b"{", b'{"id": 1, "text": "a"} x', b'{"id": true, "text": "a"}',
              b'{"id": 1, "text": 2}', b'{"id": 1, "text": "a", "text": "b"}', b'{"id": 1, "text": "\\ud800"}',
              b'{"id": 1, "text": "\\u0000"}', b'{"id": 1, "text": "a\x00"}', b'{"id": 1, "text": "\xc0\x80"}',
              b'{"id": 1, "text": "a", "x": Infinity}', b'{"id": 1, "text": "a", "x": 1e400}',
              b'{"id": -9223372036854775809, "text": "a"}', b'\xef\xbb\xbf{"id": 1, "text": "a"}',
              b'{"id": 1, "text": "\xba\xdc\xba\xc3"}']  # GB18030 on line 2: a broken row, not a refused file
    for line in broken:
        with pytest.raises(BrokenRow):
            pdd._row(pdd.Line("f", 2, line), "f:2")
    with pytest.raises(BrokenRow) as e:
        pdd._row(pdd.Line("f", 2, broken[-1]), "f:2")
    at = broken[-1].index(b"\xba") + 1
    assert str(e.value) == f"invalid UTF-8 at byte {at}", e.value  # the reason alone, as Output.problem joins it
    assert pdd._row(pdd.Line("f", 1, b'\xef\xbb\xbf{"id": -9223372036854775808, "text": "a"}\r'), "f:1") == \
        ("-9223372036854775808", "a")
    assert pdd._row(pdd.Line("f", 3, b'{"id": "\\ud83d\\ude00", "text": ""}'), "f:3") == ("😀", "")
    assert pdd._row(pdd.Line("f", 4, b" \t\r"), "f:4") is None
    # str, bytes and dict items, each read as a file of one line
    assert pdd._row('{"id": 5, "text": "好"}\n', "item 1") == ("5", "好")
    assert pdd._row({"id": 6, "text": "好", "sku": object()}, "item 2") == ("6", "好")  # other keys not read
    if np is not None:
        assert pdd._row({"id": np.int64(7), "text": "x"}, "item 3") == ("7", "x")
    for item, why in (('{"id": 1,\n"text": "a"}', "a line break inside one JSONL line"),
                      ({"id": 1.5, "text": "a"}, '"id" must be a string or an integer, got a number'),
                      ({"id": 1, "text": "\ud800"}, "invalid UTF-8 at byte"), ({"id": b"1", "text": "a"}, "not JSON"),
                      (3, "expected a JSONL line or a dict, got int")):
        with pytest.raises(BrokenRow) as e:
            pdd._row(item, "item 9")
        assert str(e.value).startswith(why), (item, str(e.value))


def test_rows_give_the_command_output(corpus):
    """extract_rows, the work of one partition, over the whole file in this process."""
    d, _, one, _ = corpus
    data = (d / "reviews.jsonl").read_bytes()
    lines = [pdd.Line("f", i + 1, b) for i, b in enumerate(data.split(b"\n")[:-1])]
    out = list(pdd.extract_rows(pdd.extractor(TIANCHI, SCHEMA), lines))
    assert "".join(o.line for o in out if o.line).encode() == one
    assert sum(o.line is None for o in out) == BROKEN
    assert all(o.problem.startswith("f:") and "broken row skipped" in o.problem for o in out if o.problem)


def test_a_review_that_fails_is_written_with_no_records():
    real = pdd.extractor(TIANCHI, SCHEMA)

    class Failing:  # the real extractor, but "bad" does not fit
        def jsonl(self, rid, text=None):
            if text == "bad":
                raise pocketdec.Error("context full", "the text does not fit", 8)
            return real.jsonl(rid, text)
    out = list(pdd.extract_rows(Failing(), ['{"id": 1, "text": "bad"}', {"id": "2", "text": ""}]))
    assert out == [pdd.Output('{"id":"1","records":[]}\n', "item 1: id 1: the text does not fit", 0),
                   pdd.Output('{"id":"2","records":[]}\n', None, 0)]


def test_extractor_jsonl_is_the_records_as_json_rounded(corpus):
    """Extractor.jsonl, the library's line, parses to extract()'s records as helpers.as_jsonl
    rounds them; ids are escaped as jansson escapes them."""
    _, reviews, _, _ = corpus
    ex = pdd.extractor(TIANCHI, SCHEMA)
    for rid, text in reviews[:20]:
        line, records = ex.jsonl(str(rid), text)
        assert records == ex.extract(text)
        assert line.endswith("}\n") and "\n" not in line[:-1]
        assert json.loads(line) == {"id": str(rid), "records": helpers.as_jsonl(records)}
    assert ex.jsonl('q"\x1f\\é\t😀') == ('{"id":"q\\"\\u001F\\\\é\\t😀","records":[]}\n', [])
    with pytest.raises(pocketdec.Error):
        ex.jsonl("a\0b", "x")


# ------------------------------------------------------------ a Dask cluster

@pytest.fixture(scope="module")
def cluster():
    if NO_DASK:
        pytest.skip(NO_DASK)
    # the worker processes import pocketdec from this checkout and load this build's library
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(helpers.ROOT, "python"),
                                                             os.environ.get("PYTHONPATH")]))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            distributed.Client(c) as client:
        yield client


@needs_dask
def test_dask_cluster_writes_the_command_output(corpus, cluster):
    d, _, one, stderr = corpus
    size = (d / "reviews.jsonl").stat().st_size
    stats = pdd.extract_jsonl(d / "reviews.jsonl", TIANCHI, SCHEMA, d / "dask.jsonl", blocksize=size // 12)
    assert (d / "dask.jsonl").read_bytes() == one
    assert stats["reviews"] == N + VALID - 1 and stats["broken"] == BROKEN and stats["failed"] == 0
    assert stats["records"] == sum(len(json.loads(x)["records"]) for x in one.splitlines())
    # the problems name the lines the command names, in order
    lines = [p.split(": ")[0].rsplit(":", 1)[1] for p in stats["problems"]]
    assert lines == [x.split(": ")[1].rsplit(":", 1)[1] for x in stderr.splitlines() if "broken row skipped" in x]
    # each worker process loaded the model once, for all its partitions
    parts = pdd.read_jsonl(d / "reviews.jsonl", blocksize=size // 12).npartitions
    loads = cluster.run(lambda: __import__("pocketdec.dask").dask.loads)
    assert parts >= 7 and sorted(loads.values()) == [1, 1], loads


@needs_dask
def test_dask_summary_of_partitions(corpus, cluster, tmp_path):
    """summarize_jsonl: blocks summarized by the workers (libpocketdec, no command) and merged equal one
    summarize of the file."""
    pytest.importorskip("pandas")
    _, _, one, _ = corpus
    records = tmp_path / "records.jsonl"
    records.write_bytes(one)
    want = json.loads(helpers.run(helpers.POCKETDEC, "summarize", "--records", records, "--model", TIANCHI))
    got = pdd.summarize_jsonl(records, blocksize=len(one) // 5, model=TIANCHI)
    assert got["json"] == want and want["reviews"] > 10
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(one + b'{"id": 1}\n')
    with pytest.raises(pocketdec.Error) as e:
        pdd.summarize_jsonl(bad, npartitions=2)
    assert str(bad) in e.value.message and "records" in e.value.message, e.value.message


@needs_dask
def test_dask_bag_of_dicts(corpus, cluster, tmp_path):
    """A bag of {"id", "text"} dicts in 3 partitions, and the lower-level extract_bag."""
    _, reviews, one, _ = corpus
    lines, k, good = one.splitlines(keepends=True), 0, []
    for i in range(len(reviews)):  # the command's lines less those of the odd rows it writes
        good.append(lines[k])
        k += 2 if i in WRITTEN else 1
    good = b"".join(good)
    bag = dask.bag.from_sequence([{"id": rid, "text": text} for rid, text in reviews], npartitions=3)
    stats = pdd.extract_jsonl(bag, TIANCHI, SCHEMA, tmp_path / "dicts.jsonl")
    assert (tmp_path / "dicts.jsonl").read_bytes() == good and stats["problems"] == []
    out = pdd.extract_bag(dask.bag.from_sequence(['{"id": 1, "text": "物流很快"}', "{}", {"id": 2}], npartitions=1),
                          TIANCHI, SCHEMA).compute()
    assert [(o.line is not None, o.problem) for o in out] == [
        (True, None), (False, 'item 2: broken row skipped: missing key "id"'),
        (False, 'item 3: broken row skipped: missing key "text"')]


@needs_dask
def test_dask_npartitions_and_several_files(corpus, cluster, tmp_path):
    """Two files one after the other, in about 4 partitions: what one run over their
    concatenation writes."""
    _, reviews, _, _ = corpus
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path, part in ((a, reviews[:30]), (b, reviews[30:50])):
        path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in part),
                        encoding="utf-8")
    both = run(POCKETDEC, "extract", "--model", TIANCHI, "--schema", SCHEMA, "--input", "-", "--input-format", "jsonl",
               "--output", "-", "--format", "jsonl", stdin=a.read_text(encoding="utf-8") + b.read_text(encoding="utf-8"))
    assert pdd.read_jsonl([a, b], npartitions=4).npartitions in (4, 5)
    pdd.extract_jsonl([a, b], TIANCHI, SCHEMA, tmp_path / "out.jsonl", npartitions=4)
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == both


@needs_dask
def test_dask_local_scheduler(corpus, cluster, tmp_path):
    """client=False: dask's threads in this process, one Extractor for all."""
    d, _, one, _ = corpus
    stats = pdd.extract_jsonl(d / "reviews.jsonl", TIANCHI, SCHEMA, tmp_path / "local.jsonl", npartitions=5,
                              client=False)
    assert (tmp_path / "local.jsonl").read_bytes() == one and stats["broken"] == BROKEN


@needs_dask
def test_dask_a_model_that_does_not_load(corpus, cluster, tmp_path):
    """The worker's pocketdec.Error reaches the client as it is."""
    d, _, _, _ = corpus
    with pytest.raises(pocketdec.Error) as e:
        pdd.extract_jsonl(d / "reviews.jsonl", tmp_path / "nope", SCHEMA, tmp_path / "out.jsonl")
    assert e.value.status == "i/o error" and "nope" in e.value.message


@needs_dask
def test_dask_a_worker_killed_mid_partition(corpus, cluster, tmp_path):
    """A worker process killed (SIGKILL) in the middle of a partition: the cluster runs the
    partition again on a worker its nanny starts anew, and the output is the same bytes."""
    d, _, one, _ = corpus
    marker = str(tmp_path / "died")

    def die_once(lines):  # nested: cloudpickle sends it by value to the workers
        if any(x.line == 40 for x in lines) and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return lines
    before = sorted(cluster.run(os.getpid).values())
    bag = pdd.read_jsonl(d / "reviews.jsonl", npartitions=8).map_partitions(die_once)
    stats = pdd.extract_jsonl(bag, TIANCHI, SCHEMA, tmp_path / "out.jsonl")
    assert os.path.exists(marker), "the worker was not killed"
    assert sorted(cluster.run(os.getpid).values()) != before  # a worker process was started anew
    assert (tmp_path / "out.jsonl").read_bytes() == one and stats["broken"] == BROKEN


_CLIENT = """
import sys
from pocketdec import dask as pdd
pdd.extract_jsonl(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], npartitions=12, client=False)
"""


@needs_dask
def test_dask_client_killed_and_resumed(corpus, tmp_path):
    """The client itself killed while it writes: resume=True skips the partitions written
    and finishes the file byte for byte; another cut is refused, naming it."""
    d, _, one, _ = corpus
    out = tmp_path / "out.jsonl"
    env = dict(os.environ, PYTHONPATH=os.path.join(helpers.ROOT, "python"))
    p = subprocess.Popen([helpers.sys.executable, "-c", _CLIENT, str(d / "reviews.jsonl"), TIANCHI, SCHEMA, str(out)],
                         env=env)
    while p.poll() is None and (not out.exists() or out.stat().st_size < len(one) // 4):
        time.sleep(0.005)
    p.kill()
    p.wait()
    assert 0 < out.stat().st_size < len(one), "the client was not killed while writing"
    e = helpers.error_of(pdd.extract_jsonl, d / "reviews.jsonl", TIANCHI, SCHEMA, out, npartitions=6, client=False,
                         resume=True)
    assert "inputs: was" in e.message
    stats = pdd.extract_jsonl(d / "reviews.jsonl", TIANCHI, SCHEMA, out, npartitions=12, client=False, resume=True)
    assert out.read_bytes() == one and stats["broken"] == BROKEN and stats["reviews"] == N + VALID - 1


# ------------------------------------------------------------ GNU parallel

def shell(cmd, ok=(0,)):
    p = subprocess.run(["bash", "-c", cmd], capture_output=True)
    assert p.returncode in ok, f"{cmd}: exit {p.returncode}\n{p.stderr.decode(errors='replace')}"
    return p.stdout


@needs_parallel
def test_parallel_jsonl_recipe(corpus):
    """docs/extraction.md: parallel --pipe -k -N 500 -j 4 pocketdec extract ... --format jsonl,
    here 20 lines a job, 2 jobs at a time."""
    d, _, one, _ = corpus
    cmd = (f"{PARALLEL} --pipe -k -N 20 -j 2 {POCKETDEC} extract --model {TIANCHI} --schema {SCHEMA} "
           f"--input - --input-format jsonl --output - --format jsonl")
    # shards with broken rows exit 1: parallel's status counts them; the output is complete
    assert shell(f"{cmd} < {d}/reviews.jsonl", ok=range(1, 101)) == one
    # the wrapper the docs give accepts the reported rows
    wrapped = (f"{PARALLEL} --pipe -k -N 20 -j 2 '{POCKETDEC} extract --model {TIANCHI} --schema {SCHEMA} "
               f"--input - --input-format jsonl --output - --format jsonl; test $? -le 1'")
    assert shell(f"{wrapped} < {d}/reviews.jsonl") == one


@needs_parallel
def test_parallel_csv_recipe(tmp_path):
    """docs/extraction.md: tail -n +2 test_reviews.csv | parallel --pipe -k -N 500 -j 4
    pocketdec extract ... > Result.csv, on the dev reviews (one line each), 25 a job."""
    csv = tmp_path / "reviews.csv"
    with open(os.path.join(helpers.DATA, "dev_reviews.csv"), encoding="utf-8") as f:
        csv.write_text("".join(f.readlines()[:N + 1]), encoding="utf-8")
    one = run(POCKETDEC, "extract", "--model", TIANCHI, "--schema", SCHEMA, "--input", csv, "--output", "-")
    out = shell(f"tail -n +2 {csv} | {PARALLEL} --pipe -k -N 25 -j 2 {POCKETDEC} extract --model {TIANCHI} "
                f"--schema {SCHEMA} --input - --output -")
    assert out.decode("utf-8") == one and len(set(r.split(",")[0] for r in one.splitlines())) == N
