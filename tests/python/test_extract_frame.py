"""Extractor.extract_frame: a DataFrame of reviews in, a DataFrame of records out (skipped without
python3-pandas). Every record row equals what `pocketdec extract --format jsonl` writes for the same
reviews (fields, offsets, probabilities, confidence); the input's other columns are kept; a review with
no record keeps one row; bad columns and texts are Errors naming them; without pandas, ImportError
saying what to install."""

import csv
import json
import sys

import helpers
from helpers import SCHEMA, TIANCHI

import pytest

import pocketdec

pandas = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def ex():
    e = pocketdec.Extractor(TIANCHI, SCHEMA)
    yield e
    e.close()


@pytest.fixture(scope="module")
def shop():
    """A shop's export: its own column names, a rating and a sku beside the text; the last text has
    no record to find."""
    with open(helpers.os.path.join(helpers.DATA, "dev_reviews.csv"), encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:7]
    texts = [t for _, t in rows] + ["。"]
    n = len(texts)
    return pandas.DataFrame({"review_id": [f"r{k}" for k in range(n)], "rating": list(range(1, n + 1)),
                             "content": texts, "sku": ["A", "B"] * (len(texts) // 2) + ["A"] * (len(texts) % 2)})


def command_records(shop, tmp_path):
    src, out = tmp_path / "shop.jsonl", tmp_path / "records.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n"
                           for i, t in zip(shop["review_id"], shop["content"])), encoding="utf-8")
    helpers.run(helpers.POCKETDEC, "extract", "--model", TIANCHI, "--schema", SCHEMA, "--input", src, "--output", out,
                "--format", "jsonl")
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_rows_equal_the_command(ex, shop, tmp_path):
    want = command_records(shop, tmp_path)
    df = ex.extract_frame(shop, text_column="content", id_column="review_id")
    assert list(df.columns[:3]) == ["review_id", "content", "record"] and list(df.columns[-2:]) == ["rating", "sku"]
    fields = ["aspect", "opinion", "category", "polarity"]
    got_rows = 0
    for line in want:
        rows = df[df["review_id"] == line["id"]]
        src = shop[shop["review_id"] == line["id"]].iloc[0]
        assert (rows["rating"] == src["rating"]).all() and (rows["sku"] == src["sku"]).all()
        if not line["records"]:
            assert len(rows) == 1 and rows["record"].isna().all() and rows["aspect"].isna().all(), rows
            got_rows += 1
            continue
        assert list(rows["record"]) == list(range(len(line["records"])))
        for (_, row), r in zip(rows.iterrows(), line["records"]):
            assert [row[f] for f in fields] == [r[f] for f in fields]
            for f in fields:
                if f in r["spans"]:
                    assert [row[f + "_start"], row[f + "_end"]] == r["spans"][f]
                    assert row["content"][row[f + "_start"]:row[f + "_end"]] == r[f]
                else:
                    assert pandas.isna(row[f + "_start"]) and pandas.isna(row[f + "_end"])
                assert row[f + "_prob"] == pytest.approx(r["probs"][f], abs=5.1e-5)  # the command writes 4 decimals
            assert row["link_prob"] == pytest.approx(r["probs"]["link"], abs=5.1e-5)  # the command writes 4 decimals
            assert row["confidence"] == pytest.approx(r["confidence"], abs=5.1e-5)  # the command writes 4 decimals
        got_rows += len(line["records"])
    assert len(df) == got_rows and sum(len(x["records"]) for x in want) >= 6
    assert any(not x["records"] for x in want)  # the "。" review: one row, no record
    # without id_column: the frame's index as "id"; keep_empty=False drops the review with none
    plain = ex.extract_frame(shop.drop(columns=["review_id"]), "content", keep_empty=False, parallel=2)
    assert list(plain.columns[:2]) == ["id", "content"] and len(plain) == sum(len(x["records"]) for x in want)
    assert set(plain["id"]) == {k for k, x in enumerate(want) if x["records"]}


def test_bad_input(ex, shop):
    e = helpers.error_of(ex.extract_frame, shop, text_column="text")
    assert "'text' is not a column" in e.message and "review_id, rating, content, sku" in e.message
    e = helpers.error_of(ex.extract_frame, shop, text_column="content", id_column="nope")
    assert "id_column 'nope'" in e.message
    bad = shop.copy()
    bad.loc[2, "content"] = None
    e = helpers.error_of(ex.extract_frame, bad, text_column="content")
    assert "row 2: 'content' must be a str" in e.message
    e = helpers.error_of(ex.extract_frame, shop.rename(columns={"sku": "confidence"}), text_column="content")
    assert "confidence" in e.message and "rename" in e.message
    e = helpers.error_of(ex.extract_frame, [("r1", "好")], text_column="content")
    assert "pandas DataFrame" in e.message


def test_without_pandas(ex, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas then raises ImportError
    with pytest.raises(ImportError, match="python3-pandas"):
        ex.extract_frame(object(), text_column="content")
