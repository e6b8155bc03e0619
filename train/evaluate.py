#!/usr/bin/python3
"""Score a trained generative model on the dev split through the C library (the pocketdec
Python package, python/pocketdec): greedy generation under the schema's constraint engine,
then, with --head, the pointer head's (category, polarity) for each record; exactly what
`pocketdec extract` computes, so the trainer's dev F1 is the user's.

  evaluate.py --model DIR/merged --head DIR/head --out DIR [--limit N]
writes DIR/dev_Result_gen.csv (and DIR/dev_Result_head.csv) and prints their tianchi-eval figures.
It loads the libpocketdec of build/ (or POCKETDEC_LIBRARY).
"""

import argparse
import os
import sys

import baseline
import data as D
import tasks


def package():
    """The pocketdec package of this checkout (python/), imported when scoring only: load_head
    needs no library."""
    sys.path.insert(0, os.path.join(os.path.dirname(D.HERE), "python"))
    import pocketdec
    return pocketdec


def load_head(path, hidden, schema=tasks.SCHEMA):
    """The PyTorch pointer head of a heads/ directory and the schema's decide candidates
    (package.py and the training tests compare pocketdec's scores against it)."""
    import json

    import torch

    import pointer
    import qwen3
    meta = json.load(open(os.path.join(path, "head.json"), encoding="utf-8"))
    head = pointer.PointerHead(hidden, meta["head_dim"], torch.Generator(), meta["temperature"])
    st = qwen3.read_safetensors(os.path.join(path, "head.safetensors"))
    head.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in st.items()})
    return head, tasks.candidates(tasks.load_template(schema)[0])


def extract(pocketdec, model, schema, head, dev, path):
    """Write the Result.csv of the dev reviews; its figures against their gold quadruples."""
    with pocketdec.Extractor(model, schema, head=head or False) as ex:
        rows = [(rid, [tuple(r.values()) for r in records])
                for (rid, _, _), records in zip(dev, ex.extract_many(text for _, text, _ in dev))]
    baseline.write_result(path, rows)
    gold = [(rid, *q) for rid, _, quads in dev for q in quads]
    return pocketdec.tianchi_eval.score(gold, path, reviews={rid: text for rid, text, _ in dev})["overall"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="an HF directory (e.g. DIR/merged) or DIR/base")
    ap.add_argument("--adapter", help="a PEFT directory applied to --model (e.g. DIR/adapter)")
    ap.add_argument("--head")
    ap.add_argument("--out", required=True)
    ap.add_argument("--schema", default=tasks.SCHEMA)
    ap.add_argument("--data", default=D.DATA)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    dev = D.labelled(a.data, "dev")[:a.limit or None]
    os.makedirs(a.out, exist_ok=True)
    pocketdec = package()
    with pocketdec.Model(a.model, adapters=[a.adapter] if a.adapter else [], threads=a.threads) as model:
        for name, head in (("gen", None), ("head", a.head)):
            if name == "gen" or head:
                path = os.path.join(a.out, f"dev_Result_{name}.csv")
                s = extract(pocketdec, model, a.schema, head, dev, path)
                print(f"{path}: F1 {s['f1']:.4f} (precision {s['precision']:.4f}, recall {s['recall']:.4f}; "
                      f"S {s['matched']} P {s['predicted']} G {s['gold']})")


if __name__ == "__main__":
    main()
