#!/usr/bin/python3
"""Write the tagger-head test fixtures: a random model whose tokenizer carries the layout markers,
random tagger heads (valid ones, with and without sparse features, and one broken way per validation
error), and what the float64 reference of tools/testmodels/make_head.py decodes for each text.

Usage: make_fixtures.py OUTDIR STAMP
"""
import itertools
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
import tag_features  # noqa: E402

PY = sys.executable
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
VOCAB, HIDDEN = 300, 64
SHAPE = ["--layers", "2", "--hidden", str(HIDDEN), "--heads", "4", "--kv-heads", "2", "--head-dim", "16",
         "--ffn", "128"]
# Without ASCII letters the synthetic tokenizer has no merge to apply: one token per byte, so a
# Chinese character is three tokens, two of which start inside it.
TEXTS = ["12, 34; 56! 7.8 (9)", "很好，超值，很好用", "包装 好看，味道 5分! 物流 快快快。", "好",
         "1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0"]
# Sparse features also see: lexicon terms that overlap (很好用 over 很好 and 好用, 装很好 across 包装
# and 很好), letters (each alone between non-letters, so no merge applies), 2- and 4-byte
# characters, tab and U+3000, every clause punctuation, long gaps between spans, and the polarity
# table's terms (DEFAULT_POLARITY): negation before, inside and across a clause from a valued term.
FEATURE_TEXTS = TEXTS + ["包装很好用，味道超值！物流快快快。", "A1好b,很好～c?包装;不错；超值~5.",
                         "é好😀，包装\t很好　用", "包装很好很好很好很好很好很好很好很好物流很快", "很好用？好",
                         "包装太差，不好用没有很好，超值不 不错,不快快快没味道"]
ORDER = list(make_model.bytes_to_unicode())


MARKED_PROMPT = "<|fim_prefix|>{marked}<|fim_middle|>{text}<|fim_suffix|>"
# Both copies one character at a time: texts whose letters the tokenizer would merge as {text} are
# then one token a byte (each character encoded alone), which the reference builds with text_ids.
CHARS_PROMPT = "<|fim_prefix|>{chars}<|fim_middle|>{chars}<|fim_suffix|>"
CHARS_TEXTS = TEXTS + ["is Cm 包装很好", "wIk，好用Zk很好"]
# aspect and opinion terms, 好 under both (nested marks), 很好 inside 很好用 (longest first)
GAZETTEER = ({"aspect": ["<|box_start|>", "<|box_end|>"], "opinion": ["<|fim_prefix|>", "<|fim_suffix|>"]},
             ["# a comment", "aspect\t包装", "aspect\t味道", "aspect\t物流", "opinion\t很好", "opinion\t好用",
              "opinion\t很好用", "opinion\t超值", "opinion\t快快", "", "aspect\t好", "opinion\t好", "aspect\t5"])


def text_ids(text):
    """One id a byte: the synthetic tokenizer merges only a letter or a space followed by a letter."""
    if any(b.isascii() and b.isalpha() and (a.isascii() and a.isalpha() or a == " ") for a, b in zip(text, text[1:])):
        raise SystemExit(f"make_fixtures: {text!r} would be merged by the tokenizer")
    return [ORDER.index(b) for b in text.encode()]


def schema_fields():
    import yaml
    with open(SCHEMA) as f:
        doc = yaml.safe_load(f)
    return [fd["name"] for fd in doc["fields"]], bool(doc.get("limits", {}).get("distinct_records", False))


edit_json = make_head.edit_json
# Broken term files (the gazetteer's format, the lexicon's too): name, body, status, a word of the message.
TERM_FILES = (("no-tab", "aspect\t包装\naspect 味道\n", "format", "{file}:2"),
              ("field", "category\t好\n", "format", "category"),
              ("long-term", "opinion\t" + "好" * 65 + "\n", "limit", "65"),
              ("not-utf8", "opinion\t\udcff\n", "format", "UTF-8"),
              ("control", "opinion\t好\x01\n", "format", "control"),
              ("empty-term", "opinion\t\n", "format", "empty"),
              ("nul", "opinion\t好\0\n", "format", "NUL"))


def write_text(path, body):
    """body as UTF-8, lone surrogates as the bytes they stand for (text that is not UTF-8)."""
    with open(path, "wb") as f:
        f.write(body.encode("utf-8", "surrogateescape"))


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
    for value in ("high", 1.5, -0.1):
        d = head(f"min-confidence-{value}")
        edit_json(d, min_confidence=value)
        add(f"min_confidence {value}", d, "format", "min_confidence")
    for value in (8, 20.5, "long"):
        d = head(f"max-chars-{value}")
        edit_json(d, max_chars=value)
        add(f"max_chars {value}", d, "format", "max_chars")
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
    for name, body, status, word in TERM_FILES:
        d = head("gazetteer-" + name, **gaz)
        write_text(os.path.join(d, "gazetteer.tsv"), body)
        add(f"gazetteer file: {name}", d, status, word.format(file="gazetteer.tsv"))
    d = head("gazetteer-marker", **gaz)
    edit_json(d, gazetteer={"file": "gazetteer.tsv", "marks": dict(GAZETTEER[0], aspect=["<|box_start|>", "<|nope|>"])})
    add("gazetteer marker that is no token", d, "format", "<|nope|>", "bind")
    bad_feature_heads(bad, head, add)
    return cases


def bad_feature_heads(bad, head, add):
    """One head per refusal of sparse features: head.json's "features", its templates, the lexicon
    and memory files, the tables."""
    import numpy as np

    def features(name, change, **kw):
        d = head(name, features={}, **kw)
        with open(os.path.join(d, "head.json")) as f:
            meta = json.load(f)
        edit_json(d, features=change(meta["features"]))
        return d

    def without(key):
        return lambda f: {k: v for k, v in f.items() if k != key}

    def fnv(**hash_keys):
        return lambda f: dict(f, hash=hash_keys)
    many = [f"c[{a}] kind[{b}]" for a in range(-4, 5) for b in range(-4, 5)][:65]
    for name, change, status, word in (
            ("features-array", lambda f: [], "format", '"features"'),
            ("features-key", lambda f: dict(f, hashes=1), "format", "hashes"),
            ("features-no-hash", without("hash"), "format", "features.hash"),
            ("hash-function", fnv(function="md5", seed=0), "format", "md5"),
            ("hash-seed-negative", fnv(function="fnv1a64", seed=-1), "format", "features.hash.seed"),
            ("hash-seed-big", fnv(function="fnv1a64", seed=2 ** 32), "format", "4294967296"),
            ("hash-seed-text", fnv(function="fnv1a64", seed="1"), "format", "features.hash.seed"),
            ("hash-no-seed", fnv(function="fnv1a64"), "format", "features.hash.seed"),
            ("hash-key", fnv(function="fnv1a64", seed=0, salt=1), "format", "salt"),
            ("lexicon-name", lambda f: dict(f, lexicon=5), "format", "features.lexicon"),
            ("memory-name", lambda f: dict(f, memory=""), "format", "features.memory"),
            ("no-lexicon", without("lexicon"), "format", "features.lexicon"),
            ("no-memory", without("memory"), "format", "features.memory"),
            ("polarity-name", lambda f: dict(f, polarity=["polarity.tsv"]), "format", "features.polarity"),
            ("no-polarity", without("polarity"), "format", "features.polarity"),
            ("tag-array", lambda f: dict(f, tag=[97]), "format", "features.tag"),
            ("tag-key", lambda f: dict(f, tag=dict(f["tag"], bucket=3)), "format", "bucket"),
            ("tag-buckets-zero", lambda f: dict(f, tag=dict(f["tag"], buckets=0)), "format", "features.tag.buckets"),
            ("tag-buckets-real", lambda f: dict(f, tag=dict(f["tag"], buckets=97.0)), "format", "features.tag.buckets"),
            ("tag-buckets-big", lambda f: dict(f, tag=dict(f["tag"], buckets=2 ** 24 + 1)), "limit",
             "features.tag.buckets"),
            ("link-no-buckets", lambda f: dict(f, link={"templates": ["none"]}), "format", "features.link.buckets"),
            ("tag-no-templates", lambda f: dict(f, tag={"buckets": 97, "templates": []}), "format",
             "features.tag.templates"),
            ("tag-templates-many", lambda f: dict(f, tag={"buckets": 97, "templates": many}), "limit", "65 templates"),
            ("tag-template-number", lambda f: dict(f, tag={"buckets": 97, "templates": ["c[0]", 3]}), "format",
             "templates[1]"),
            ("tag-template-twice", lambda f: dict(f, tag={"buckets": 97, "templates": ["c[0]", "kind[0]", "c[0]"]}),
             "format", "repeats")):
        add(f"features: {name}", features(name, change), status, word)
    for i, (decision, tpl, status, word) in enumerate((
            ("tag", "c[5]", "format", "c[5]"), ("tag", "c[+1]", "format", "c[+1]"), ("tag", "c[-0]", "format", "c[-0]"),
            ("tag", "c[0", "format", "c[0"), ("tag", "c", "format", "c[k]"), ("tag", "word[0]", "format", "word[0]"),
            ("tag", "dist", "format", "'dist'"), ("tag", "c[0]  c[1]", "format", "single spaces"),
            ("tag", " c[0]", "format", "single spaces"), ("tag", "", "format", "single spaces"),
            ("tag", "c[0] c[1] c[2] c[3] c[4]", "limit", "5 atoms"), ("tag", "lex.polarity[0]", "format", "polarity"),
            ("tag", "lex.aspect", "format", "lex.FIELD[k]"), ("tag", "bias c[0]", "format", "'bias'"),
            ("link", "text.aspect", "format", "text.aspect"), ("link", "from[1]", "format", "from[1]"),
            ("link", "none none none none none", "limit", "5 atoms"),
            ("label", "chars.aspect clause", "format", "multi-valued"),
            ("label", "chars.aspect bigrams.opinion", "format", "multi-valued"), ("label", "left[0]", "format", "left[0]"),
            ("label", "right[5]", "format", "right[5]"), ("label", "text.category", "format", "category"),
            ("label", "c[0]", "format", "'c[0]'"), ("label", "memory memory.aspect", "format", "memory.aspect"))):
        d = features(f"template-{i}", lambda f: dict(f, **{decision: {"buckets": 53, "templates": ["bias", tpl]}}))
        add(f"features.{decision} template {tpl!r}", d, status, word)
    d = features("link-one-span", lambda f: dict(f, link={"buckets": 61, "templates": ["none"]}), spans=["opinion"])
    add("features.link on a head without a link", d, "format", "features.link")
    d = features("label-no-labels", lambda f: dict(f, label={"buckets": 53, "templates": ["bias"]}), labels=False)
    add("features.label on a head without labels", d, "format", "features.label")
    for name in ("lexicon.tsv", "memory.tsv", "polarity.tsv"):
        d = head("no-" + name, features={})
        os.remove(os.path.join(d, name))
        add(f"features: {name} missing", d, "io", name)
    for name, body, status, word in TERM_FILES:
        d = head("lexicon-" + name, features={})
        write_text(os.path.join(d, "lexicon.tsv"), body)
        add(f"features: lexicon file: {name}", d, status, word.format(file="lexicon.tsv"))
    memory_files = (
        ("memory-fields", "物流\t很快\t物流\t正面\n物流\t很快\t物流\n", "format", "memory.tsv:2"),
        ("memory-extra", "物流\t很快\t物流\t正面\t正面\n", "format", "memory.tsv:1"),
        ("memory-label", "物流\t很快\t物流\t超好\n", "format", "超好"),
        ("memory-twice", "物流\t很快\t物流\t正面\n包装\t很好\t包装\t正面\n物流\t很快\t物流\t负面\n", "format",
         "memory.tsv:3"),
        ("memory-utf8", "物流\t很\udcff\t物流\t正面\n", "format", "UTF-8"),
        ("memory-control", "物流\t很\x7f\t物流\t正面\n", "format", "control"),
        ("memory-empty", "物流\t\t物流\t正面\n", "format", "empty"),
        ("memory-nul", "物流\t很快\t物流\t正面\0\n", "format", "NUL"))
    polarity_files = (
        ("polarity-no-tab", "很好\t1.5\n不好 -2\n", "format", "polarity.tsv:2"),
        ("polarity-word", "很好\tgood\n", "format", "'good'"),
        ("polarity-nan", "很好\tnan\n", "format", "'nan'"),
        ("polarity-inf", "# a comment\n很好\t-inf\n", "format", "polarity.tsv:2"),
        ("polarity-huge", "很好\t1e999\n", "format", "'1e999'"),
        ("polarity-hex", "很好\t0x1p3\n", "format", "'0x1p3'"),
        ("polarity-space", "很好\t 1.5\n", "format", "polarity.tsv:1"),
        ("polarity-trailing", "很好\t1.5x\n", "format", "'1.5x'"),
        ("polarity-empty-value", "很好\t\n", "format", "polarity.tsv:1"),
        ("polarity-twice", "很好\t1.5\n不\tnegation\n很好\t2\n", "format", "polarity.tsv:3"),
        ("polarity-negation-twice", "不\tnegation\n不\t-0.5\n不\tnegation\n", "format", "negation"),
        ("polarity-long", "好" * 17 + "\t1\n", "limit", "17 characters"),
        ("polarity-utf8", "很\udcff\t1\n", "format", "UTF-8"),
        ("polarity-control", "很\x01\t1\n", "format", "control"),
        ("polarity-empty-term", "\t1\n", "format", "empty"),
        ("polarity-nul", "很好\t1\0\n", "format", "NUL"))
    for file, cases in (("memory.tsv", memory_files), ("polarity.tsv", polarity_files)):
        for name, body, status, word in cases:
            d = head(name, features={})
            write_text(os.path.join(d, file), body)
            add(f"features: {name}", d, status, word)
    for name, kw, drop, replace, word in (
            ("table-missing", {}, ["features.tag"], {}, "features.tag"),
            ("table-rows", {}, [], {"features.tag": np.zeros((96, 5))}, "features.tag"),
            ("table-norecord", dict(no_record=True), [], {"features.label": np.zeros((53, 39))}, "features.label"),
            ("table-link-1d", {}, [], {"features.link": np.zeros(61)}, "features.link"),
            ("table-extra", {}, [], {"features.extra": np.zeros((3, 1))}, "features.extra")):
        d = head(name, features={}, **kw)
        edit_tensors(d, drop=drop, **replace)
        add(f"features: tensor {name}", d, "shape", word)
    d = features("table-undeclared", without("link"))
    add("features: features.link without features.link in head.json", d, "shape", "features.link")
    d = head("table-no-features")
    edit_tensors(d, **{"features.tag": np.zeros((97, 5))})
    add("features: features.tag on a head without features", d, "shape", "features.tag")


def decode(model, name, hdir, texts, fields, distinct):
    """The reference's decode of each text with the head in hdir."""
    markers = {m: VOCAB - 5 + i for i, m in enumerate(make_head.MARKERS)}
    head, cases = make_head.load_head(hdir), []
    terms = None
    if "gazetteer" in head["meta"]:
        terms = {}
        for line in GAZETTEER[1]:
            if line and not line.startswith("#"):
                field, term = line.split("\t")
                terms.setdefault(term, set()).add(field)
    for text in texts:
        ids, read_start = make_head.tag_prompt(head, lambda part: [markers[part]], text_ids, text, terms)
        exp = make_head.tag_decode(model, head, ids, read_start, [bytes([b]) for b in text.encode()], fields, distinct)
        exp.update({"name": f"{name}: {text}", "head": hdir, "text": text})
        cases.append(exp)
    return head, cases


def remember(hdir, head, cases, rng):
    """Rewrite the head's memory.tsv from the spans its cases found (the spans do not depend on the
    memory, only links and labels do): about half the (to, from) pairs, and some lone spans, with
    random labels, so that memory atoms both hit and miss."""
    meta = head["meta"]
    spans, labels, keys = meta["spans"], meta.get("labels"), {}
    for c in cases:
        by_field = {f: [s["text"] for s in c["spans"] if s["field"] == f] for f in spans}
        pairs = itertools.product(*[by_field[f] + ["_"] for f in spans])
        for k in pairs:
            writable = all(ord(ch) >= 0x20 and ch != "\x7f" for t in k for ch in t)  # a file's fields cannot hold a TAB
            if writable and any(t != "_" for t in k) and rng.random() < 0.5:
                keys[k] = "\t".join(labels[rng.integers(len(labels))]) if labels else None
    with open(os.path.join(hdir, "memory.tsv"), "w", encoding="utf-8") as f:
        for k, lab in keys.items():
            f.write("\t".join(list(k) + ([lab] if lab else [])) + "\n")


def feature_heads(model, out, fields, distinct):
    """Heads with sparse features (every atom, small bucket counts), decoded twice: once to find
    their spans, once with a memory made of them. Checks that the texts exercise what they are for."""
    import numpy as np
    heads = {"pair-features": dict(seed=21, label_states=["first", "last"], no_record=True,
                                   features=dict(seed=0x9E3779B9)),
             "single-features": dict(seed=22, spans=["opinion"], features=dict(seed=0, buckets=(61, 53, 97))),
             "plain-features": dict(seed=23, labels=False, features=dict(seed=4294967295))}
    rng, cases = np.random.default_rng(0xFEA7), []
    for name, kw in heads.items():
        hdir = os.path.join(out, "head-" + name)
        make_head.write_tagger(hdir, HIDDEN, 16, **kw)
        head, first = decode(model, name, hdir, FEATURE_TEXTS, fields, distinct)
        remember(hdir, head, first, rng)
        head, found = decode(model, name, hdir, FEATURE_TEXTS, fields, distinct)
        if [c["spans"] for c in found] != [c["spans"] for c in first]:
            raise SystemExit(f"make_fixtures: {name}: the memory changed the spans")
        hits = head["features"].hits
        if (head["meta"].get("link") and not hits["link memory"]) or (head["meta"].get("labels") and
                                                                       not hits["label memory"]):
            raise SystemExit(f"make_fixtures: {name}: no memory hit ({hits})")
        cases += found
    marks = {f: sum(m != "-" for t in FEATURE_TEXTS for m in tag_features.lexicon_marks(
        t, tag_features.DEFAULT_LEXICON[f])) for f in ("aspect", "opinion")}
    if min(marks.values()) < 5:
        raise SystemExit(f"make_fixtures: the texts hold too few lexicon matches ({marks})")
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
    heads = {"pair": dict(seed=1), "pair-bf16": dict(seed=2, dtype="BF16"),
             "pair-ends": dict(seed=5, label_states=["first", "last"]),
             "single-ends": dict(seed=6, spans=["opinion"], label_states=["last", "first"]),
             "single": dict(seed=3, spans=["opinion"]), "plain": dict(seed=4, labels=False, transitions=False),
             "pair-gazetteer": dict(seed=7, label_states=["first", "last"], prompt=MARKED_PROMPT, gazetteer=GAZETTEER),
             "pair-norecord": dict(seed=8, label_states=["first", "last"], no_record=True),
             "pair-posterior": dict(seed=10, span_decoding="posterior"),
             "single-posterior": dict(seed=11, spans=["opinion"],
                                      span_decoding={"rule": "posterior", "threshold": 0.2}),
             "pair-confident": dict(seed=12, min_confidence=0.05)}
    fields, distinct = schema_fields()
    cases = []
    for name, kw in heads.items():
        hdir = os.path.join(out, "head-" + name)
        make_head.write_tagger(hdir, HIDDEN, 16, **kw)
        cases += decode(model, name, hdir, TEXTS, fields, distinct)[1]
    with open(tok, encoding="utf-8") as f:  # the {chars} head reads texts whose letters {text} would merge
        merges = {tuple(m.split(" ")) for m in json.load(f)["model"]["merges"]}
    if sum(any(pair in merges for pair in zip(t, t[1:])) for t in CHARS_TEXTS) < 2:
        raise SystemExit("make_fixtures: the {chars} texts need letters the tokenizer merges")
    hdir = os.path.join(out, "head-pair-chars")
    make_head.write_tagger(hdir, HIDDEN, 16, seed=13, prompt=CHARS_PROMPT)
    cases += decode(model, "pair-chars", hdir, CHARS_TEXTS, fields, distinct)[1]
    n_spans = sum(len(c["spans"]) for c in cases)
    n_links = sum(1 for c in cases for l in c["links"] if l["choice"] >= 0)
    if n_spans < 10 or n_links < 2:
        raise SystemExit(f"make_fixtures: the random heads find too little ({n_spans} spans, {n_links} links)")
    decided = [max(range(len(l)), key=l.__getitem__) == len(l) - 1
               for c in cases if c["name"].startswith("pair-norecord:") for l in c["label_logits"]]
    if not 0 < sum(decided) < len(decided):
        raise SystemExit(f"make_fixtures: the no-record head drops {sum(decided)} of {len(decided)} records; "
                         "the test needs some dropped and some kept")
    sure = [c for c in cases if c["name"].startswith("pair-confident:")]
    if not sum(c["unsure_dropped"] for c in sure) or not sum(len(c["records"]) for c in sure):
        raise SystemExit("make_fixtures: the min_confidence head must drop some records and keep others")
    post = [c for c in cases if c["name"].startswith(("pair-posterior:", "single-posterior:"))]
    if sum(len(c["spans"]) for c in post) < 4 or not any(c["overlaps_skipped"] for c in post):
        raise SystemExit("make_fixtures: the posterior heads need spans, and a span dropped for an overlap")
    cases += feature_heads(model, out, fields, distinct)
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
