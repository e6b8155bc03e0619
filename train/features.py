"""Sparse features of a tagger head (the wide part): templates, hashed ids, lexicon marks, memory.

The contract is head.json's "features" object (docs/extraction-by-decisions.md): each decision (tag
emissions, link scores, label logits) adds the learned weights of the hashed features of what it decides
on. A template is atoms separated by spaces ("c[-1] c[0]", "dir break dist", "chars.opinion") or "bias";
a feature's key is the template string, then 0x1F and each atom value; its id is FNV-1a 64 of the key
(offset basis XOR seed) mod the decision's buckets. Features are defined on characters; a token that
starts a character takes the features of that character, one inside a character has none.

This module computes the ids (pure Python, memoised); tagging.py holds the weights.
"""

import os
import re

BOS, EOS, NONE = "<s>", "</s>", "<none>"
CLAUSE = set("，。！？,.!?~～；; ")
SEP = "\x1f"
FNV_OFFSET, FNV_PRIME, MASK = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1
DECISIONS = ("tag", "link", "label")
MAX_ATOMS = 4


def fnv1a64(data, seed=0):
    h = FNV_OFFSET ^ seed
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def kind(c):
    if c in (BOS, EOS):
        return c
    if "0" <= c <= "9":
        return "d"
    if ("a" <= c <= "z") or ("A" <= c <= "Z"):
        return "a"
    if "\u4e00" <= c <= "\u9fff":
        return "h"
    if c in " \t\n\r\u3000":
        return "s"
    return "p"


def bucket(d):
    return str(d) if d < 4 else "4" if d < 6 else "6" if d < 10 else "10" if d < 16 else "16"


# ----------------------------------------------------------------------------- lexicon and memory

def longest_matches(text, terms):
    """[(start, end)] character ranges of terms (any container of strings) in text: at each position
    the longest term starting there; longer first, then earlier, each kept unless it overlaps one kept
    before; in text order (C: the gazetteer's matching, which serves the lexicon too)."""
    longest = max(map(len, terms), default=0)
    cands = []
    for s in range(len(text)):
        for n in range(min(longest, len(text) - s), 0, -1):
            if text[s:s + n] in terms:
                cands.append((n, s))
                break
    used, out = [False] * len(text), []
    for n, s in sorted(cands, key=lambda x: (-x[0], x[1])):
        if not any(used[s:s + n]):
            used[s:s + n] = [True] * n
            out.append((s, s + n))
    return sorted(out)


def lexicon_marks(text, terms):
    """B/I/E/S/- of each character for one field's terms (a set): its longest_matches."""
    marks = ["-"] * len(text)
    for s, e in longest_matches(text, terms):
        marks[s:e] = ["S"] if e - s == 1 else ["B"] + ["I"] * (e - s - 2) + ["E"]
    return marks


def write_lexicon(path, terms, about="the lexicon the head's lex. features mark"):
    """terms: {field: set of terms}; `about` goes in the comment line."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# field<TAB>term: {about}\n")
        for field in sorted(terms):
            for t in sorted(terms[field]):
                f.write(f"{field}\t{t}\n")


def read_lexicon(path):
    terms = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                field, term = line.split("\t", 1)
                terms.setdefault(field, set()).add(term)
    return terms


def write_memory(path, memory):
    """memory: {(span texts...): (label values...)}."""
    with open(path, "w", encoding="utf-8") as f:
        for key in sorted(memory):
            f.write("\t".join(key + tuple(memory[key])) + "\n")


def read_memory(path, n_spans):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                parts = line.split("\t")
                out[tuple(parts[:n_spans])] = tuple(parts[n_spans:])
    return out


# ----------------------------------------------------------------------------- the polarity table

NEGATION, DEGREE = "negation", "degree"
_NUMBER = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")  # what C's polarity.c takes
POLARITY_THRESHOLDS = (0.5, 1, 2, 4, 8)
# the label atoms of a polarity statistic (index in PolarityText.stats): of a span field (name + field)
# and of the opinion's clause
SPAN_STATS = (("polsum.", 0), ("polmin.", 1), ("polmax.", 2))
CLAUSE_STATS = (("clausesum", 0), ("clausemin", 1), ("clausemax", 2))


def polarity_bucket(v):
    """The bucket of a log-odds value or sum: '0' inside (-0.5, 0.5), else its sign and the largest
    threshold of 0.5, 1, 2, 4, 8 that |v| reaches ('-2' for -3.1, '+0.5' for 0.7)."""
    if -0.5 < v < 0.5:
        return "0"
    m = max(t for t in POLARITY_THRESHOLDS if abs(v) >= t)
    return ("-" if v < 0 else "+") + ("0.5" if m == 0.5 else str(m))


def read_polarity(path):
    """(values {term: log-odds}, negation terms, degree terms) of a polarity table: `term<TAB>value`
    lines, value a number (the log-odds that a review holding the term is positive: below 0 for the
    words of complaints) or the word `negation` or `degree`; # comments and blank lines skipped."""
    values, neg, deg = {}, set(), set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            term, v = line.rstrip("\r").split("\t", 1)
            if v == NEGATION:
                neg.add(term)
            elif v == DEGREE:
                deg.add(term)
            elif _NUMBER.match(v):
                values[term] = float(v)
            else:
                raise ValueError(f"{path}: the value {v!r} of {term!r} is neither a number nor negation or degree")
    return values, neg, deg


def write_polarity(path, values, negation, degree, about=""):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# term<TAB>log-odds that a review holding it is positive (below 0: complaints), or `negation` / "
                f"`degree`{about}\n")
        for t in sorted(negation):
            f.write(f"{t}\t{NEGATION}\n")
        for t in sorted(degree):
            f.write(f"{t}\t{DEGREE}\n")
        for t in sorted(values):
            f.write(f"{t}\t{values[t]:.4g}\n")


class PolarityText:
    """What the polarity atoms read of one text: every match of a table term (start, end, value) in
    order of start then length; per character the strongest match covering it (largest |value|, ties
    to the longer, then the earlier) as a bucket and the character's place in it (B I E S, - without),
    and the negation and degree words' matches."""

    def __init__(self, text, table):
        values, neg, deg = table
        longest = max((len(t) for t in list(values) + list(neg) + list(deg)), default=0)
        n = len(text)
        self.text = text
        self.matches, self.neg, self.deg = [], [], []
        for s in range(n):
            for e in range(s + 1, min(n, s + longest) + 1):
                w = text[s:e]
                if w in values:
                    self.matches.append((s, e, values[w]))
                if w in neg:
                    self.neg.append((s, e))
                if w in deg:
                    self.deg.append((s, e))
        best = [None] * n
        for s, e, v in self.matches:
            for c in range(s, e):
                b = best[c]
                if b is None or abs(v) > abs(b[2]) or (abs(v) == abs(b[2]) and e - s > b[1] - b[0]):
                    best[c] = (s, e, v)
        self.bucket = [polarity_bucket(b[2]) if b else "0" for b in best]
        self.place = ["-" if b is None else "S" if b[1] - b[0] == 1 else "B" if c == b[0] else "E" if c == b[1] - 1
                      else "I" for c, b in enumerate(best)]

    def negated(self, c):
        """'n' inside a negation word, '1' when one ends at most 2 characters before c in its clause
        (no clause punctuation between), '0' otherwise."""
        for s, e in self.neg:
            if s <= c < e:
                return "n"
        for s, e in self.neg:
            if e <= c <= e + 2 and not any(ch in CLAUSE for ch in self.text[e:c]):
                return "1"
        return "0"

    def stats(self, a, b):
        """(sum, min, max) of the values of the matches inside characters [a, b); None without one."""
        v = [x for s, e, x in self.matches if a <= s and e <= b]
        return (sum(v), min(v), max(v)) if v else None

    def before(self, words, a, b, reach=2):
        """'in' when a word of `words` starts the span [a, b), '1' when one ends at most `reach`
        characters before a in its clause, '0' otherwise."""
        for s, e in words:
            if s == a and e <= b:
                return "in"
        for s, e in words:
            if e <= a <= e + reach and not any(ch in CLAUSE for ch in self.text[e:a]):
                return "1"
        return "0"


# ----------------------------------------------------------------------------- templates

_ATOM = re.compile(r"^(c|kind|lex\.[^\[\]]+|left|right|pol|polpos|negated)\[(0|-?[1-9][0-9]*)\]$")  # offsets as C's %d


def parse_template(tpl):
    """[(name, arg)] of a template string ([] for "bias")."""
    if tpl == "bias":
        return []
    out = []
    for atom in tpl.split(" "):
        m = _ATOM.match(atom)
        out.append((m.group(1), int(m.group(2))) if m else (atom, None))
    if len(out) > MAX_ATOMS:
        raise ValueError(f"template '{tpl}': more than {MAX_ATOMS} atoms")
    return out


class Spec:
    """head.json's "features" object, with its lexicon and memory loaded (dicts)."""

    def __init__(self, doc, spans, lexicon=None, memory=None, polarity=None):
        self.doc = doc
        self.polarity = polarity  # read_polarity's (values, negation, degree) or None
        self.seed = int(doc["hash"]["seed"])
        self.spans = list(spans)
        self.buckets = {d: int(doc[d]["buckets"]) for d in DECISIONS if d in doc}
        self.templates = {d: [(t, parse_template(t)) for t in doc[d]["templates"]] for d in DECISIONS if d in doc}
        self.lexicon = lexicon or {}
        self.memory = memory or {}
        self._link_from = self._link_to = None  # set_link: the link's span fields
        self._memo = {}
        self._pol = None

    def polarity_text(self, text):
        """The PolarityText of text (the last one kept: a review's records ask for it in turn)."""
        if self.polarity is None:
            return None
        if self._pol is None or self._pol.text != text:
            self._pol = PolarityText(text, self.polarity)
        return self._pol

    def id(self, decision, key):
        k = (decision, key)
        v = self._memo.get(k)
        if v is None:
            v = self._memo[k] = fnv1a64(key.encode("utf-8"), self.seed) % self.buckets[decision]
        return v

    def _ids(self, decision, values_of, skip=()):
        """Ids of every template of a decision but those in skip; values_of(name, arg) -> str or list
        (multi-valued)."""
        out = []
        for tpl, atoms in self.templates.get(decision, ()):
            if tpl in skip:
                continue
            vals = [values_of(n, a) for n, a in atoms]
            multi = [k for k, v in enumerate(vals) if isinstance(v, list)]
            if not multi:
                out.append(self.id(decision, tpl + "".join(SEP + v for v in vals)))
                continue
            k = multi[0]
            for v in vals[k]:
                vv = vals[:k] + [v] + vals[k + 1:]
                out.append(self.id(decision, tpl + "".join(SEP + x for x in vv)))
        return out

    # -- tags
    def tag_ids(self, text, starts):
        """Per token: feature ids (list); starts[t] is the character token t starts, or None."""
        if "tag" not in self.templates:
            return [[] for _ in starts]
        n = len(text)
        marks = {f: lexicon_marks(text, self.lexicon.get(f, set())) for f in self.spans}
        pol = self.polarity_text(text)

        def at(i, k):
            j = i + k
            return BOS if j < 0 else EOS if j >= n else None

        out = []
        for i in starts:
            if i is None:
                out.append([])
                continue

            def val(name, k):
                edge = at(i, k)
                if name == "c":
                    return edge or text[i + k]
                if name == "kind":
                    return kind(edge or text[i + k])
                if name.startswith("lex."):
                    return edge or marks[name[4:]][i + k]
                if name == "pol":
                    return edge or pol.bucket[i + k]
                if name == "polpos":
                    return edge or pol.place[i + k]
                if name == "negated":
                    return edge or pol.negated(i + k)
                raise ValueError(f"tag template atom '{name}'")
            out.append(self._ids("tag", val))
        return out

    # -- clauses
    @staticmethod
    def clause(text, start, end):
        s = start
        while s > 0 and text[s - 1] not in CLAUSE:
            s -= 1
        e = end
        while e < len(text) and text[e] not in CLAUSE:
            e += 1
        return s, e

    # -- links
    def link_ids(self, text, frm, to, tos):
        """Ids of the link candidate (from span frm, to span `to` or None) given every to span tos;
        spans are (start, end) character offsets, end exclusive."""
        if "link" not in self.templates:
            return []
        cs, ce = self.clause(text, *frm)
        in_clause = sum(1 for t in tos if t[0] >= cs and t[1] <= ce)
        ftext = text[frm[0]:frm[1]]
        if to is None:
            fixed = {"none": "1", "from": ftext, "to": NONE, "dir": NONE, "dist": NONE, "gap": NONE,
                     "break": NONE, "between": NONE, "memory": NONE}
        else:
            before = to[1] <= frm[0]
            lo, hi = (to[1], frm[0]) if before else (frm[1], to[0])
            gap = text[lo:hi] if hi > lo else ""
            d = max(0, hi - lo)
            ttext = text[to[0]:to[1]]
            key = (ttext, ftext) if self.spans.index(self._link_to) == 0 else (ftext, ttext)
            fixed = {"none": "0", "from": ftext, "to": ttext, "dir": "L" if before else "R",
                     "dist": ("L" if before else "R") + bucket(d), "gap": gap if len(gap) <= 4 else ">4",
                     "break": "1" if any(c in CLAUSE for c in gap) else "0",
                     "between": str(min(3, sum(1 for t in tos if t[0] >= lo and t[1] <= hi and hi > lo))),
                     "memory": "1" if key in self.memory else "0"}
        fixed["clause"] = str(min(3, in_clause))
        fixed["count"] = str(min(3, len(tos)))

        def val(name, arg):
            if name not in fixed:
                raise ValueError(f"link template atom '{name}'")
            return fixed[name]
        return self._ids("link", val)

    def set_link(self, frm, to):
        self._link_from, self._link_to = frm, to

    # -- labels
    def identity_templates(self):
        """The label templates that name the record's own strings (text., chars., bigrams., pair,
        memory): what a record never seen in training has no weight for."""
        return {tpl for tpl, atoms in self.templates.get("label", ())
                if any(n.startswith(("text.", "chars.", "bigrams.")) or n in ("pair", "memory") for n, _ in atoms)}

    def label_ids(self, text, spans, skip=()):
        """Ids of a record: spans[k] is the (start, end) of span field k or None; the templates in
        skip left out."""
        if "label" not in self.templates:
            return []
        texts = [text[s[0]:s[1]] if s else "_" for s in spans]
        if self._link_from is not None and spans[self.spans.index(self._link_from)]:
            anchor = spans[self.spans.index(self._link_from)]
        else:
            anchor = next((s for s in spans if s), None)
        n = len(text)
        pol = self.polarity_text(text)

        def stat(a, b, k):
            st = pol.stats(a, b)
            return polarity_bucket(st[k]) if st else NONE

        def val(name, arg):
            for pre, k in SPAN_STATS:
                if name.startswith(pre):
                    sp = spans[self.spans.index(name[len(pre):])]
                    return stat(sp[0], sp[1], k) if sp else NONE
            for pre, k in CLAUSE_STATS:
                if name == pre:
                    return stat(*self.clause(text, *anchor), k) if anchor else NONE
            if name in ("negation", "degree"):
                if anchor is None:
                    return NONE
                return pol.before(pol.neg if name == "negation" else pol.deg, anchor[0], anchor[1])
            if name.startswith("text."):
                return texts[self.spans.index(name[5:])]
            if name.startswith("chars."):
                return list(texts[self.spans.index(name[6:])]) if spans[self.spans.index(name[6:])] else []
            if name.startswith("bigrams."):
                t = texts[self.spans.index(name[8:])] if spans[self.spans.index(name[8:])] else ""
                return [t[k:k + 2] for k in range(len(t) - 1)]
            if name == "pair":
                return "|".join(texts)
            if name == "empty":
                return "".join("0" if s else "1" for s in spans)
            if name == "left":
                if anchor is None:
                    return NONE
                j = anchor[0] - arg
                return text[j] if j >= 0 else BOS
            if name == "right":
                if anchor is None:
                    return NONE
                j = anchor[1] + arg - 1
                return text[j] if j < n else EOS
            if name == "clause":
                if anchor is None:
                    return []
                s, e = self.clause(text, *anchor)
                return list(dict.fromkeys(text[s:e]))
            if name == "memory":
                lab = self.memory.get(tuple(texts))
                return "/".join(lab) if lab else NONE
            raise ValueError(f"label template atom '{name}'")
        return self._ids("label", val, skip)


def load(path, meta):
    """The Spec of a head directory's head.json (meta) or None without "features"."""
    doc = meta.get("features")
    if not doc:
        return None
    lex = read_lexicon(os.path.join(path, doc["lexicon"])) if doc.get("lexicon") else None
    mem = read_memory(os.path.join(path, doc["memory"]), len(meta["spans"])) if doc.get("memory") else None
    pol = read_polarity(os.path.join(path, doc["polarity"])) if doc.get("polarity") else None
    spec = Spec(doc, meta["spans"], lex, mem, pol)
    if "link" in meta:
        spec.set_link(meta["link"]["from"], meta["link"]["to"])
    return spec
