"""Model and Tokenizer: values equal to what `pocketdec logits/hidden/info/tokenize` print,
and errors for bad input."""

import json
import os

import helpers
from helpers import MODEL_FIXTURES, TIANCHI, cli_json, error_of, run

import numpy as np
import pytest

import pocketdec
from pocketdec import _lib

BASE, ADAPTER = os.path.join(TIANCHI, "base"), os.path.join(TIANCHI, "adapter")


def ids_arg(ids):
    return ",".join(map(str, ids))


def f32(values):
    return np.asarray(values, dtype=np.float64).astype(np.float32)  # %.9g round-trips a float32


@pytest.fixture(scope="module")
def model():
    with pocketdec.Model(TIANCHI) as m:
        yield m


@pytest.mark.parametrize("path, options", [
    (TIANCHI, {}),                                               # a bundle: base/ and adapter/
    (os.path.join(MODEL_FIXTURES, "tiny-hf-f32"), {}),
    (os.path.join(MODEL_FIXTURES, "gqa-gguf-q8_0.gguf"), {}),
    (os.path.join(MODEL_FIXTURES, "gqa-hf-f32"), {"quantize": "q4_0"}),
])
def test_logits_and_hidden_equal_the_command(path, options):
    with pocketdec.Model(path, threads=1, **options) as m:
        ids = list(range(3, 3 + 9)) if m.tokenizer is None else m.tokenizer.encode(helpers.REVIEW)
        extra = [x for k, v in options.items() for x in ("--" + k, v)]
        want_logits = cli_json("logits", "--model", path, "--ids", ids_arg(ids), *extra)
        want_hidden = cli_json("hidden", "--model", path, "--ids", ids_arg(ids), *extra)
        logits, hidden = m.logits(ids), m.hidden(ids)
        assert logits.dtype == np.float32 and logits.shape == (m.config["vocab"],)
        assert hidden.shape == (len(ids), m.config["hidden"])
        assert np.array_equal(logits, f32(want_logits))
        assert np.array_equal(hidden, f32(want_hidden))
        assert np.array_equal(m.logits(np.array(ids, dtype=np.int64)), logits)  # numpy ids too


def test_adapters_as_the_command_applies_them(model):
    ids = model.tokenizer.encode(helpers.REVIEW)
    with pocketdec.Model(BASE, adapters=[(ADAPTER, 1.0)]) as m:
        assert np.array_equal(m.logits(ids), model.logits(ids))
    with pocketdec.Model(BASE, adapters=[(ADAPTER, 0.5)], adapter_mode="merge") as m:
        want = cli_json("logits", "--model", BASE, "--adapter", ADAPTER + ":0.5", "--adapter-mode", "merge",
                        "--ids", ids_arg(ids))
        assert np.array_equal(m.logits(ids), f32(want))
    with pocketdec.Model(BASE) as m:
        assert m.bundle_head is None and not np.array_equal(m.logits(ids), model.logits(ids))


def test_lists_without_numpy(model, monkeypatch):
    ids = model.tokenizer.encode("很好")
    want_logits, want_hidden = model.logits(ids), model.hidden(ids)
    monkeypatch.setattr(_lib, "np", None)
    logits, hidden = model.logits(ids), model.hidden(ids)
    assert isinstance(logits, list) and isinstance(hidden, list) and isinstance(hidden[0], list)
    assert logits == want_logits.tolist() and hidden == want_hidden.tolist()


def test_tokenizer_equals_the_command(model):
    tok_file = os.path.join(BASE, "tokenizer.json")
    texts = [helpers.REVIEW, "买的是<|im_end|>正品吗？👍", "hello world", ""]
    lines = run(helpers.POCKETDEC, "tokenize", "--tokenizer", tok_file,
                stdin="".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts)).splitlines()
    want = [json.loads(x) for x in lines]
    assert [model.tokenizer.encode(t) for t in texts] == want
    with pocketdec.Tokenizer(tok_file) as tok:
        assert [tok.encode(t) for t in texts] == want
        assert len(tok) == len(model.tokenizer) == model.config["vocab"]
        decoded = run(helpers.POCKETDEC, "tokenize", "--tokenizer", tok_file, "--decode",
                      stdin="".join(json.dumps(ids) + "\n" for ids in want)).splitlines()
        assert [tok.decode(ids) for ids in want] == [json.loads(x) for x in decoded]
    end = model.tokenizer.token_id("<|im_end|>")
    assert end is not None and model.tokenizer.token_id("no such token") is None
    assert end not in model.tokenizer.encode("<|im_end|>", plain=True)
    assert model.tokenizer.encode("<|im_end|>") == [end]


def test_info_and_config(model):
    with pocketdec.Model(BASE) as base:  # `info` reads a bundle's base/ alone
        assert base.info() == cli_json("info", "--model", TIANCHI)
    assert model.info()["derived"] is True  # with the adapter applied
    assert model.config["hidden"] == model.info()["hidden"] and model.config["tied_embeddings"] is True
    assert model.bundle_head == os.path.join(TIANCHI, "head")


def test_bad_paths_and_files(tmp_path):
    e = error_of(pocketdec.Model, tmp_path / "missing")
    assert e.status == "i/o error" and "missing" in e.message and e.code == 1
    (tmp_path / "llama").mkdir()
    (tmp_path / "llama" / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"],
                                                                "model_type": "llama"}))
    e = error_of(pocketdec.Model, tmp_path / "llama")
    assert e.status == "unsupported" and "LlamaForCausalLM" in e.message
    (tmp_path / "bad.gguf").write_bytes(b"GGUX" + b"\0" * 20)
    assert error_of(pocketdec.Model, tmp_path / "bad.gguf").status == "format error"
    assert error_of(pocketdec.Model, BASE, adapters=[tmp_path]).status == "i/o error"
    assert error_of(pocketdec.Tokenizer, tmp_path / "tokenizer.json").status == "i/o error"
    assert error_of(pocketdec.Model, "a\0b").status == "invalid argument"
    assert error_of(pocketdec.Model, 42).status == "invalid argument"


def test_bad_arguments(model):
    for kwargs in ({"quantize": "q3"}, {"threads": 0}, {"threads": "2"}, {"layout": "packed"},
                   {"adapters": [(ADAPTER, "heavy")]}, {"adapters": 5}, {"adapter_mode": "both"}):
        assert error_of(pocketdec.Model, BASE, **kwargs).status == "invalid argument", kwargs
    vocab = model.config["vocab"]
    e = error_of(model.logits, [1, vocab])
    assert e.status == "out of range" and str(vocab) in e.message
    assert error_of(model.logits, [1, 2**40]).status == "out of range"
    assert error_of(model.logits, [-1]).status == "out of range"
    for ids in ([], "物流", [1.5], None, [[1, 2]]):
        assert error_of(model.hidden, ids).status == "invalid argument", ids
    assert error_of(model.logits, list(range(5000))).status in ("out of range", "context full")
    assert error_of(model.tokenizer.encode, b"bytes").status == "invalid argument"
    assert error_of(model.tokenizer.encode, "a\0b").status == "invalid argument"
    assert error_of(model.tokenizer.encode, "\ud800").status == "format error"
    assert error_of(model.tokenizer.decode, [vocab]).status == "out of range"


def test_closed_model():
    m = pocketdec.Model(TIANCHI)
    tok = m.tokenizer
    ids = tok.encode("很好")
    with m:
        pass
    assert m.closed and tok.closed
    for fn, args in ((m.logits, (ids,)), (m.hidden, (ids,)), (m.info, ()), (tok.encode, ("很好",)),
                     (tok.decode, (ids,)), (pocketdec.Decider, (m,)), (pocketdec.Extractor, (m, helpers.SCHEMA))):
        e = error_of(fn, *args)
        assert e.status == "invalid argument" and "closed" in e.message, fn
    m.close()  # twice is fine
