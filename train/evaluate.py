#!/usr/bin/python3
"""Score a trained model on the dev split in Python (the C pipeline is the reference; this is
the trainer's quick look): greedy generation of the schema's records, records that do not parse
or whose aspect/opinion is not in the review dropped, then optionally the pointer head's
(category, polarity) instead of the generated ones.

  evaluate.py --model DIR/merged --head DIR/head --out DIR [--limit N]
writes DIR/dev_Result_gen.csv and DIR/dev_Result_head.csv (score with tianchi-eval).
"""

import argparse
import os

import torch

import baseline
import bpe
import data as D
import pointer
import qwen3
import tasks


@torch.no_grad()
def generate(model, tok, ids, end, max_new=96):
    cache, out = [], []
    logits = model(torch.tensor([ids]), cache=cache)[0, -1]
    for _ in range(max_new):
        nxt = int(logits.argmax())
        if nxt == end:
            break
        out.append(nxt)
        logits = model(torch.tensor([[nxt]]), cache=cache)[0, -1]
    return tok.decode(out)


def parse(t, text, output):
    """Well-formed records whose spans occur in the review and labels are in the label sets."""
    quads = []
    for rec in output.split(t["record_end"]):
        f = rec.split(t["separator"])
        if len(f) == 4 and f[2] in D.CATEGORIES and f[3] in D.POLARITIES and \
                all(s == "_" or (s and s in text) for s in f[:2]):
            quads.append(tuple(f))
    return quads


@torch.no_grad()
def decide(model, head, tok, t, text, quads, cands):
    out = []
    for a, o, _, _ in quads:
        ids, pos, vis, keys, query = pointer.prompt(tok, text, t["question"].format(aspect=a, opinion=o), cands)
        h = model.hidden(torch.tensor([ids]), torch.tensor([pos]), vis[None])[0]
        best = int(head.scores(h[query][None], h[keys][None])[0].argmax())
        c, p = cands[best].split("/")  # the template's candidate form
        out.append((a, o, c, p))
    return out


def load_head(path, hidden, schema=tasks.SCHEMA):
    """The pointer head of a heads/ directory and the schema's decide candidates."""
    import json
    meta = json.load(open(os.path.join(path, "head.json"), encoding="utf-8"))
    head = pointer.PointerHead(hidden, meta["head_dim"], torch.Generator(), meta["temperature"])
    st = qwen3.read_safetensors(os.path.join(path, "head.safetensors"))
    head.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in st.items()})
    return head, tasks.candidates(tasks.load_template(schema)[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--head")
    ap.add_argument("--out", required=True)
    ap.add_argument("--schema", default=tasks.SCHEMA)
    ap.add_argument("--data", default=D.DATA)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = qwen3.load_hf(a.model).eval()
    tok = bpe.load(os.path.join(a.model, "tokenizer.json"))
    t, _ = tasks.load_template(a.schema)
    head, cands = load_head(a.head, model.config["hidden_size"], a.schema) if a.head else (None, None)
    dev = D.labelled(a.data, "dev")[:a.limit or None]
    gen, dec = [], []
    for rid, text, _ in dev:
        out = generate(model, tok, tok.encode(tasks.full_prompt(t, text)), tok.token_id(t["end"]))
        quads = parse(t, text, out)
        gen.append((rid, quads))
        if head:
            dec.append((rid, decide(model, head, tok, t, text, quads, cands)))
    os.makedirs(a.out, exist_ok=True)
    baseline.write_result(os.path.join(a.out, "dev_Result_gen.csv"), gen)
    if head:
        baseline.write_result(os.path.join(a.out, "dev_Result_head.csv"), dec)
    print(f"wrote {a.out}/dev_Result_gen.csv" + (" and dev_Result_head.csv" if head else ""))


if __name__ == "__main__":
    main()
