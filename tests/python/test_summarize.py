"""pocketdec.summarize: the command's summary as pandas DataFrames (skipped without python3-pandas):
every row equals the command's JSON, --by's groups, and the command's errors as pocketdec.Error."""

import json

import helpers
from helpers import SCHEMA, TIANCHI

import pytest

import pocketdec

pandas = pytest.importorskip("pandas")


def rec(o, c, p):
    return {"aspect": "_", "opinion": o, "category": c, "polarity": p}


@pytest.fixture
def records(tmp_path):
    lines = [{"id": i, "date": f"2026-0{1 + i % 2}-01",
              "records": [rec("差", "整体", "负面")] * (i % 3) + [rec("好", "物流", "正面")]} for i in range(12)]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


def test_tables_equal_the_command(records):
    want = json.loads(helpers.run(helpers.POCKETDEC, "summarize", "--records", records, "--model", TIANCHI))
    t = pocketdec.summarize(records, model=TIANCHI, command=helpers.POCKETDEC)
    assert t["json"] == want
    # 中性: none found, an entry all the same (the bundle's rates know it)
    assert list(t["polarity"]["polarity"]) == list(want["polarity"]) == ["正面", "负面", "中性"]
    assert want["polarity"]["中性"]["records"] == 0 and want["polarity"]["中性"]["high"] > 0
    for df, entries in ((t["polarity"], list(want["polarity"].values())), (t["cells"], want["cells"])):
        assert len(df) == len(entries)
        for (_, row), e in zip(df.iterrows(), entries):
            for key in ("records", "reviews", "share", "estimate", "low", "high", "support", "rates"):
                assert row[key] == e[key], (key, row, e)
    neg = t["polarity"].set_index("polarity").loc["负面"]
    assert neg["records"] == sum(i % 3 for i in range(12)) and neg["estimate"] > neg["records"]  # complaints missed


def test_groups(records):
    t = pocketdec.summarize(records, by="date:month", command=helpers.POCKETDEC)
    g = t["groups"]
    assert sorted(set(g["group"])) == ["2026-01", "2026-02"]
    per = g[g["category"].isna()].groupby("polarity")["records"].sum()  # the polarity rows of each group
    assert per["负面"] == sum(i % 3 for i in range(12)) and per["正面"] == 12


def test_errors(tmp_path, records):
    with pytest.raises(pocketdec.Error) as e:
        pocketdec.summarize(tmp_path / "none.jsonl", command=helpers.POCKETDEC)
    assert "none.jsonl: cannot open" in e.value.message
    with pytest.raises(pocketdec.Error) as e:
        pocketdec.summarize(records, by="nope", command=helpers.POCKETDEC)
    assert f"{records}:1: id 0 has no column 'nope'" in e.value.message
    with pytest.raises(pocketdec.Error) as e:
        pocketdec.summarize(records, schema=SCHEMA, command=helpers.POCKETDEC)
    assert e.value.status == "invalid argument"
