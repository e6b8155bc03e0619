"""Sparse features of tagger heads (head.json "features", the wide part): random sections for
make_head.py write --features, and an independent float64 reference of the sums they add to the
emissions, link scores and label logits, written from the format in
docs/extraction-by-decisions.md ("Sparse features").

  random_features(rng, spans, link, labels, n_tags, n_classes, seed, lexicon, memory, buckets)
      -> (head.json's "features", {tensor name: table}, lexicon lines, memory lines)
  Reference(head_dir, meta, tensors)
      .tag(token_bytes)        -> [n_tokens, n_tags]   (tokens that start no character: zeros)
      .link(text, frm, tos)    -> [len(tos) + 1]        (spans as (start, end) characters)
      .label(text, spans)      -> [n_classes]           (spans[k]: field k's span or None)

Characters are Python's: code points of the decoded text.
"""

import itertools
import os
import re

import numpy as np

CLAUSE = set("，。！？,.!?~～；; ")


def fnv1a64(data, seed=0):
    """FNV-1a 64 of bytes, from the basis XOR seed."""
    h = 0xCBF29CE484222325 ^ seed
    for b in data:
        h = ((h ^ b) * 0x100000001B3) % (1 << 64)
    return h


def kind(ch):
    if "0" <= ch <= "9":
        return "d"
    if "A" <= ch <= "Z" or "a" <= ch <= "z":
        return "a"
    if "\u4e00" <= ch <= "\u9fff":
        return "h"
    if ch in " \t\n\r\u3000":
        return "s"
    return "p"


def dist_bucket(d):
    return str(d) if d < 4 else "4" if d < 6 else "6" if d < 10 else "10" if d < 16 else "16"


def lexicon_marks(text, terms):
    """One field's marks over the text: the longest of its terms at each character is a candidate;
    longer first, then earlier, each kept unless it overlaps a kept one; S, or B I... E; - elsewhere."""
    found = []
    for s in range(len(text)):
        longest = max((len(t) for t in terms if text.startswith(t, s)), default=0)
        if longest:
            found.append((-longest, s))
    marks = ["-"] * len(text)
    for neg, s in sorted(found):
        n = -neg
        if all(m == "-" for m in marks[s:s + n]):
            marks[s:s + n] = ["S"] if n == 1 else ["B"] + ["I"] * (n - 2) + ["E"]
    return marks


def clause(text, start, end):
    """The characters from just after the last clause punctuation before start to just before the
    first at or after end."""
    a = max([j + 1 for j in range(start) if text[j] in CLAUSE], default=0)
    b = min([j for j in range(end, len(text)) if text[j] in CLAUSE], default=len(text))
    return a, b


def _lines(path):
    with open(path, encoding="utf-8", newline="") as f:
        return [line[:-1] if line.endswith("\r") else line for line in f.read().split("\n")]


class Reference:
    def __init__(self, head_dir, meta, tensors):
        f = meta["features"]
        self.seed = f["hash"]["seed"]
        self.spans = meta["spans"]
        self.pairing = meta.get("link")
        self.terms = {}
        if "lexicon" in f:
            for line in _lines(os.path.join(head_dir, f["lexicon"])):
                if line and not line.startswith("#"):
                    field, term = line.split("\t", 1)
                    self.terms.setdefault(field, set()).add(term)
        self.memory = {}
        if "memory" in f:
            n = len(self.spans)
            for line in _lines(os.path.join(head_dir, f["memory"])):
                if line:
                    parts = line.split("\t")
                    self.memory[tuple(parts[:n])] = "/".join(parts[n:])
        self.tables = {d: (f[d]["buckets"], f[d]["templates"], np.asarray(tensors["features." + d], np.float64))
                       for d in ("tag", "link", "label") if d in f}
        self.hits = {"link memory": 0, "label memory": 0}  # for the fixtures' coverage checks

    def has(self, decision):
        return decision in self.tables

    def _sum(self, decision, values):
        """The summed rows of every feature: each template's key is its bytes, then 0x1F and the
        value of each atom, for every combination of its atoms' values (values(atom) is a list)."""
        buckets, templates, table = self.tables[decision]
        out = np.zeros(table.shape[1])
        for tpl in templates:
            atoms = [] if tpl == "bias" else tpl.split(" ")
            for combo in itertools.product(*[values(a) for a in atoms]):
                key = tpl.encode() + b"".join(b"\x1f" + v.encode() for v in combo)
                out += table[fnv1a64(key, self.seed) % buckets]
        return out

    def tag(self, token_bytes):
        text = b"".join(token_bytes).decode()
        kinds = [kind(c) for c in text]
        marks = {f: lexicon_marks(text, self.terms.get(f, ())) for f in self.spans}

        def at(seq, j):
            return "<s>" if j < 0 else "</s>" if j >= len(text) else seq[j]

        out = np.zeros((len(token_bytes), self.tables["tag"][2].shape[1]))
        for t, b in enumerate(token_bytes):
            if not b or (b[0] & 0xC0) == 0x80:
                continue  # starts no character: no features
            i = len(b"".join(token_bytes[:t]).decode())

            def values(atom):
                m = re.fullmatch(r"(c|kind|lex\.(.+))\[(-?\d)\]", atom)
                j = i + int(m.group(3))
                seq = text if m.group(1) == "c" else kinds if m.group(1) == "kind" else marks[m.group(2)]
                return [at(seq, j)]
            out[t] = self._sum("tag", values)
        return out

    def link(self, text, frm, tos):
        fk, tk = self.spans.index(self.pairing["from"]), self.spans.index(self.pairing["to"])
        ca, cb = clause(text, *frm)
        shared = {"from": text[frm[0]:frm[1]], "count": str(min(3, len(tos))),
                  "clause": str(min(3, sum(1 for s, e in tos if s >= ca and e <= cb)))}
        out = []
        for to in list(tos) + [None]:
            if to is None:
                v = dict.fromkeys(["to", "dir", "dist", "gap", "break", "between", "memory"], "<none>")
                v["none"] = "1"
            else:
                before = to[1] <= frm[0]
                a, b = (to[1], frm[0]) if before else (frm[1], max(frm[1], to[0]))
                key = [None, None]
                key[fk], key[tk] = text[frm[0]:frm[1]], text[to[0]:to[1]]
                hit = tuple(key) in self.memory
                self.hits["link memory"] += hit
                v = {"none": "0", "to": text[to[0]:to[1]], "dir": "L" if before else "R",
                     "dist": ("L" if before else "R") + dist_bucket(b - a),
                     "gap": text[a:b] if b - a <= 4 else ">4",
                     "break": "1" if any(c in CLAUSE for c in text[a:b]) else "0",
                     "between": str(min(3, sum(1 for s, e in tos if s >= a and e <= b))),
                     "memory": "1" if hit else "0"}
            v.update(shared)
            out.append(self._sum("link", lambda atom: [v[atom]])[0])
        return np.array(out)

    def label(self, text, spans):
        texts = ["_" if sp is None else text[sp[0]:sp[1]] for sp in spans]
        frm = self.spans.index(self.pairing["from"]) if self.pairing else None
        anchor = spans[frm] if frm is not None and spans[frm] is not None else next(s for s in spans if s is not None)
        memory = self.memory.get(tuple(texts), "<none>")
        self.hits["label memory"] += memory != "<none>"
        ca, cb = clause(text, *anchor)

        def values(atom):
            m = re.fullmatch(r"(text|chars|bigrams)\.(.+)", atom)
            if m:
                sp = spans[self.spans.index(m.group(2))]
                s = "" if sp is None else text[sp[0]:sp[1]]
                return ([texts[self.spans.index(m.group(2))]] if m.group(1) == "text" else
                        list(s) if m.group(1) == "chars" else [s[j:j + 2] for j in range(len(s) - 1)])
            m = re.fullmatch(r"(left|right)\[(\d)\]", atom)
            if m:
                j = anchor[0] - int(m.group(2)) if m.group(1) == "left" else anchor[1] - 1 + int(m.group(2))
                return ["<s>" if j < 0 else "</s>" if j >= len(text) else text[j]]
            return {"pair": ["|".join(texts)], "empty": ["".join("1" if s is None else "0" for s in spans)],
                    "clause": list(dict.fromkeys(text[ca:cb])), "memory": [memory]}[atom]
        return self._sum("label", values)


def templates(spans, link, labels):
    """A varied set of templates that uses every atom of each decision the head has."""
    f0, f1 = spans[0], spans[-1]
    tag = ["bias", "c[0]", "c[-1] c[0]", "c[0] c[1]", "c[-4] c[4]", "c[-3] c[-2] c[2] c[3]", "kind[0]",
           "kind[-1] kind[0] kind[1]", "kind[-4] kind[-2] kind[2] kind[4]", "kind[3] c[-1]",
           f"lex.{f0}[-1] lex.{f0}[0] lex.{f1}[1]", f"lex.{f1}[0] c[0]", f"lex.{f0}[-4] lex.{f1}[4]",
           f"lex.{f1}[-3] kind[3]"] + [f"lex.{f}[0]" for f in spans]
    out = {"tag": tag}
    if link:
        out["link"] = ["bias", "none", "from", "to", "dir", "dist", "gap", "break", "between", "clause", "count",
                       "memory", "from to", "dir break dist", "from none", "to between clause count",
                       "gap memory", "dist count"]
    if labels:
        out["label"] = (["bias", "pair", "empty", "left[1]", "left[4]", "right[1]", "right[3]", "clause", "memory",
                         "memory pair", "left[2] right[2] empty", f"chars.{f1} empty", f"clause text.{f0}",
                         f"bigrams.{f0} left[1] right[4]"] +
                        [f"{a}.{f}" for f in spans for a in ("text", "chars", "bigrams")])
    return out


DEFAULT_LEXICON = {"aspect": ["包装", "味道", "物流", "好", "装很好", "A"],
                   "opinion": ["很好", "好用", "很好用", "超值", "快快", "好", "很", "5"]}
DEFAULT_MEMORY = {"aspect": ["物流", "包装", "味道"], "opinion": ["很快", "很好", "超值"]}


def random_features(rng, spans, link, labels, n_tags, n_classes, seed=0, lexicon=None, memory=None,
                    buckets=(97, 61, 53), scale=(0.4, 0.8, 0.5)):
    """A features section using every atom, random tables (small bucket counts, so features
    collide), a lexicon (lines) and a memory (lines; by default records of a few plausible texts
    with random labels)."""
    tpl = templates(spans, link, labels)
    feats = {"hash": {"function": "fnv1a64", "seed": seed}, "lexicon": "lexicon.tsv", "memory": "memory.tsv"}
    tables = {}
    for (d, width), b, s in zip((("tag", n_tags), ("link", 1), ("label", n_classes)), buckets, scale):
        if d in tpl:
            feats[d] = {"buckets": b, "templates": tpl[d]}
            tables["features." + d] = rng.standard_normal((b, width)) * s
    if lexicon is None:
        lexicon = ["# field<TAB>term", ""] + [f"{f}\t{t}" for f in spans for t in DEFAULT_LEXICON.get(f, [])]
    if memory is None:
        memory = []
        for texts in itertools.product(*[DEFAULT_MEMORY.get(f, ["好"]) + ["_"] for f in spans]):
            if any(t != "_" for t in texts) and rng.random() < 0.5:
                memory.append(list(texts))
    memory = ["\t".join(list(k) + (list(labels[rng.integers(len(labels))]) if labels else []))
              for k in dict.fromkeys(tuple(k) for k in memory)]
    return feats, tables, lexicon, memory
