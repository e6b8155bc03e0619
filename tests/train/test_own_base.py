#!/usr/bin/python3
"""Bring your own base: train_tagger.py --base over a Qwen3 with the real Qwen3 vocabulary, and
pocketdec agreeing with the PyTorch decode on it. Run by meson:

  test_own_base.py POCKETDEC SOURCE_ROOT

Without torch: exits 77 (meson: skipped) saying python3-torch is missing.
Checks:
  - a random tiny Qwen3 (tools/testmodels/make_model.py) carrying tests/fixtures/qwen3/tokenizer.json,
    whose merges cross characters (several Chinese characters in one token), trained by
    `train_tagger.py --base` for a few epochs on 40 Tianchi reviews: the base is left as it was (only
    the adapter and head are written), and head.json's read copy is {chars} (--read-copy auto), the
    first copy still {text};
  - the {chars} copy: every character starts a token, a character that is no token is its byte tokens
    (one review holds such a character), and its bytes are the text's;
  - `pocketdec extract --format jsonl` over the 40 training and 40 dev reviews (and one more) writes exactly the
    records of tagging.decode (fields, in order; confidences within 1e-4), every span's offsets give its
    value (text[start:end] == value), and among the records are spans whose edge falls inside a token
    of the text as Qwen3 merges it (what the {text} copy could not tag);
  - --read-copy text keeps the template's prompt, and the bundled template is left as it is by auto
    with a tokenizer that never merges across characters (whose {chars} and {text} ids are the same).
"""

import csv
import json
import os
import subprocess
import sys
import tempfile

POCKETDEC, ROOT = sys.argv[1:3]
sys.path.insert(0, os.path.join(ROOT, "train"))
import bpe  # noqa: E402
import data as D  # noqa: E402

QWEN3 = os.path.join(ROOT, "tests", "fixtures", "qwen3", "tokenizer.json")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")


def run(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args[:2])}: {r.stderr.strip()}")
    return r.stdout


def inside_token(tok, text, start, end):
    """Whether a span edge (character offsets) falls inside a token of text's plain encoding."""
    edges, off = {0}, 0
    for i in tok.encode_plain(text):
        off += len(tok.token_bytes(i))
        edges.add(off)
    raw = lambda k: len(text[:k].encode("utf-8"))  # noqa: E731
    return raw(start) not in edges or raw(end) not in edges


def main():
    try:
        import torch
    except ImportError:
        print("SKIP: python3-torch is not installed (apt-get install python3-torch libopenblas0-pthread)")
        sys.exit(77)
    import tagging
    import train_tagger
    import lora
    import qwen3
    tok = bpe.load(QWEN3)
    assert tagging.crosses_chars(tok), "the Qwen3 tokenizer should merge across characters"
    tmp = tempfile.mkdtemp(prefix="pd-own-base-")
    base, out = os.path.join(tmp, "base"), os.path.join(tmp, "run")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "testmodels", "make_model.py"), "--layers", "1",
                    "--hidden", "32", "--heads", "2", "--kv-heads", "1", "--head-dim", "16", "--ffn", "48",
                    "--vocab", str(len(tok)), "--tokenizer", QWEN3, "--format", "hf-f32", "--out", base, "--quiet"],
                   check=True)
    before = {f: open(os.path.join(base, f), "rb").read() for f in os.listdir(base)}
    train_tagger.main(["--out", out, "--base", base, "--seed", "1", "--threads", "1", "--limit", "40",
                       "--epochs", "8", "--batch", "8", "--lora-r", "4", "--link-dim", "8", "--min-confidence", "0",
                       "--max-chars", "4096", "--dev-through-pocketdec", "0"])
    assert {f: open(os.path.join(base, f), "rb").read() for f in os.listdir(base)} == before, "the base was changed"
    meta = json.load(open(os.path.join(out, "head", "head.json"), encoding="utf-8"))
    assert meta["prompt"] == "<|fim_prefix|>{text}<|fim_middle|>{chars}<|fim_suffix|>", meta["prompt"]

    # the reviews: the 40 trained on, 40 dev reviews, and one holding 诶 (no token of the vocabulary:
    # three byte tokens)
    train = D.labelled(D.DATA, "train")
    reviews = [(i, t) for i, t, _ in train[:40] + D.labelled(D.DATA, "dev")[:40] + [train[540]]]
    assert "诶" in reviews[-1][1]
    byte_tokens = 0
    for _, text in reviews:
        ids = tagging.chars_ids(tok, text)
        ranges = tagging.prompt(tok, meta, text)[2]
        assert b"".join(tok.token_bytes(i) for i in ids) == text.encode("utf-8")
        assert [b for b, _ in ranges if b in set(tagging.char_starts(text))] == tagging.char_starts(text)[:-1]
        byte_tokens += sum(tagging.midchar(text, ranges))
    assert byte_tokens, "no review holds a character that is no token of the Qwen3 vocabulary"

    # the PyTorch decode
    model = lora.load_peft(qwen3.load_hf(base), os.path.join(out, "adapter")).eval()
    head, _, labels = tagging.load(os.path.join(out, "head"), model.config["hidden_size"])
    want = {}
    with torch.no_grad():
        for i, text in reviews:
            ids, read, ranges = tagging.prompt(tok, meta, text)
            h = model.hidden(torch.tensor([ids]))[0, read:read + len(ranges)]
            recs, trace, _ = tagging.decode(head, meta, h, text, ranges, labels)
            want[str(i)] = (recs, trace["confidences"])

    # pocketdec extract --format jsonl
    src, dst = os.path.join(tmp, "reviews.csv"), os.path.join(tmp, "out.jsonl")
    with open(src, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([("id", "Reviews")] + reviews)
    run([POCKETDEC, "extract", "--model", base, "--adapter", os.path.join(out, "adapter"), "--head",
         os.path.join(out, "head"), "--schema", SCHEMA, "--input", src, "--output", dst, "--format", "jsonl"])
    got = [json.loads(line) for line in open(dst, encoding="utf-8")]
    assert [g["id"] for g in got] == [str(i) for i, _ in reviews]
    texts = dict((str(i), t) for i, t in reviews)
    n_recs, cut = 0, []
    for g in got:
        recs, confidences = want[g["id"]]
        fields = [{k: r[k] for k in ("aspect", "opinion", "category", "polarity")} for r in g["records"]]
        assert fields == recs, f"review {g['id']}: pocketdec {fields} != PyTorch {recs}"
        for r, c in zip(g["records"], confidences):
            assert abs(r["confidence"] - c) <= 1e-4, f"review {g['id']}: confidence {r['confidence']} != {c}"
            for f, (s, e) in r["spans"].items():
                text = texts[g["id"]]
                assert text[s:e] == r[f], f"review {g['id']}: {f} [{s}, {e}) is {text[s:e]!r}, not {r[f]!r}"
                if inside_token(tok, text, s, e):
                    cut.append(r[f])
        n_recs += len(recs)
    assert n_recs >= 20, f"only {n_recs} records: too few to compare"
    assert cut, "no span has an edge inside a Qwen3 token of the text"

    # the read copy as the template says: --read-copy text, and auto over a tokenizer within characters
    tpl = tagging.load_template()
    assert tagging.read_copy(tpl, tok, "text") is tpl
    assert tagging.read_copy(dict(tpl, prompt="{chars}{text}"), tok, "auto")["prompt"] == "{chars}{chars}"
    chars_only = bpe.train([t for _, t in reviews], 600, within_chars=True)
    assert not tagging.crosses_chars(chars_only) and tagging.read_copy(tpl, chars_only, "auto") is tpl
    # (and for such a tokenizer the two encodings are the same ids)
    assert all(tagging.chars_ids(chars_only, t) == chars_only.encode_plain(t) for _, t in reviews)
    print(f"ok: --base over the Qwen3 vocabulary; {n_recs} records equal between pocketdec and PyTorch, "
          f"{len(cut)} spans with an edge inside a Qwen3 token ({', '.join(cut[:5])}), "
          f"{byte_tokens} tokens inside a character")
    import shutil
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
