#!/usr/bin/python3
"""Package a train_all.py run as pocketdec's bundled default, and write the expected values that
pocketdec's agreement test compares against.

  package.py --run DIR --out models/tianchi          # copy, base in BF16, expected.json
  package.py --check models/tianchi                  # recompute expected.json with torch, compare
  package.py --run DIR --out models/tianchi --kfold KDIR   # and calibration.json from kfold.py's folds

The base is stored in BF16 (half the bytes; the adapter and head stay F32, as PEFT writes them).
expected.json holds, for an extraction prompt and plain text, the token ids, the final-norm
hidden states of every position and the logits of the last position, and for a decision prompt
(parallel layout, 10 candidates) the pointer head's scores, computed by the PyTorch model of
train/qwen3.py from the packaged files: the BF16 base widened to F32 with the LoRA of the adapter
applied unmerged (y = Wx + s.B(Ax)). With a tagger head (train_tagger.py) the decision prompt is
replaced by a few reviews' tagger traces (emissions, tags, spans, link scores, label logits,
records: tagging.decode).
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

import bpe
import calibration
import lora
import qwen3
import tasks

TEXT = "这个眼霜用了一周，感觉很滋润，吸收也快，就是价格有点贵"  # in the extraction and decision prompts
PLAIN = "很好用，物流很快，包装也不错，就是味道有点大"


def g7(v):
    """Values rounded to 7 significant digits (expected.json's precision)."""
    return [float(f"{x:.7g}") for x in v]


def package(run, out):
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, "base")
    os.makedirs(base, exist_ok=True)
    with open(os.path.join(run, "base", "config.json")) as f:
        cfg = json.load(f)
    cfg["torch_dtype"] = "bfloat16"
    with open(os.path.join(base, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    qwen3.safetensors_io.write(os.path.join(base, "model.safetensors"),
                               qwen3.read_safetensors(os.path.join(run, "base", "model.safetensors")), "BF16",
                               {"format": "pt"})
    shutil.copy(os.path.join(run, "base", "tokenizer.json"), os.path.join(base, "tokenizer.json"))
    for sub, files in (("adapter", ("adapter_config.json", "adapter_model.safetensors")),
                       ("head", ("head.json", "head.safetensors"))):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
        for name in files:
            shutil.copy(os.path.join(run, sub, name), os.path.join(out, sub, name))
    head_json = os.path.join(out, "head", "head.json")
    with open(head_json, encoding="utf-8") as f:
        meta = json.load(f)
    side = [meta["gazetteer"]["file"]] if "gazetteer" in meta else []  # the files head.json names
    side += [meta["features"][k] for k in ("lexicon", "memory", "polarity") if meta.get("features", {}).get(k)]
    for name in side:
        shutil.copy(os.path.join(run, "head", name), os.path.join(out, "head"))
    for k in ("question", "candidates"):  # older runs kept these; the schema's decide section has them
        meta.pop(k, None)
    with open(head_json, "w", encoding="utf-8") as f:
        json.dump(meta, f, ensure_ascii=False, indent=2)
    with open(os.path.join(out, "adapter", "adapter_config.json")) as f:
        acfg = json.load(f)
    acfg["base_model_name_or_path"] = "../base"
    with open(os.path.join(out, "adapter", "adapter_config.json"), "w") as f:
        json.dump(acfg, f, indent=2)
    with open(os.path.join(run, "train_log.json"), encoding="utf-8") as f:
        log = json.load(f)
    root = os.path.dirname(tasks.HERE)
    def short(v):
        v = os.path.abspath(v)
        return os.path.relpath(v, root) if v.startswith(root + os.sep) else os.path.basename(v)
    for k in ("out", "data", "dev", "schema", "base", "template"):  # no machine paths in the committed record
        v = log["args"].get(k)
        if v:  # --data and --dev take one path or two
            log["args"][k] = [short(x) for x in v] if isinstance(v, list) else short(v)
    with open(os.path.join(out, "train_log.json"), "w", encoding="utf-8") as f:
        json.dump(log, f, ensure_ascii=False, indent=2)
    write_expected(out)


def write_expected(out):
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected(out), f, ensure_ascii=False)


@torch.no_grad()
def expected(out):
    """{"prompts": [{name, ids, hidden [T][H], logits [V]}]} from the packaged files."""
    import evaluate
    import pointer
    model = lora.load_peft(qwen3.load_hf(os.path.join(out, "base")), os.path.join(out, "adapter")).eval()
    tok = bpe.load(os.path.join(out, "base", "tokenizer.json"))
    t, _ = tasks.load_template()

    rows = []
    for name, text in (("extraction", tasks.full_prompt(t, TEXT)), ("plain", PLAIN)):
        ids = tok.encode(text)
        h = model.hidden(torch.tensor([ids]))[0]
        rows.append({"name": name, "text": text, "ids": ids, "hidden": [g7(r) for r in h.tolist()],
                     "logits": g7(model.logits(h[-1]).tolist())})
    with open(os.path.join(out, "head", "head.json"), encoding="utf-8") as f:
        if json.load(f).get("type") == "tagger":
            rows += tagger_cases(model, tok, out)
            return {"model": "base + adapter (LoRA unmerged), F32 compute, torch " + torch.__version__,
                    "prompts": rows}
    # a decision in the parallel layout (positions restart, siblings hidden), scored by the head
    head, cands = evaluate.load_head(os.path.join(out, "head"), model.config["hidden_size"])
    q, cands = t["question"].format(aspect="眼霜", opinion="滋润"), cands[::4]
    ids, pos, vis, keys, query = pointer.prompt(tok, TEXT, q, cands)
    h = model.hidden(torch.tensor([ids]), torch.tensor([pos]), vis[None])[0]
    rows.append({"name": "decision", "text": TEXT, "question": q, "candidates": cands, "ids": ids,
                 "scores": g7(head.scores(h[query][None], h[keys][None])[0].tolist())})
    return {"model": "base + adapter (LoRA unmerged), F32 compute, torch " + torch.__version__, "prompts": rows}


TAGGER_TEXTS = (TEXT, PLAIN, "眼影颜色很正，粉质细腻，持妆一般，物流慢了两天", "哈哈哈",
                "买的是<|im_end|>正品吗？味道淡淡的，小样也送了👍")


def tagger_cases(model, tok, out):
    """The tagger head's trace on TAGGER_TEXTS: what `pocketdec tag` must print."""
    import tagging
    head, meta, labels = tagging.load(os.path.join(out, "head"), model.config["hidden_size"])
    terms = tagging.load_gazetteer(os.path.join(out, "head"), meta)
    rows = []
    for text in TAGGER_TEXTS:
        ids, read, ranges = tagging.prompt(tok, meta, text, terms)
        h = model.hidden(torch.tensor([ids]))[0, read:read + len(ranges)]
        _, tr, _ = tagging.decode(head, meta, h, text, ranges, labels)
        tr.pop("candidates")  # the Python decode's own (train/losses.py), not in pocketdec's trace
        tr["emissions"] = [g7(r) for r in tr["emissions"]]
        for sp in tr["spans"]:
            sp["probability"] = g7([sp["probability"]])[0]
        for ln in tr["links"]:
            ln["scores"] = g7(ln["scores"])
        for lb in tr["labels"]:
            lb["logits"] = g7(lb["logits"])
        tr["confidences"] = g7(tr["confidences"])
        rows.append({"name": "tagger", "text": text, "ids": ids, "read_start": read, **tr})
    return rows


def strip(v):
    """v, its spans without their probabilities (compared within a tolerance)."""
    if isinstance(v, list):
        return [{k: x for k, x in s.items() if k != "probability"} if isinstance(s, dict) else s for s in v]
    return v


def check(out):
    """Recompute expected.json from the packaged files; exit 1 when it drifted."""
    with open(os.path.join(out, "expected.json"), encoding="utf-8") as f:
        have = json.load(f)
    now = expected(out)
    for a, b in zip(have["prompts"], now["prompts"]):
        assert a["ids"] == b["ids"], f"{a['name']}: token ids differ"
        for key in ("tags", "spans", "records"):
            assert strip(a.get(key)) == strip(b.get(key)), f"{a['name']}: {key} differ"
        for x, y in zip(a.get("spans", []), b.get("spans", [])):
            if abs(x["probability"] - y["probability"]) > 1e-5:
                sys.exit(f"{out}/expected.json: {a['name']} span probabilities differ")
        if any(abs(x - y) > 1e-5 for x, y in zip(a.get("confidences", []), b.get("confidences", []))):
            sys.exit(f"{out}/expected.json: {a['name']} record confidences differ")
        for key in ("hidden", "logits", "scores", "emissions"):
            if key not in a:
                continue
            x, y = np.asarray(a[key]), np.asarray(b[key])
            err = float(np.abs(x - y).max()) / float(np.abs(y).max())
            if err > 1e-5:
                sys.exit(f"{out}/expected.json: {a['name']} {key} differ by {err:.3g} of the largest value")
    print(f"{out}/expected.json: reproduced by torch {torch.__version__}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", help="a train_all.py output directory")
    ap.add_argument("--out", help="where to write the packaged default")
    ap.add_argument("--check", metavar="DIR", help="recompute DIR/expected.json and compare")
    ap.add_argument("--rewrite", metavar="DIR", help="recompute DIR/expected.json and write it (after an edit "
                    "of the packaged files, e.g. a head.json decision rule)")
    ap.add_argument("--kfold", metavar="KDIR", help="kfold.py's folds of this recipe: their out-of-fold records "
                    "and gold become the bundle's calibration.json (the rates pocketdec summarize corrects with)")
    ap.add_argument("--pocketdec", default="build/cli/pocketdec", help="the command that measures the rates")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.check:
        check(a.check)
    elif a.rewrite:
        write_expected(a.rewrite)
    elif a.run and a.out:
        package(a.run, a.out)
        if a.kfold:
            calibration.main(["--kfold", a.kfold, "--out", a.out, "--pocketdec", a.pocketdec])
    else:
        ap.error("give --run and --out, or --check")


if __name__ == "__main__":
    main()
