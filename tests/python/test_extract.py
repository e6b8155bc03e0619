"""Extractor: records equal to what `pocketdec extract --format jsonl` writes (a tagger
head's one pass, generation, generation relabelled by a pointer head), streaming over
threads, errors."""

import json
import os

import helpers
from helpers import SCHEMA, SCHEMA_FIXTURES, TIANCHI, TIANCHI_GEN, as_jsonl, run
from helpers import error_of as error

import pytest

import pocketdec

TEST_SCHEMA = os.path.join(helpers.ROOT, "tests", "schemas", "data", "tianchi-test.yaml")


def extract_cli(tmp_path, reviews, *options):
    """{id: records} as `pocketdec extract` writes them (JSONL in and out)."""
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in reviews),
                   encoding="utf-8")
    run(helpers.POCKETDEC, "extract", *options, "--input", src, "--output", out, "--format", "jsonl")
    return [json.loads(line)["records"] for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def tagger():
    with pocketdec.Model(TIANCHI, threads=1) as m, pocketdec.Extractor(m, SCHEMA) as ex:
        yield ex


def test_tagger_extraction_equals_the_command(tagger, tmp_path):
    reviews = helpers.dev_reviews(helpers.DEV_LIMIT)
    want = extract_cli(tmp_path, reviews, "--model", TIANCHI, "--schema", SCHEMA, "--threads", "1")
    assert tagger.mode == "tagger" and tagger.fields == ["aspect", "opinion", "category", "polarity"]
    texts = [t for _, t in reviews]
    assert [as_jsonl(r) for r in tagger.extract_many(texts, parallel=2)] == want
    assert [as_jsonl(tagger.extract(t)) for t in texts[:20]] == want[:20]
    assert [as_jsonl(r) for r in tagger.extract_many(iter(texts[:5]))] == want[:5]
    assert sum(map(len, want)) > len(want)  # the bundled model does extract
    got = [tagger.extract(t) for t in texts]
    assert all(t[a:b] == r[f] for t, rs in zip(texts, got) for r in rs for f, (a, b) in r.spans.items())
    assert all(0 <= p <= 1 for rs in got for r in rs for p in [*r.probs.values(), r.confidence])
    assert all(list(r) == tagger.fields for rs in got for r in rs)  # the fields alone, in order


def test_min_confidence_drops_the_unsure_records(tagger):
    texts = [t for _, t in helpers.dev_reviews(40)]
    every = [tagger.extract(t) for t in texts]
    with pocketdec.Extractor(tagger.model, SCHEMA, min_confidence=0.9) as sure:
        kept = [sure.extract(t) for t in texts]
    assert kept == [[r for r in rs if r.confidence >= 0.9] for rs in every]
    assert 0 < sum(map(len, kept)) < sum(map(len, every))
    for bad in (-0.1, 1.5, "high", True, float("nan")):
        assert error(pocketdec.Extractor, tagger.model, SCHEMA, min_confidence=bad).status == "invalid argument"
    for bad in (8, -2, 2.5):
        assert error(pocketdec.Extractor, tagger.model, SCHEMA, max_chars=bad).status == "invalid argument"


def test_the_head_floor_is_a_default_the_caller_replaces(tagger):
    """min_confidence None is the head's floor (0.3 for the bundled default); 0 writes every
    record: more of them, every one of the default's among them."""
    texts = [t for _, t in helpers.dev_reviews(40)]
    default = [tagger.extract(t) for t in texts]
    with pocketdec.Extractor(tagger.model, SCHEMA, min_confidence=0) as every, \
            pocketdec.Extractor(tagger.model, SCHEMA, min_confidence=0.3) as floor:
        alls = [every.extract(t) for t in texts]
        assert [floor.extract(t) for t in texts] == default
    assert sum(map(len, alls)) > sum(map(len, default))
    assert all(r in a for d, a in zip(default, alls) for r in d)
    assert any(r.confidence < 0.3 for a in alls for r in a)
    assert all(r.confidence >= 0.3 for d in default for r in d)


def test_generation_relabelled_by_a_head_equals_the_command(tmp_path):
    reviews = helpers.dev_reviews(6)
    want = extract_cli(tmp_path, reviews, "--model", TIANCHI_GEN, "--schema", SCHEMA, "--threads", "1")
    with pocketdec.Model(TIANCHI_GEN, threads=1) as m, pocketdec.Extractor(m, SCHEMA) as ex:
        assert ex.mode == "decide"
        assert [as_jsonl(r) for r in ex.extract_many((t for _, t in reviews), parallel=3)] == want
    with pocketdec.Model(TIANCHI_GEN, threads=1) as m, pocketdec.Extractor(m, SCHEMA, head=False) as ex:
        assert ex.mode == "generate"
        got = [ex.extract(t) for _, t in reviews[:3]]
        assert list(ex.extract_many((t for _, t in reviews[:3]), parallel=4)) == got  # joint passes
    with pocketdec.Model(TIANCHI_GEN, threads=1) as m, pocketdec.Extractor(m, SCHEMA, head=False, ctx=256) as ex:
        long = "，".join(t for _, t in reviews) * 6  # past the context: read in windows, not refused
        many = list(ex.extract_many(["很好", long, "很好"], parallel=2))
        assert many[0] == many[2] == ex.extract("很好") and many[1] == ex.extract(long)
        assert many[1] and all(long[a:b] == r[f] for r in many[1] for f, (a, b) in r.spans.items())
    assert [as_jsonl(r) for r in got] == extract_cli(tmp_path, reviews[:3], "--model", os.path.join(TIANCHI_GEN, "base"), "--adapter",
                              os.path.join(TIANCHI_GEN, "adapter"), "--schema", SCHEMA, "--threads", "1")


def test_generation_options_equal_the_command(tmp_path):
    model_dir = os.path.join(SCHEMA_FIXTURES, "tiny-qwen3")
    reviews = [(i, t) for i, t in helpers.dev_reviews(4)]
    want = extract_cli(tmp_path, reviews, "--model", model_dir, "--schema", TEST_SCHEMA, "--max-records", "2",
                       "--temperature", "0.7", "--seed", "5", "--threads", "1")
    with pocketdec.Model(model_dir, threads=1) as m:
        with pocketdec.Extractor(m, TEST_SCHEMA, max_records=2, temperature=0.7, seed=5) as ex:
            assert [as_jsonl(ex.extract(t)) for _, t in reviews] == want
            assert ex.extract("") == []


def test_a_path_for_the_model(tagger):
    """Extractor("models/tianchi", ...): a Model of its own, the same records, closed with it."""
    texts = [t for _, t in helpers.dev_reviews(10)]
    with pocketdec.Extractor(TIANCHI, SCHEMA, threads=1) as ex:
        assert [ex.extract(t) for t in texts] == [tagger.extract(t) for t in texts]
        model = ex.model
        assert isinstance(model, pocketdec.Model) and not model.closed
    assert model.closed and not tagger.model.closed


def test_bad_input(tagger, tmp_path):
    bad, lines = tmp_path / "bad.yaml", open(SCHEMA, encoding="utf-8").read().split("\n")
    line = next(i for i, x in enumerate(lines) if "kind: enum" in x)
    lines[line] = lines[line].replace("enum", "sometimes")
    bad.write_text("\n".join(lines), encoding="utf-8")
    model = tagger.model
    e = error(pocketdec.Extractor, model, bad)
    assert e.status == "format error" and f"bad.yaml:{line + 1}:" in e.message and "sometimes" in e.message
    assert error(pocketdec.Extractor, model, tmp_path / "none.yaml").status == "i/o error"
    assert error(pocketdec.Extractor, 42, SCHEMA).status == "invalid argument"  # neither a Model nor a path
    e = error(pocketdec.Extractor, model, SCHEMA, max_records=3)
    assert e.status == "invalid argument" and "tagger" in e.message
    with pocketdec.Model(TIANCHI_GEN) as gen:
        e = error(pocketdec.Extractor, gen, SCHEMA, head=False, max_records=17)
        assert e.status == "limit exceeded" and "max_records 17" in e.message
        assert error(pocketdec.Extractor, gen, TEST_SCHEMA).status == "invalid argument"  # no decide section
        for kwargs in ({"temperature": -1}, {"temperature": "hot"}, {"seed": -1}, {"ctx": 1.5}, {"ctx": 2**31}):
            assert error(pocketdec.Extractor, gen, SCHEMA, head=False, **kwargs).status == "invalid argument"
    assert error(tagger.extract, None).status == "invalid argument"
    assert error(tagger.extract, "好\0").status == "invalid argument"
    assert tagger.extract("好" * 5000) == []  # read in windows, not refused
    assert error(tagger.extract_many, ["好"], parallel=0).status == "invalid argument"
    results = tagger.extract_many(["很好", 7, "很好"], parallel=2)
    assert next(results) == tagger.extract("很好")
    assert error(next, results).status == "invalid argument"


def test_closed_extractor():
    with pocketdec.Model(TIANCHI) as m:
        ex = pocketdec.Extractor(m, SCHEMA)
        many = ex.extract_many(["很好"] * 200, parallel=2)  # more than one read-ahead window (64)
        assert next(many)
        ex.close()
        for fn, args in ((ex.extract, ("很好",)), (ex.extract_many, (["很好"],))):
            with pytest.raises(pocketdec.Error, match="closed"):
                fn(*args)
        with pytest.raises(pocketdec.Error, match="closed"):
            list(many)
        ex2 = pocketdec.Extractor(m, SCHEMA)
    with pytest.raises(pocketdec.Error, match="Model is closed"):
        ex2.extract("很好")


def test_generation_with_a_draft_equals_generation_without():
    reviews = [t for _, t in helpers.dev_reviews(8)]
    draft = os.path.join(TIANCHI_GEN, "draft")
    with pocketdec.Model(TIANCHI_GEN, threads=1) as m:
        with pocketdec.Extractor(m, SCHEMA, head=False) as plain, \
                pocketdec.Extractor(m, SCHEMA, head=False, draft=draft, draft_block=6) as spec:
            want = [as_jsonl(r) for r in plain.extract_many(reviews, parallel=1)]
            assert want and [as_jsonl(spec.extract(t)) for t in reviews] == want
            assert [as_jsonl(r) for r in spec.extract_many(reviews, parallel=3)] == want
        with pocketdec.Extractor(m, SCHEMA, head=False, draft=draft, draft_quantize="q8_0") as quantized:
            assert [as_jsonl(r) for r in quantized.extract_many(reviews, parallel=3)] == want
        assert error(pocketdec.Extractor, m, SCHEMA, head=False, draft=draft, draft_block=9).status == "invalid argument"
        assert error(pocketdec.Extractor, m, SCHEMA, head=False, draft=draft, draft_quantize="q4_1").status == \
            "invalid argument"
        assert error(pocketdec.Extractor, m, SCHEMA, head=False, draft=TIANCHI_GEN).status == "i/o error"
    with pocketdec.Model(TIANCHI) as tagger:  # another vocabulary; and a tagger head generates nothing
        assert error(pocketdec.Extractor, tagger, SCHEMA, draft=draft).status == "shape error"
