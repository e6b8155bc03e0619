#!/usr/bin/python3
"""Write the tagger-head test fixtures: a random model whose tokenizer carries the layout markers,
random tagger heads (valid ones and one broken way per validation error), and what the float64
reference of tools/testmodels/make_head.py decodes for each text.

Usage: make_fixtures.py OUTDIR STAMP
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools", "testmodels")
sys.path.insert(0, TOOLS)
import make_head  # noqa: E402
import make_model  # noqa: E402
import reference  # noqa: E402

PY = sys.executable
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
VOCAB, HIDDEN = 300, 64
SHAPE = ["--layers", "2", "--hidden", str(HIDDEN), "--heads", "4", "--kv-heads", "2", "--head-dim", "16",
         "--ffn", "128"]
# Without ASCII letters the synthetic tokenizer has no merge to apply: one token per byte, so a
# Chinese character is three tokens, two of which start inside it.
TEXTS = ["12, 34; 56! 7.8 (9)", "很好，超值，很好用", "包装 好看，味道 5分! 物流 快快快。", "好",
         "1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0"]
ORDER = list(make_model.bytes_to_unicode())


MARKED_PROMPT = "<|fim_prefix|>{marked}<|fim_middle|>{text}<|fim_suffix|>"
# aspect and opinion terms, 好 under both (nested marks), 很好 inside 很好用 (longest first)
GAZETTEER = ({"aspect": ["<|box_start|>", "<|box_end|>"], "opinion": ["<|fim_prefix|>", "<|fim_suffix|>"]},
             ["# a comment", "aspect\t包装", "aspect\t味道", "aspect\t物流", "opinion\t很好", "opinion\t好用",
              "opinion\t很好用", "opinion\t超值", "opinion\t快快", "", "aspect\t好", "opinion\t好", "aspect\t5"])


def text_ids(text):
    return [ORDER.index(b) for b in text.encode()]


def schema_fields():
    import yaml
    with open(SCHEMA) as f:
        doc = yaml.safe_load(f)
    return [fd["name"] for fd in doc["fields"]], bool(doc.get("limits", {}).get("distinct_records", False))


edit_json = make_head.edit_json


def edit_tensors(d, drop=(), **replace):
    p = os.path.join(d, "head.safetensors")
    t = {k: v for k, v in make_head.load_head(d)["t"].items() if k not in drop}
    t.update(replace)
    make_head.write_safetensors(p, t, "F32")


def write_bad_heads(out):
    """One head per validation error: where it is found (load or bind), the status, a word of the message."""
    bad, cases = os.path.join(out, "bad"), []

    def head(name, **kw):
        d = os.path.join(bad, name)
        make_head.write_tagger(d, kw.pop("hidden", HIDDEN), 16, seed=9, **kw)
        return d

    def add(name, d, status, word, stage="load"):
        cases.append({"name": name, "dir": d, "status": status, "word": word, "stage": stage})

    import numpy as np
    add("missing dir", os.path.join(bad, "nope"), "io", "head.json")
    d = head("notjson")
    with open(os.path.join(d, "head.json"), "w") as f:
        f.write('{"type": "tagger",')
    add("head.json not JSON", d, "format", "JSON")
    d = head("no-prompt")
    edit_json(d, prompt=None)
    add("no prompt", d, "format", "prompt")
    d = head("prompt-no-text")
    edit_json(d, prompt="<|fim_prefix|>")
    add("prompt without {text}", d, "format", "{text}")
    d = head("no-spans")
    edit_json(d, spans=[])
    add("empty spans", d, "format", "spans")
    d = head("three-spans")
    edit_json(d, spans=["aspect", "opinion", "x"])
    add("three span fields", d, "unsupported", "span fields")
    d = head("no-link")
    edit_json(d, link=None)
    add("two spans without link", d, "format", "link")
    d = head("one-span-link", spans=["aspect", "opinion"])
    edit_json(d, spans=["aspect"])
    add("link with one span", d, "format", "link")
    d = head("link-from")
    edit_json(d, link={"from": "opinon", "to": "aspect", "head_dim": 16})
    add("link.from not a span", d, "format", "opinon")
    d = head("link-dim")
    edit_json(d, link={"from": "opinion", "to": "aspect", "head_dim": 0})
    add("link.head_dim", d, "format", "head_dim")
    d = head("labels-empty")
    edit_json(d, labels=[])
    add("empty labels", d, "format", "labels")
    d = head("labels-alone")
    edit_json(d, label_fields=None)
    add("labels without label_fields", d, "format", "label_fields")
    d = head("labels-arity")
    edit_json(d, labels=[["包装"]])
    add("label of the wrong arity", d, "format", "labels[0]")
    d = head("labels-many")
    edit_json(d, labels=[["包装", str(i)] for i in range(4097)])
    add("more labels than PD_MAX_CANDIDATES", d, "limit", "4097")
    d = head("labels-dup")
    edit_json(d, labels=[["包装", "正面"], ["包装", "正面"]])
    add("repeated label", d, "format", "repeats")
    d = head("states-bad")
    edit_json(d, label_states=["first", "middle"])
    add("label_states naming an unknown state", d, "format", "label_states[1]")
    d = head("states-twice")
    edit_json(d, label_states=["last", "last"])
    add("label_states naming a state twice", d, "format", "twice")
    d = head("states-empty")
    edit_json(d, label_states=[])
    add("empty label_states", d, "format", "label_states")
    d = head("states-alone", labels=False)
    edit_json(d, label_states=["first"])
    add("label_states without labels", d, "format", "label_states")
    for name, value, word in (("span-rule", "beam", "span_decoding"),
                              ("span-threshold-zero", {"rule": "posterior", "threshold": 0}, "threshold"),
                              ("span-threshold-big", {"rule": "posterior", "threshold": 1.5}, "threshold"),
                              ("span-threshold-small", {"rule": "posterior", "threshold": 0.005}, "threshold"),
                              ("span-threshold-text", {"rule": "posterior", "threshold": "0.5"}, "threshold"),
                              ("span-viterbi-threshold", {"rule": "viterbi", "threshold": 0.5}, "span_decoding"),
                              ("span-unknown-key", {"rule": "posterior", "thresold": 0.5}, "span_decoding"),
                              ("span-number", 0.5, "span_decoding")):
        d = head(name)
        edit_json(d, span_decoding=value)
        add(f"span_decoding {value!r}", d, "format", word)
    d = head("norecord-bool")
    edit_json(d, no_record="yes")
    add("no_record not a boolean", d, "format", "no_record")
    d = head("norecord-labels", labels=False)
    edit_json(d, no_record=True)
    add("no_record without labels", d, "format", "no_record")
    d = head("norecord-rows")
    edit_json(d, no_record=True)
    add("no_record with label.weight of the labels' rows only", d, "shape", "label.weight")
    d = head("states-width", label_states=["first", "last"])
    edit_json(d, label_states=["last"])
    add("label.weight narrower than label_states", d, "shape", "label.weight")
    d = head("hidden", hidden=32)
    add("tag.weight for another hidden size", d, "shape", "tag.weight")
    d = head("no-tag-weight")
    edit_tensors(d, drop=["tag.weight"])
    add("tag.weight missing", d, "shape", "tag.weight")
    d = head("transitions")
    edit_tensors(d, **{"tag.transitions": np.zeros((5, 4))})
    add("tag.transitions shape", d, "shape", "tag.transitions")
    d = head("no-link-none")
    edit_tensors(d, drop=["link.none"])
    add("link.none missing", d, "shape", "link.none")
    d = head("label-weight")
    edit_tensors(d, **{"label.weight": np.zeros((39, HIDDEN))})
    add("label.weight shape", d, "shape", "label.weight")
    d = head("no-safetensors")
    os.remove(os.path.join(d, "head.safetensors"))
    add("head.safetensors missing", d, "io", "head.safetensors")
    # found when the head is bound to the schema
    d = head("span-unknown")
    edit_json(d, spans=["aspekt", "opinion"], link={"from": "opinion", "to": "aspekt", "head_dim": 16})
    add("span field not in the schema", d, "format", "aspekt", "bind")
    d = head("span-enum")
    edit_json(d, spans=["category", "opinion"], link={"from": "opinion", "to": "category", "head_dim": 16},
              label_fields=["aspect", "polarity"])
    add("span field that is an enum", d, "format", "category", "bind")
    d = head("label-value")
    meta = json.load(open(os.path.join(d, "head.json")))
    meta["labels"][5] = ["包装", "超好"]
    edit_json(d, labels=meta["labels"])
    add("label value not in the enum", d, "format", "超好", "bind")
    d = head("label-field-span", spans=["opinion"])
    edit_json(d, label_fields=["aspect", "polarity"])
    add("label field that is a span field", d, "format", "'aspect'", "bind")
    gaz = dict(prompt=MARKED_PROMPT, gazetteer=GAZETTEER)
    d = head("gazetteer-unmarked", gazetteer=GAZETTEER)
    add("gazetteer without {marked} in the prompt", d, "format", "{marked}")
    d = head("marked-no-gazetteer", prompt=MARKED_PROMPT)
    add("{marked} without a gazetteer", d, "format", "gazetteer")
    d = head("gazetteer-marks-field", **gaz)
    edit_json(d, gazetteer={"file": "gazetteer.tsv", "marks": {"aspekt": ["<|box_start|>", "<|box_end|>"]}})
    add("gazetteer marks for a field that is no span", d, "format", "aspekt")
    d = head("gazetteer-marks-pair", **gaz)
    edit_json(d, gazetteer={"file": "gazetteer.tsv", "marks": {"aspect": ["<|box_start|>"]}})
    add("gazetteer marks not a pair", d, "format", "marks.aspect")
    d = head("gazetteer-no-file", **gaz)
    os.remove(os.path.join(d, "gazetteer.tsv"))
    add("gazetteer file missing", d, "io", "gazetteer.tsv")
    for name, body, status, word in (
            ("gazetteer-no-tab", "aspect\t包装\naspect 味道\n", "format", "gazetteer.tsv:2"),
            ("gazetteer-field", "category\t好\n", "format", "category"),
            ("gazetteer-long-term", "opinion\t" + "好" * 65 + "\n", "limit", "65"),
            ("gazetteer-not-utf8", "opinion\t\udcff\n", "format", "UTF-8"),
            ("gazetteer-empty-term", "opinion\t\n", "format", "empty"),
            ("gazetteer-nul", "opinion\t好\0\n", "format", "NUL")):
        d = head(name, **gaz)
        with open(os.path.join(d, "gazetteer.tsv"), "wb") as f:
            f.write(body.encode("utf-8", "surrogateescape"))
        add(f"gazetteer file: {name}", d, status, word)
    d = head("gazetteer-marker", **gaz)
    edit_json(d, gazetteer={"file": "gazetteer.tsv", "marks": dict(GAZETTEER[0], aspect=["<|box_start|>", "<|nope|>"])})
    add("gazetteer marker that is no token", d, "format", "<|nope|>", "bind")
    return cases


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    tok = os.path.join(out, "tokenizer.json")
    make_head.main(["tokenizer", "--vocab", str(VOCAB), "--seed", "5", "--out", tok])
    mpath = os.path.join(out, "model")
    subprocess.run([PY, os.path.join(TOOLS, "make_model.py"), "--format", "hf-f32", "--vocab", str(VOCAB),
                    "--seed", "61", "--tokenizer", tok, "--out", mpath, "--quiet"] + SHAPE, check=True)
    model = reference.load_model(mpath)
    markers = {m: VOCAB - 5 + i for i, m in enumerate(make_head.MARKERS)}
    heads = {"pair": dict(seed=1), "pair-bf16": dict(seed=2, dtype="BF16"),
             "pair-ends": dict(seed=5, label_states=["first", "last"]),
             "single-ends": dict(seed=6, spans=["opinion"], label_states=["last", "first"]),
             "single": dict(seed=3, spans=["opinion"]), "plain": dict(seed=4, labels=False, transitions=False),
             "pair-gazetteer": dict(seed=7, label_states=["first", "last"], prompt=MARKED_PROMPT, gazetteer=GAZETTEER),
             "pair-norecord": dict(seed=8, label_states=["first", "last"], no_record=True),
             "pair-posterior": dict(seed=10, span_decoding="posterior"),
             "single-posterior": dict(seed=11, spans=["opinion"],
                                      span_decoding={"rule": "posterior", "threshold": 0.2})}
    fields, distinct = schema_fields()
    cases = []
    for name, kw in heads.items():
        hdir = os.path.join(out, "head-" + name)
        make_head.write_tagger(hdir, HIDDEN, 16, **kw)
        head = make_head.load_head(hdir)
        for text in TEXTS:
            terms = None
            if "gazetteer" in head["meta"]:
                terms = {}
                for line in GAZETTEER[1]:
                    if line and not line.startswith("#"):
                        field, term = line.split("\t")
                        terms.setdefault(term, set()).add(field)
            ids, read_start = make_head.tag_prompt(head, lambda part: [markers[part]], text_ids, text, terms)
            exp = make_head.tag_decode(model, head, ids, read_start, [bytes([b]) for b in text.encode()], fields,
                                       distinct)
            exp.update({"name": f"{name}: {text}", "head": hdir, "text": text})
            cases.append(exp)
    n_spans = sum(len(c["spans"]) for c in cases)
    n_links = sum(1 for c in cases for l in c["links"] if l["choice"] >= 0)
    if n_spans < 10 or n_links < 2:
        raise SystemExit(f"make_fixtures: the random heads find too little ({n_spans} spans, {n_links} links)")
    decided = [max(range(len(l)), key=l.__getitem__) == len(l) - 1
               for c in cases if c["name"].startswith("pair-norecord:") for l in c["label_logits"]]
    if not 0 < sum(decided) < len(decided):
        raise SystemExit(f"make_fixtures: the no-record head drops {sum(decided)} of {len(decided)} records; "
                         "the test needs some dropped and some kept")
    post = [c for c in cases if c["name"].startswith(("pair-posterior:", "single-posterior:"))]
    if sum(len(c["spans"]) for c in post) < 4 or not any(c["overlaps_skipped"] for c in post):
        raise SystemExit("make_fixtures: the posterior heads need spans, and a span dropped for an overlap")
    doc = {"model": mpath, "schema": SCHEMA, "fields": fields, "cases": cases, "bad_heads": write_bad_heads(out),
           "pointer_head": None}
    ptr = os.path.join(out, "head-pointer")
    make_head.write_head(ptr, "pointer", HIDDEN, 16)
    doc["pointer_head"] = ptr
    for path in (os.path.join(out, "cases.json"), sys.argv[2]):
        with open(path, "w") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
