"""Sparse features of tagger heads (head.json "features", the wide part): random sections for
make_head.py write --features, and an independent float64 reference of the sums they add to the
emissions, link scores and label logits, written from the format in
docs/extraction-by-decisions.md ("Sparse features").

  random_features(rng, spans, link, labels, n_tags, n_classes, seed, lexicon, memory, buckets, polarity)
      -> (head.json's "features", {tensor name: table}, lexicon lines, memory lines, polarity lines)
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


def polarity_bucket(v):
    """'0' for |v| < 0.5; else the sign, then the largest of 0.5 1 2 4 8 not above |v|."""
    if abs(v) < 0.5:
        return "0"
    steps = [x for x in (8, 4, 2, 1, 0.5) if abs(v) >= x]
    return ("+" if v > 0 else "-") + ("0.5" if steps[0] == 0.5 else str(steps[0]))


class Polarity:
    """The polarity atoms of one text, from a table {term: value} and the negation and degree words:
    every occurrence of a valued term, listed by start then length."""

    def __init__(self, text, values, negation, degree):
        self.text = text
        occ = lambda terms: sorted((s, s + len(t)) for t in terms for s in range(len(text))  # noqa: E731
                                   if text.startswith(t, s))
        self.found = [(s, e, values[text[s:e]]) for s, e in occ(values)]
        self.words = {"negation": occ(negation), "degree": occ(degree)}

    def strongest(self, c):
        best = None
        for s, e, v in self.found:  # by start, then length: the first of equals stays unless a longer one comes
            if s <= c < e and (best is None or abs(v) > abs(best[2]) or
                               (abs(v) == abs(best[2]) and e - s > best[1] - best[0])):
                best = (s, e, v)
        return best

    def atom(self, name, c):
        if c < 0 or c >= len(self.text):
            return "<s>" if c < 0 else "</s>"
        best = self.strongest(c)
        if name == "pol":
            return polarity_bucket(best[2]) if best else "0"
        if name == "polpos":
            if best is None:
                return "-"
            s, e, _ = best
            return "S" if e - s == 1 else "B" if c == s else "E" if c == e - 1 else "I"
        neg = self.words["negation"]
        if any(s <= c < e for s, e in neg):
            return "n"
        return "1" if any(e <= c <= e + 2 and not set(self.text[e:c]) & CLAUSE for s, e in neg) else "0"

    def stat(self, which, a, b):
        vals = [v for s, e, v in self.found if s >= a and e <= b]
        if not vals:
            return "<none>"
        total = 0.0
        for v in vals:
            total += v
        return polarity_bucket({"sum": total, "min": min(vals), "max": max(vals)}[which])

    def before(self, kind, a, b):
        words = self.words[kind]
        if any(s == a and e <= b for s, e in words):
            return "in"
        return "1" if any(e <= a <= e + 2 and not set(self.text[e:a]) & CLAUSE for s, e in words) else "0"


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
        self.polarity = None
        if "polarity" in f:
            values, neg, deg = {}, set(), set()
            for line in _lines(os.path.join(head_dir, f["polarity"])):
                if line and not line.startswith("#"):
                    term, v = line.split("\t")
                    if v == "negation":
                        neg.add(term)
                    elif v == "degree":
                        deg.add(term)
                    else:
                        values[term] = float(v)
            self.polarity = (values, neg, deg)
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
        pol = Polarity(text, *self.polarity) if self.polarity else None

        def at(seq, j):
            return "<s>" if j < 0 else "</s>" if j >= len(text) else seq[j]

        out = np.zeros((len(token_bytes), self.tables["tag"][2].shape[1]))
        for t, b in enumerate(token_bytes):
            if not b or (b[0] & 0xC0) == 0x80:
                continue  # starts no character: no features
            i = len(b"".join(token_bytes[:t]).decode())

            def values(atom):
                m = re.fullmatch(r"(pol|polpos|negated)\[(-?\d)\]", atom)
                if m:
                    return [pol.atom(m.group(1), i + int(m.group(2)))]
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
        pol = Polarity(text, *self.polarity) if self.polarity else None

        def values(atom):
            m = re.fullmatch(r"pol(sum|min|max)\.(.+)", atom)
            if m:
                sp = spans[self.spans.index(m.group(2))]
                return [pol.stat(m.group(1), *sp) if sp else "<none>"]
            m = re.fullmatch(r"clause(sum|min|max)", atom)
            if m:
                return [pol.stat(m.group(1), ca, cb)]
            if atom in ("negation", "degree"):
                return [pol.before(atom, anchor[0], anchor[1])]
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
           f"lex.{f1}[-3] kind[3]", "pol[0]", "pol[-1] polpos[0] pol[1]", "negated[0] c[0]", "negated[-2] pol[4]",
           "polpos[-4] polpos[3]"] + [f"lex.{f}[0]" for f in spans]
    out = {"tag": tag}
    if link:
        out["link"] = ["bias", "none", "from", "to", "dir", "dist", "gap", "break", "between", "clause", "count",
                       "memory", "from to", "dir break dist", "from none", "to between clause count",
                       "gap memory", "dist count"]
    if labels:
        out["label"] = (["bias", "pair", "empty", "left[1]", "left[4]", "right[1]", "right[3]", "clause", "memory",
                         "memory pair", "left[2] right[2] empty", f"chars.{f1} empty", f"clause text.{f0}",
                         f"bigrams.{f0} left[1] right[4]"] +
                        [f"{a}.{f}" for f in spans for a in ("text", "chars", "bigrams", "polsum", "polmin", "polmax")] +
                        ["clausesum", "clausemin clausemax", "negation", "degree", f"negation degree polsum.{f1}"])
    return out


DEFAULT_LEXICON = {"aspect": ["包装", "味道", "物流", "好", "装很好", "A"],
                   "opinion": ["很好", "好用", "很好用", "超值", "快快", "好", "很", "5"]}
# values on the buckets' edges (0.5, -2, 8), just under them, and both signs; 不 valued and a negation
DEFAULT_POLARITY = ["# term<TAB>value", "很好\t1.5", "好\t0.5", "好用\t2.2", "很好用\t3", "超值\t4.499", "快\t-0.4999",
                    "快快\t0.6", "不错\t2", "不\t-0.6", "不\tnegation", "没\tnegation", "没有\tnegation", "很\tdegree",
                    "超\tdegree", "差\t-1.3", "太差\t-2", "不好\t-3.25", "味道\t-0.2", "快快快\t-8", "包装\t0.25e1",
                    "好很好\t-7.999", "", "物流\t+1"]
DEFAULT_MEMORY = {"aspect": ["物流", "包装", "味道"], "opinion": ["很快", "很好", "超值"]}


def random_features(rng, spans, link, labels, n_tags, n_classes, seed=0, lexicon=None, memory=None,
                    buckets=(97, 61, 53), scale=(0.4, 0.8, 0.5), polarity=None):
    """A features section using every atom, random tables (small bucket counts, so features
    collide), a lexicon (lines), a memory (lines; by default records of a few plausible texts
    with random labels) and a polarity table (lines; DEFAULT_POLARITY by default)."""
    tpl = templates(spans, link, labels)
    feats = {"hash": {"function": "fnv1a64", "seed": seed}, "lexicon": "lexicon.tsv", "memory": "memory.tsv",
             "polarity": "polarity.tsv"}
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
    return feats, tables, lexicon, memory, DEFAULT_POLARITY if polarity is None else polarity
