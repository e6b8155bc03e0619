"""tianchi_eval.score: the figures `tianchi-eval --json` prints, from files or from tuples,
the HTML report, errors."""

import csv
import json
import os

import helpers
from helpers import DATA, SCHEMA, TIANCHI, TIANCHI_EVAL, error_of, run

import pytest

import pocketdec
from pocketdec import tianchi_eval

GOLD, REVIEWS = os.path.join(DATA, "dev_labels.csv"), os.path.join(DATA, "dev_reviews.csv")


@pytest.fixture(scope="module")
def result_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("eval") / "Result.csv"
    run(helpers.POCKETDEC, "extract", "--model", TIANCHI, "--schema", SCHEMA, "--input", REVIEWS,
        "--output", path, "--threads", "1")
    return path


def test_figures_equal_the_command(result_csv, tmp_path):
    want = json.loads(run(TIANCHI_EVAL, GOLD, result_csv, "--reviews", REVIEWS, "--json"))
    with tianchi_eval.score(GOLD, result_csv, reviews=REVIEWS) as got:
        assert got == want and 0.5 < got["overall"]["f1"] < 1
        got.html(tmp_path / "py.html")
    run(TIANCHI_EVAL, GOLD, result_csv, "--reviews", REVIEWS, "--html", tmp_path / "cli.html")
    assert (tmp_path / "py.html").read_bytes() == (tmp_path / "cli.html").read_bytes()
    with_errors = json.loads(run(TIANCHI_EVAL, GOLD, result_csv, "--json", "--errors"))
    assert tianchi_eval.score(GOLD, result_csv, errors=True) == with_errors


@pytest.fixture(scope="module")
def result_jsonl(tmp_path_factory):
    path = tmp_path_factory.mktemp("eval") / "dev.jsonl"
    run(helpers.POCKETDEC, "extract", "--model", TIANCHI, "--schema", SCHEMA, "--input", REVIEWS,
        "--output", path, "--format", "jsonl", "--threads", "1")
    return path


def test_html_of_jsonl_equals_the_command(result_jsonl, result_csv, tmp_path):
    """The page of JSONL predictions has the confidence sweep, byte for byte the command's
    (no time or path in it but the inputs', given the same here); a CSV's says why not."""
    with tianchi_eval.score(GOLD, result_jsonl, reviews=REVIEWS) as got:
        assert got == json.loads(run(TIANCHI_EVAL, GOLD, result_jsonl, "--reviews", REVIEWS, "--json"))
        got.html(tmp_path / "py.html")
    run(TIANCHI_EVAL, GOLD, result_jsonl, "--reviews", REVIEWS, "--html", tmp_path / "cli.html")
    page = (tmp_path / "py.html").read_text(encoding="utf-8")
    assert page == (tmp_path / "cli.html").read_text(encoding="utf-8")
    sweep = json.loads(run(TIANCHI_EVAL, GOLD, result_jsonl, "--sweep", "--json"))
    assert "<h2>Confidence</h2>" in page and "<h3>Reliability</h3>" in page
    for t in sweep["thresholds"]:  # each threshold's row of the table
        s = t["score"]
        assert "<tr><td>%.2f</td><td>%d</td><td>%d</td><td>%d</td><td>%.4f</td><td>%.4f</td><td>%.4f</td></tr>" % (
            t["threshold"], t["kept"], s["matched"], s["gold"], s["precision"], s["recall"], s["f1"]) in page
    tianchi_eval.score(GOLD, result_csv).html(tmp_path / "csv.html")
    page = (tmp_path / "csv.html").read_text(encoding="utf-8")
    assert "no record confidences in PRED (a CSV submission): no sweep" in page
    assert "<h3>Reliability</h3>" not in page


def test_tuples_score_like_files(result_csv):
    with open(result_csv, encoding="utf-8", newline="") as f:
        pred = [(int(r[0]), *r[1:]) for r in csv.reader(f)]
    with open(GOLD, encoding="utf-8", newline="") as f:
        gold = [(int(r[0]), r[1], r[4], r[7], r[8]) for r in list(csv.reader(f))[1:]]
    from_files = tianchi_eval.score(GOLD, result_csv)
    from_tuples = tianchi_eval.score(gold, pred, reviews=dict(helpers.dev_reviews()))
    for key in ("overall", "pairs", "categories", "polarities"):
        assert from_tuples[key] == from_files[key], key
    assert from_tuples["spans"]["either_outside"] == 0 and from_files["spans"] is None
    # the worked example of README.md: S 2, P 4, G 3
    s = tianchi_eval.score([(1, "_", "很好", "整体", "正面"), (1, "_", "超值", "价格", "正面"),
                            (2, "包装", "好看", "包装", "正面")],
                           [(1, "_", "很好", "整体", "正面"), (1, "_", "超值", "价格", "负面"),
                            (2, "包装", "好看", "包装", "正面"), (2, "物流", "快", "物流", "正面"), (3, "_", "_", "_", "_")])
    assert (s["overall"]["matched"], s["overall"]["predicted"], s["overall"]["gold"]) == (2, 4, 3)
    assert abs(s["overall"]["f1"] - 4 / 7) < 1e-12


def test_bad_input(tmp_path, result_csv):
    def error(*args, **kwargs):
        return error_of(tianchi_eval.score, *args, **kwargs)

    e = error(GOLD, tmp_path / "missing.csv")
    assert e.status == "i/o error" and "missing.csv" in e.message
    broken = tmp_path / "broken.csv"
    broken.write_text('1,"物流,很快\n', encoding="utf-8")
    e = error(GOLD, broken)
    assert e.status == "format error" and "broken.csv:1" in e.message
    assert error(result_csv, result_csv).status == "format error"  # predictions given as gold
    assert error(GOLD, [("x", "_", "好", "整体", "正面")]).status == "invalid argument"
    assert error(GOLD, [(1, "_", "好")]).status == "invalid argument"
    assert error(GOLD, [5]).status == "invalid argument"
    assert error(GOLD, [(1, "_", "好\0", "整体", "正面")]).status == "invalid argument"
    assert error(GOLD, result_csv, reviews={1: "a", "2": "b"}).status == "invalid argument"
    s = tianchi_eval.score(GOLD, result_csv)
    s.close()
    with pytest.raises(pocketdec.Error, match="closed"):
        s.html(tmp_path / "x.html")
    assert s["overall"]  # the figures stay
