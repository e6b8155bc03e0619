#!/usr/bin/python3
"""train/train_draft.py end to end, small: a DFlash draft for models/tianchi-gen trained on the target's
outputs for 24 training reviews (1 epoch), written where pocketdec loads it; `pocketdec generate --draft`
with it gives the text of plain greedy generation for dev prompts, and its summary line counts passes.
The PyTorch draft of the trainer and the float64 reference (tools/testmodels/draft_reference.py) give
the same proposals on the written draft.

Usage: test_train_draft.py POCKETDEC SOURCE_ROOT
Without torch: exits 77 (meson: skipped) saying python3-torch is missing.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

PD, ROOT = sys.argv[1:3]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before torch: one thread, no spinning helpers
sys.path.insert(0, os.path.join(ROOT, "train"))
sys.path.insert(0, os.path.join(ROOT, "tools", "testmodels"))


def main():
    try:
        import torch
    except ImportError:
        print("skipped: python3-torch is not installed")
        sys.exit(77)
    import numpy as np
    import draft_reference
    import reference
    import train_draft as T

    target = os.path.join(ROOT, "models", "tianchi-gen")
    failures = []
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "draft")
        T.main(["--model", target, "--out", out, "--limit", "24", "--dev-limit", "4", "--epochs", "1",
                "--seqs-per-step", "4", "--threads", "1"])
        log = json.load(open(os.path.join(out, "train_log.json")))
        if not (log["steps"] == 6 and log["loss_last"][-1] < log["loss_first"][0] and log["dev"]["passes"] > 0):
            failures.append(f"train_log.json: {log}")
        # the trainer's draft against the float64 reference, on a dev output
        torch.set_num_threads(1)
        tgt, tok = T.load_target(target)
        c = json.load(open(os.path.join(out, "config.json")))
        draft = T.Draft(c)
        sd = T.qwen3.read_safetensors(os.path.join(out, "model.safetensors"))
        draft.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in sd.items()})
        ref_d, ref_t = draft_reference.load_draft(out), reference.load_model(os.path.join(target, "base"))
        layers, mask = c["dflash_config"]["target_layer_ids"], c["dflash_config"]["mask_token_id"]
        template, _ = T.tasks.load_template()
        prompt = tok.encode(T.tasks.full_prompt(template, "颜色很正，就是有点贵，物流很快"))
        ids = prompt + T.greedy(tgt, [prompt], tok.token_id(template["end"]), 40)[0]
        feats = T.layer_states(tgt, ids, layers)
        for start in range(len(prompt), len(ids) - 1, 4):
            block = [ids[start]] + [mask] * (c["dflash_config"]["block_size"] - 1)
            with torch.no_grad():
                h = draft(feats[:start], tgt.model.embed_tokens, torch.tensor([start]), torch.tensor([block]))
                z = tgt.logits(h[0, 1:]).numpy()
            r = draft_reference.propose(ref_d, ref_t, feats[:start].numpy(), block)
            diff = float(np.abs(z - r["logits"]).max() / np.abs(r["logits"]).max())
            if diff > 1e-4 or list(z.argmax(-1)) != list(r["tokens"]):
                failures.append(f"position {start}: the trainer's draft and the reference differ ({diff:.2e})")
        # pocketdec loads it: the same text as without a draft
        summary = re.compile(r"pocketdec: (\d+) tokens in (\d+) passes")
        for text in ("质地很好，颜色也很正，就是有点贵", "宝贝收到了，产品非常的不好"):
            p = T.tasks.full_prompt(template, text)
            args = [PD, "generate", "--model", target, "--threads", "1", "--max-tokens", "80", "--prompt", p]
            plain = subprocess.run(args, capture_output=True)
            spec = subprocess.run(args + ["--draft", out], capture_output=True)
            m = summary.search(spec.stderr.decode(errors="replace"))
            if plain.returncode or spec.returncode or plain.stdout != spec.stdout or not m:
                failures.append(f"{text}: {plain.stdout!r} / {spec.stdout!r} {spec.stderr[-300:]!r}")
    for f in failures:
        print("FAIL", f)
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
