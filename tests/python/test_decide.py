"""Decider: decisions equal to what `pocketdec score` prints, prefix reuse, layouts, errors."""

import os

import helpers
from helpers import HEAD_FIXTURES, TIANCHI, TIANCHI_GEN, cli_json
from helpers import error_of as error

import numpy as np
import pytest

import pocketdec

QUESTION = "属性：物流；观点：很快"
CANDIDATES = [f"{c}/{p}" for c in ("物流", "包装", "气味", "整体") for p in ("正面", "负面")]
MODEL_A = os.path.join(HEAD_FIXTURES, "model-a")


@pytest.fixture(scope="module")
def gen():
    with pocketdec.Model(TIANCHI_GEN, threads=1) as m:
        yield m


def score(model, text, question, candidates, *options):
    out = cli_json("score", "--model", model, "--text", text, "--question", question, *options,
                   *[x for c in candidates for x in ("--candidate", c)])
    return [(c["label"], c["prob"], c["score"]) for c in out["candidates"]]


def same(decision, want):
    assert [label for label, _ in decision] == [w[0] for w in want]
    probs = np.array([p for _, p in decision], np.float32)
    assert np.array_equal(probs, np.array([w[1] for w in want], np.float64).astype(np.float32))
    assert np.array_equal(np.array(decision.scores, np.float32),
                          np.array([w[2] for w in want], np.float64).astype(np.float32))


@pytest.mark.parametrize("layout", [None, "sequential", "parallel"])
def test_decision_equals_the_command(gen, layout):
    with pocketdec.Decider(gen, layout=layout) as d:
        dec = d.decide(helpers.REVIEW, QUESTION, CANDIDATES)
        same(dec, score(TIANCHI_GEN, helpers.REVIEW, QUESTION, CANDIDATES,
                        *(["--layout", layout] if layout else [])))
        assert dec.forward_passes == 1 and dec.prompt_tokens > len(CANDIDATES) and dec.best == "物流/正面"
        assert d.head_type == "pointer" and d.labels is None


def test_classifier_and_verbalizer():
    with pocketdec.Model(MODEL_A) as m:
        with pocketdec.Decider(m, os.path.join(HEAD_FIXTURES, "head-a-classifier")) as d:
            want = score(MODEL_A, "hello", "q", [], "--head", os.path.join(HEAD_FIXTURES, "head-a-classifier"))
            assert d.head_type == "classifier" and d.labels == [w[0] for w in want]
            same(d.decide("hello", "q"), want)
            sub = d.decide("hello", "q", ["333", "5"])
            assert [label for label, _ in sub] == ["333", "5"]
        with pocketdec.Decider(m) as d:  # no head, no bundle: the LM's log-probabilities
            assert d.head_type == "verbalizer"
            same(d.decide("hello", "q", ["a", "bb"]), score(MODEL_A, "hello", "q", ["a", "bb"]))


def test_set_text_reuses_the_text(gen):
    with pocketdec.Decider(gen) as d, pocketdec.Decider(gen) as fresh:
        d.set_text(helpers.REVIEW)
        for q in (QUESTION, "属性：包装；观点：很好"):
            for layout in ("parallel", "sequential"):
                reused = d.decide(None, q, CANDIDATES, layout=layout)
                whole = fresh.decide(helpers.REVIEW, q, CANDIDATES, layout=layout)
                assert list(reused) == list(whole) and reused.scores == whole.scores
        d.decide("很好用", QUESTION, CANDIDATES)  # a text given replaces the document
        assert list(d.decide(None, QUESTION, CANDIDATES, layout="sequential")) == \
            list(fresh.decide("很好用", QUESTION, CANDIDATES, layout="sequential"))


def test_bad_input(gen, tmp_path):
    with pocketdec.Model(TIANCHI) as tagger_model:
        e = error(pocketdec.Decider, tagger_model)  # the bundle's head is a tagger
        assert e.status == "invalid argument" and "tagger" in e.message
    assert error(pocketdec.Decider, gen, tmp_path).status == "i/o error"
    assert error(pocketdec.Decider, TIANCHI_GEN).status == "invalid argument"  # a path, not a Model
    e = error(pocketdec.Decider, gen, os.path.join(HEAD_FIXTURES, "bad", "notjson"))
    assert e.status == "format error" and "head.json" in e.message
    assert error(pocketdec.Decider, gen, layout="diagonal").status == "invalid argument"
    assert error(pocketdec.Decider, gen, threads=-1).status == "invalid argument"
    with pocketdec.Decider(gen) as d:
        assert error(d.decide, helpers.REVIEW, QUESTION, "物流/正面").status == "invalid argument"
        assert error(d.decide, helpers.REVIEW, QUESTION, [1, 2]).status == "invalid argument"
        assert error(d.decide, "a\0b", QUESTION, CANDIDATES).status == "invalid argument"
        assert error(d.decide, helpers.REVIEW, QUESTION, []).status == "invalid argument"
        assert error(d.decide, helpers.REVIEW, QUESTION, ["x"] * 4097).status == "limit exceeded"
        assert error(d.decide, None, QUESTION, CANDIDATES).code  # no text yet
        assert d.decide(helpers.REVIEW, QUESTION, CANDIDATES).best == "物流/正面"  # still usable
    e = error(d.decide, helpers.REVIEW, QUESTION, CANDIDATES)
    assert "closed" in e.message
    with pocketdec.Decider(gen, ctx=16) as d:
        assert error(d.decide, helpers.REVIEW, QUESTION, CANDIDATES).status == "context full"
