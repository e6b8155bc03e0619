"""pocketdec.summarize: the library's summary as pandas DataFrames (skipped without python3-pandas):
every row equals the command's JSON, --by's groups, the command's errors as pocketdec.Error, and no
`pocketdec` command needed."""

import json
import os
import subprocess
import sys

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
    t = pocketdec.summarize(records, model=TIANCHI)
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
    t = pocketdec.summarize(records, by="date:month")
    g = t["groups"]
    assert sorted(set(g["group"])) == ["2026-01", "2026-02"]
    per = g[g["category"].isna()].groupby("polarity")["records"].sum()  # the polarity rows of each group
    assert per["负面"] == sum(i % 3 for i in range(12)) and per["正面"] == 12


def test_errors(tmp_path, records):
    with pytest.raises(pocketdec.Error) as e:
        pocketdec.summarize(tmp_path / "none.jsonl")
    assert "none.jsonl: cannot open" in e.value.message
    with pytest.raises(pocketdec.Error) as e:
        pocketdec.summarize(records, by="nope")
    assert f"{records}:1: id 0 has no column 'nope'" in e.value.message
    with pytest.raises(pocketdec.Error) as e:
        pocketdec.summarize(records, schema=SCHEMA)
    assert e.value.status == "invalid argument" and "one of them" in e.value.message
    with pytest.raises(pocketdec.Error) as e:
        pocketdec.summarize(reviews=records, schema=SCHEMA)
    assert e.value.status == "invalid argument" and "give both" in e.value.message
    with pytest.raises(pocketdec.Error) as e:  # the library's own check
        pocketdec.summarize(records, merge=[records])
    assert e.value.status == "invalid argument" and "one of them" in e.value.message


def test_no_command_on_path(records, tmp_path):
    """A pip install has the package and its libraries but no command: summarize runs with PATH empty
    (and $POCKETDEC_COMMAND pointing nowhere), and gives the command's JSON."""
    want = json.loads(helpers.run(helpers.POCKETDEC, "summarize", "--records", records, "--by", "date:month"))
    script = ("import json, sys, helpers, pocketdec\n"
              "print(json.dumps(pocketdec.summarize(sys.argv[1], by='date:month')['json']))\n")
    env = {**os.environ, "PATH": "", "POCKETDEC_COMMAND": str(tmp_path / "no-such-command"),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    p = subprocess.run([sys.executable, "-c", script, str(records)], capture_output=True, text=True, env=env,
                       cwd=os.path.dirname(os.path.abspath(__file__)))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == want and [g["group"] for g in want["groups"]] == ["2026-01", "2026-02"]


def test_command_argument_is_deprecated(records):
    with pytest.warns(DeprecationWarning, match="command= is ignored"):
        t = pocketdec.summarize(records, command="/no/such/pocketdec")
    assert t["json"]["reviews"] == 12


def test_reviews_joined_and_notes(tmp_path):
    """With reviews: texts joined by id, a review with no records line counted with none and noted
    as a warning (the command's stderr note), a broken row noted as not counted."""
    reviews = tmp_path / "reviews.csv"
    reviews.write_text("id,text\n1,物流很快\n2,一般\n,坏行\n3,差评\n", encoding="utf-8")
    recs = tmp_path / "records.jsonl"
    recs.write_text(json.dumps({"id": "1", "records": [rec("快", "物流", "正面")]}, ensure_ascii=False) + "\n"
                    + json.dumps({"id": "3", "records": [rec("差", "整体", "负面")]}, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    want = json.loads(helpers.run(helpers.POCKETDEC, "summarize", "--records", recs, "--input", reviews))
    with pytest.warns(RuntimeWarning) as notes:
        t = pocketdec.summarize(recs, reviews=reviews)
    assert t["json"] == want and want["reviews"] == 3  # review 2 counted with no records
    said = [str(w.message) for w in notes]
    assert any(f"1 reviews of {reviews} have no line in {recs}" in m for m in said), said
    assert any(m.startswith(f"{reviews}:4:") and m.endswith("; not counted") for m in said), said


def test_extracted_here(tmp_path):
    """model with schema: the reviews extracted by the library's pipeline (the bundle's head), the
    command's JSON for --schema --model --input."""
    reviews = tmp_path / "reviews.csv"
    reviews.write_text("id,text,date\n1,物流很快,2026-01-03\n2,一般,2026-02-01\n3,差评,2026-02-09\n", encoding="utf-8")
    want = json.loads(helpers.run(helpers.POCKETDEC, "summarize", "--schema", SCHEMA, "--model", TIANCHI, "--input",
                                  reviews, "--by", "date:month"))
    t = pocketdec.summarize(reviews=reviews, model=TIANCHI, schema=SCHEMA, by="date:month")
    assert t["json"] == want and want["reviews"] == 3
    assert sorted(set(t["groups"]["group"])) == ["2026-01", "2026-02"]
