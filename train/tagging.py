"""Extraction by decisions: the tagger head of heads/ in PyTorch, its prompt, and its decoding.

The contract is docs/extraction-by-decisions.md (what pocketdec's compose/ runs): the review written
twice in the head's `prompt` template, BIO tags on the last copy decoded under a linear-chain CRF
(constrained Viterbi, or the spans whose marginal probability passes a threshold: head.json
"span_decoding"), a pointer from each `from` span (opinion) to a `to` span (aspect) or none,
and a classifier over the records' span states for the label fields. The template comes from
train/tagger_template.json and travels in head.json, so training and inference build one prompt.
"""

import json
import math
import os
import re

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import features as FT
import qwen3

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "tagger_template.json")
NEG = -1e4  # a forbidden transition (finite: keeps logsumexp free of NaN)


def load_template(path=TEMPLATE):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def tag_names(spans):
    return ["O"] + [f"{bi}-{f}" for f in spans for bi in ("B", "I")]


# ----------------------------------------------------------------------------- prompt

def char_starts(text):
    """Byte offsets where a character of text starts, and the end."""
    out, off = [], 0
    for c in text:
        out.append(off)
        off += len(c.encode("utf-8"))
    return out + [off]


def chars_ids(tok, text):
    """The {chars} copy: each character of text encoded alone as plain text, so every character
    starts a token (a character that is no token of the vocabulary is its byte tokens)."""
    return [i for c in text for i in tok.encode_plain(c)]


def prompt(tok, meta, text, terms=None):
    """(ids, read_start, token byte ranges of the read copy) of meta["prompt"]. Literal pieces are
    encoded with special tokens recognised; each {text} is the text alone, as plain bytes (no
    specials); each {chars} is the text encoded one character at a time (chars_ids); the last
    {text} or {chars} is the read copy; {marked} is the text with the gazetteer's matches
    (terms: term -> fields, read_gazetteer) between the marker tokens of meta["gazetteer"]."""
    ids, read_start, read_ids = [], 0, []
    copies = {}
    for lit, slot in re.findall(r"(.*?)(\{text\}|\{chars\}|\{marked\}|$)", meta["prompt"], flags=re.S):
        if lit:
            ids += tok.encode(lit)
        if slot in ("{text}", "{chars}"):
            if slot not in copies:
                copies[slot] = tok.encode_plain(text) if slot == "{text}" else chars_ids(tok, text)
            read_start, read_ids = len(ids), copies[slot]
            ids += read_ids
        elif slot == "{marked}":
            if terms is None:
                raise ValueError("the prompt has {marked} but no gazetteer was given")
            ids += marked_ids(tok, meta, text, terms)
    spans, off = [], 0
    for i in read_ids:
        n = len(tok.token_bytes(i))
        spans.append((off, off + n))
        off += n
    return ids, read_start, spans


def crosses_chars(tok):
    """Whether a token of tok's vocabulary (added tokens aside) holds the start of a character after
    its first byte: a merge across characters, so a span edge could fall inside a token."""
    specials = set(tok.specials)
    return any(any(x < 0x80 or x >= 0xC0 for x in tok.token_bytes(i)[1:])
               for i, t in enumerate(tok.vocab) if t and t not in specials)


def read_copy(meta, tok, mode="auto"):
    """meta with its read copy (the prompt's last {text} or {chars}) as `mode` says: "text" (the text
    as the tokenizer merges it), "chars" (one character at a time) or "auto" ("chars" when tok merges
    across characters, crosses_chars; a prompt already reading {chars} is left as it is)."""
    p = meta["prompt"]
    at = max(p.rfind("{text}"), p.rfind("{chars}"))
    if at < 0:
        raise ValueError("the head's prompt holds neither {text} nor {chars}")
    slot = "{chars}" if p.startswith("{chars}", at) else "{text}"
    want = mode if mode != "auto" else ("{chars}" if slot == "{chars}" or crosses_chars(tok) else "{text}")
    want = want if want.startswith("{") else "{" + want + "}"
    if want == slot:
        return meta
    return dict(meta, prompt=p[:at] + want + p[at + len(slot):])


# ----------------------------------------------------------------------------- gazetteer

def read_gazetteer(path):
    """term -> set of fields, from a gazetteer file (the lexicon's format: `field<TAB>term` lines)."""
    terms = {}
    for field, ts in FT.read_lexicon(path).items():
        for t in ts:
            terms.setdefault(t, set()).add(field)
    return terms


def write_gazetteer(path, terms):
    by_field = {}
    for t, fs in terms.items():
        for field in fs:
            by_field.setdefault(field, set()).add(t)
    FT.write_lexicon(path, by_field, "spans the trunk sees marked in the {marked} copy of the prompt")


gazetteer_matches = FT.longest_matches  # term -> fields works as the container of terms


def marked_ids(tok, meta, text, terms):
    """The {marked} copy: the text's plain ids with each match between the open markers of its
    fields (in the head's span order) and their close markers (in reverse)."""
    marks = meta["gazetteer"]["marks"]
    ids, at = [], 0
    for s, e in gazetteer_matches(text, terms):
        fields = [f for f in meta["spans"] if f in terms[text[s:e]]]
        if s > at:
            ids += tok.encode_plain(text[at:s])
        ids += [tok.token_id(marks[f][0]) for f in fields] + tok.encode_plain(text[s:e])
        ids += [tok.token_id(marks[f][1]) for f in reversed(fields)]
        at = e
    if at < len(text):
        ids += tok.encode_plain(text[at:])
    return ids


def token_tags(text, byte_ranges, char_tags):
    """Per-token tag names from per-character tags: a token starting a character takes its tag; a
    token inside a character continues (I-f inside a span, O outside)."""
    starts = char_starts(text)
    at = {b: k for k, b in enumerate(starts[:-1])}
    out = []
    for b, _ in byte_ranges:
        if b in at:
            out.append(char_tags[at[b]])
        else:
            prev = out[-1]
            out.append("O" if prev == "O" else "I-" + prev[2:])
    return out


def token_chars(text, byte_ranges):
    """Per token: the index of the character it starts, None for a token inside a character."""
    at = {b: k for k, b in enumerate(char_starts(text)[:-1])}
    return [at.get(b) for b, _ in byte_ranges]


def midchar(text, byte_ranges):
    starts = set(char_starts(text))
    return [b not in starts for b, _ in byte_ranges]


# ----------------------------------------------------------------------------- the head

LABEL_STATES = ("first", "last")  # the token states of a span that head.json's label_states may name


class TaggerHead(nn.Module):
    def __init__(self, hidden, spans, head_dim, n_labels, gen, label_states=("last",), no_record=False,
                 features=None, label_factors=()):
        super().__init__()
        self.features = features  # features.Spec or None: the sparse (wide) part
        self.feature_drop = 0.0   # training only: the share of feature ids dropped at each use
        self.identity_drop = 0.0  # training only: the share of records labelled without their own strings
        self.spans, self.head_dim = list(spans), head_dim
        self.label_states = list(label_states)
        self.n_labels, self.no_record = n_labels, bool(no_record)  # no_record: one more class, last
        self.tags = tag_names(spans)
        T = len(self.tags)
        self.tag = nn.Linear(hidden, T)
        self.transitions = nn.Parameter(torch.zeros(T, T))
        self.start = nn.Parameter(torch.zeros(T))
        self.end = nn.Parameter(torch.zeros(T))
        self.link_q = nn.Linear(hidden, head_dim)
        self.link_k = nn.Linear(hidden, head_dim)
        self.link_none = nn.Parameter(torch.zeros(head_dim))
        self.label = nn.Linear(len(spans) * len(label_states) * hidden, n_labels + self.no_record)
        self.label_none = nn.Parameter(torch.zeros(hidden))
        # label factors (training only): per label field, a decision over its values alone, added to
        # every label holding the value and folded into the joint weights by fold_factors()
        self.factor_maps = [m.float() for m in label_factors]
        self.factor_dense = nn.ModuleList([nn.Linear(self.label.in_features, m.shape[1]) for m in self.factor_maps])
        with torch.no_grad():
            for name, p in self.named_parameters():
                if (p.dim() == 2 and name != "transitions") or name.endswith("none"):
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
                else:
                    p.zero_()
        # the wide part: one table a decision, zeros at first (the head decides as the dense part alone)
        self.sparse = nn.ModuleDict()
        if features is not None:
            width = {"tag": T, "link": 1, "label": n_labels + self.no_record}
            for d, b in features.buckets.items():
                self.sparse[d] = nn.Embedding(b, width[d])
                nn.init.zeros_(self.sparse[d].weight)
        self.factor_sparse = nn.ModuleList(
            [nn.Embedding(features.buckets["label"], m.shape[1]) for m in self.factor_maps]
            if features is not None and "label" in features.buckets else [])
        for e in self.factor_sparse:
            nn.init.zeros_(e.weight)
        # allowed[prev, next]: I-f only after B-f or I-f; cont[prev, next]: a token inside a
        # character continues its predecessor.
        allowed = torch.ones(T, T, dtype=torch.bool)
        cont = torch.zeros(T, T, dtype=torch.bool)
        first = torch.ones(T, dtype=torch.bool)
        for j, t in enumerate(self.tags):
            if t.startswith("I-"):
                first[j] = False
                for i, s in enumerate(self.tags):
                    allowed[i, j] = s[2:] == t[2:] and s != "O"
        for i, s in enumerate(self.tags):
            cont[i, 0 if s == "O" else self.tags.index("I-" + s[2:])] = True
        self.register_buffer("allowed", allowed, persistent=False)
        self.register_buffer("cont", cont, persistent=False)
        self.register_buffer("first", first, persistent=False)

    def bag(self, decision, lists, table=None):
        """[len(lists), width]: the sum of the decision's weights (or table's) of each list of feature ids."""
        table = table or (self.sparse[decision] if decision in self.sparse else None)
        if table is None or not lists:
            return None
        flat = torch.tensor([i for x in lists for i in x], dtype=torch.long)
        offsets = torch.tensor([0] + [len(x) for x in lists[:-1]], dtype=torch.long).cumsum(0)
        keep = None
        if self.training and self.feature_drop > 0:  # feature dropout: each id kept with 1 - p, scaled up
            keep = (torch.rand(len(flat)) >= self.feature_drop).float() / (1 - self.feature_drop)
        return F.embedding_bag(flat, table.weight, offsets, mode="sum", per_sample_weights=keep)

    def emissions(self, h, tag_ids=None):
        """h [..., N, H]; tag_ids: per token (flattened in h's order) its feature ids."""
        e = self.tag(h)
        s = self.bag("tag", tag_ids) if tag_ids is not None else None
        return e if s is None else e + s.view(e.shape)

    def _trans(self, mid):
        """[..., T, T] transition scores with the constraints of each position (mid: bool [...])."""
        ok = torch.where(mid[..., None, None], self.cont, self.allowed)
        return self.transitions + torch.where(ok, 0.0, NEG)

    def crf_nll(self, e, gold, mid, lengths, weights=None, partial=None):
        """Mean negative log-likelihood of gold tag ids [B, N] under the constrained CRF (each
        sequence's times its weight [B] when weights are given). partial [B, N, T] bool (or None): for
        the rows it holds (any True), the tags allowed at each position; their likelihood is that of
        every allowed sequence (a partial annotation: spans known, the rest unknown), not gold's."""
        B, N, T = e.shape
        start = self.start + torch.where(self.first, 0.0, NEG)
        alpha = start + e[:, 0]
        score = start[gold[:, 0]] + e[:, 0].gather(1, gold[:, :1])[:, 0]
        if partial is not None:
            pe = e + torch.where(partial, 0.0, NEG)
            beta = start + pe[:, 0]  # the forward sum over the allowed sequences
        for i in range(1, N):
            live = (i < lengths)[:, None]
            tr = self._trans(mid[:, i])  # [B, T, T]
            nxt = torch.logsumexp(alpha[:, :, None] + tr, 1) + e[:, i]
            alpha = torch.where(live, nxt, alpha)
            step = tr[torch.arange(B), gold[:, i - 1], gold[:, i]] + e[:, i].gather(1, gold[:, i:i + 1])[:, 0]
            score = score + torch.where(live[:, 0], step, torch.zeros_like(step))
            if partial is not None:
                beta = torch.where(live, torch.logsumexp(beta[:, :, None] + tr, 1) + pe[:, i], beta)
        last = gold.gather(1, (lengths - 1)[:, None])[:, 0]
        score = score + self.end[last]
        if partial is not None:
            score = torch.where(partial.any(2).any(1), torch.logsumexp(beta + self.end, 1), score)
        logz = torch.logsumexp(alpha + self.end, 1)
        return (logz - score).mean() if weights is None else ((logz - score) * weights).mean()

    def link_scores(self, h_from, h_to, link_ids=None):
        """[n_from, n_to + 1]: each from span against every to span, then none; link_ids: per row,
        per column, the candidate's feature ids."""
        q = self.link_q(h_from)
        k = torch.cat([self.link_k(h_to), self.link_none[None]], 0)
        s = q @ k.t() / math.sqrt(self.head_dim)
        w = self.bag("link", [c for row in link_ids for c in row]) if link_ids is not None else None
        return s if w is None else s + w.view(s.shape)

    def label_logits(self, parts, label_ids=None):
        """parts: per span field then per label state, [n, H] states (label_none for `_`);
        label_ids: per record its feature ids."""
        x = torch.cat(parts, -1)
        z = self.label(x)
        w = self.bag("label", label_ids) if label_ids is not None else None
        z = z if w is None else z + w
        for k, m in enumerate(self.factor_maps):
            f = self.factor_dense[k](x)
            if label_ids is not None and self.factor_sparse:
                f = f + self.bag("label", label_ids, self.factor_sparse[k])
            z = z + f @ m.t()
        return z

    @torch.no_grad()
    def fold_factors(self):
        """Add the label factors into the joint label weights (the decisions unchanged) and drop them:
        the head the C library loads has the joint weights alone."""
        for k, m in enumerate(self.factor_maps):
            self.label.weight += m @ self.factor_dense[k].weight
            self.label.bias += m @ self.factor_dense[k].bias
            if self.factor_sparse:
                self.sparse["label"].weight += self.factor_sparse[k].weight @ m.t()
        self.factor_maps, self.factor_dense, self.factor_sparse = [], nn.ModuleList(), nn.ModuleList()

    def label_parts(self, h, spans):
        """label_logits' parts from states h [N, H] and, per record, per span field, the span's
        (first, last) token indices or None for `_`."""
        return [torch.stack([h[r[k][LABEL_STATES.index(st)]] if r[k] is not None else self.label_none
                             for r in spans])
                for k in range(len(self.spans)) for st in self.label_states]


def viterbi(head, e, mid):
    """Best tag ids of one sequence, e [N, T] (float64 on the CPU), ties to the smaller tag."""
    e = e.double()
    N, T = e.shape
    start = (head.start + torch.where(head.first, 0.0, NEG)).double()
    score = (start + e[0]).tolist()
    back = []
    for i in range(1, N):
        tr = head._trans(torch.tensor(mid[i])).double().tolist()
        row, bp = [], []
        for j in range(T):
            best, arg = None, 0
            for k in range(T):
                v = score[k] + tr[k][j]
                if best is None or v > best:
                    best, arg = v, k
            row.append(best + float(e[i, j]))
            bp.append(arg)
        score = row
        back.append(bp)
    end = head.end.double().tolist()
    best, y = None, 0
    for j in range(T):
        v = score[j] + end[j]
        if best is None or v > best:
            best, y = v, j
    out = [y]
    for bp in reversed(back):
        y = bp[y]
        out.append(y)
    return out[::-1]


def _log_add(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    return a + math.log1p(math.exp(b - a)) if a > b else b + math.log1p(math.exp(a - b))


class Lattice:
    """The CRF over the allowed tag sequences of one review (compose/'s heads/tag_lattice.c): forward
    and backward log-sums in float64, span probabilities, and the posterior span rule."""

    def __init__(self, head, e, mid):
        e = e.double().tolist()
        self.e, self.n, self.T = e, len(e), len(head.tags)
        n, T = self.n, self.T
        first = (head.start + torch.where(head.first, 0.0, NEG)).double().tolist()
        self.end = head.end.double().tolist()
        self.tr = [None] + [head._trans(torch.tensor(mid[i])).double().tolist() for i in range(1, n)]
        self.alpha = [[first[k] + e[0][k] for k in range(T)]]
        for i in range(1, n):
            prev = self.alpha[-1]
            row = []
            for k in range(T):
                acc = -math.inf
                for p in range(T):
                    acc = _log_add(acc, prev[p] + self.tr[i][p][k])
                row.append(acc + e[i][k])
            self.alpha.append(row)
        self.beta = [None] * n
        self.beta[n - 1] = list(self.end)
        for i in range(n - 2, -1, -1):
            nxt = self.beta[i + 1]
            row = []
            for p in range(T):
                acc = -math.inf
                for k in range(T):
                    acc = _log_add(acc, self.tr[i + 1][p][k] + e[i + 1][k] + nxt[k])
                row.append(acc)
            self.beta[i] = row
        z = -math.inf
        for k in range(T):
            z = _log_add(z, self.alpha[n - 1][k] + self.beta[n - 1][k])
        self.log_z = z

    def _end(self, prev, inside, i):
        """log-sum of the sequences that leave the span after token i (the next tag is not I-f)."""
        if i == self.n - 1:
            return self.end[prev]
        acc = -math.inf
        for k in range(self.T):
            if k != inside:
                acc = _log_add(acc, self.tr[i + 1][prev][k] + self.e[i + 1][k] + self.beta[i + 1][k])
        return acc

    def spans_from(self, k, first, floor=-math.inf):
        """(last, log P(first..last is one span of field k)) for every last, stopping once the prefix
        (tags first..last fixed) is less probable than exp(floor)."""
        b, inside = 1 + 2 * k, 2 + 2 * k
        head, prev, i = self.alpha[first][b], b, first
        while True:
            if head + self.beta[i][prev] - self.log_z < floor:
                return
            yield i, head + self._end(prev, inside, i) - self.log_z
            if i + 1 >= self.n:
                return
            i += 1
            head += self.tr[i][prev][inside] + self.e[i][inside]
            prev = inside

    def span_logprob(self, k, first, last):
        for i, lp in self.spans_from(k, first):
            if i == last:
                return lp
        return -math.inf

    def posterior_tags(self, threshold):
        """Every span at least threshold probable, most probable first (ties: earlier, smaller field,
        shorter), kept unless it overlaps one kept before; its B/I tags, O elsewhere."""
        floor, cands = math.log(threshold), []
        for k in range((self.T - 1) // 2):
            for first in range(self.n):
                cands += [(-lp, first, k, last) for last, lp in self.spans_from(k, first, floor) if lp >= floor]
        tags, taken = [0] * self.n, [False] * self.n
        for _, first, k, last in sorted(cands):
            if any(taken[first:last + 1]):
                continue
            for i in range(first, last + 1):
                taken[i] = True
                tags[i] = (1 if i == first else 2) + 2 * k
        return tags


def span_rule(meta):
    """(posterior, threshold) of head.json's "span_decoding" (absent: the Viterbi)."""
    v = meta.get("span_decoding", "viterbi")
    if isinstance(v, dict):
        return v.get("rule") == "posterior", float(v.get("threshold", 0.5))
    return v == "posterior", 0.5


def spans_of(tags, names):
    """[(field, first, last)] of maximal B-f I-f* runs, in text order."""
    out = []
    for i, t in enumerate(names[x] for x in tags):
        if t.startswith("B-"):
            out.append([t[2:], i, i])
        elif t.startswith("I-") and out and out[-1][0] == t[2:] and out[-1][2] == i - 1:
            out[-1][2] = i
    return [tuple(s) for s in out]


@torch.no_grad()
def decode(head, meta, h, text, byte_ranges, labels):
    """The records of one review from its read-copy states h [N, H] (compose/'s rules), a trace (what
    `pocketdec tag` prints), and the records as training quadruples (aspect, start, end, opinion, start,
    end, *label) with character offsets (None for `_`), before repeats are dropped."""
    raw = text.encode("utf-8")
    fs = head.features
    e = head.emissions(h, fs.tag_ids(text, token_chars(text, byte_ranges)) if fs else None)
    mid = midchar(text, byte_ranges)
    lattice = Lattice(head, e, mid)
    posterior, threshold = span_rule(meta)
    tags = lattice.posterior_tags(threshold) if posterior else viterbi(head, e, mid)
    sp = spans_of(tags, head.tags)
    src, dst = meta["link"]["from"], meta["link"]["to"]
    frm = [k for k, s in enumerate(sp) if s[0] == src]
    to = [k for k, s in enumerate(sp) if s[0] == dst]
    stext = [raw[byte_ranges[a][0]:byte_ranges[b][1]].decode("utf-8") for _, a, b in sp]
    at = {b: k for k, b in enumerate(char_starts(text))}  # spans start and end on characters
    coffs = [(at[byte_ranges[a][0]], at[byte_ranges[b][1]]) for _, a, b in sp]
    links, recs, used, link_p = [], [], set(), []
    for k in frm:
        ids = None
        if fs:
            tos = [coffs[j] for j in to]
            ids = [[fs.link_ids(text, coffs[k], t, tos) for t in tos + [None]]]
        s = head.link_scores(h[sp[k][2]][None], h[[sp[j][2] for j in to]] if to else h[:0], ids)[0]
        c = int(torch.argmax(s.double())) if len(s) else 0
        # argmax of torch returns the first maximum: ties go to the earlier candidate
        choice = to[c] if c < len(to) else -1
        links.append({"from": k, "scores": s.tolist(), "choice": choice})
        p = torch.softmax(s.double(), 0) if len(s) else torch.ones(1, dtype=torch.float64)
        link_p.append(p)
        if choice >= 0:
            used.add(choice)
        recs.append({dst: choice, src: k, "link": float(p[c])})
    for j in to:
        if j not in used:  # the pairing's probability: that no `from` span chose it
            recs.append({dst: j, src: -1, "link": 1.0 - max([float(p[to.index(j)]) for p in link_p] + [0.0])})
    floor = meta.get("min_confidence", 0.0)
    out, logits, quads, candidates = [], [], [], []
    for r in recs:
        ends = [(sp[r[f]][1], sp[r[f]][2]) if r[f] >= 0 else None for f in head.spans]
        ids = [fs.label_ids(text, [coffs[r[f]] if r[f] >= 0 else None for f in head.spans])] if fs else None
        lg = head.label_logits(head.label_parts(h, [ends]), ids)[0]
        logits.append(lg.tolist())
        best = int(torch.argmax(lg.double()))
        q = ()
        for f in head.spans:
            q += (stext[r[f]], *coffs[r[f]]) if r[f] >= 0 else ("_", None, None)
        cand = {"spans": q, "label": labels[best] if best < len(labels) else None, "fate": "no_record"}
        candidates.append(cand)
        if best == len(labels):  # the no-record class: the record is not written
            continue
        # the record's confidence (docs/extraction.md): its spans', its link's and its label's
        # probabilities; below the head's min_confidence (compared in float32) it is not written
        confidence = r["link"] * float(torch.softmax(lg.double(), 0)[best])
        for f in head.spans:
            if r[f] >= 0:
                _, a, b = sp[r[f]]
                confidence *= math.exp(lattice.span_logprob(head.spans.index(f), a, b))
        cand.update(confidence=confidence, fate="below_floor" if np.float32(confidence) < np.float32(floor) else "written")
        if cand["fate"] == "below_floor":
            continue
        lab = labels[best]
        quads.append(q + tuple(lab))
        first = min(sp[r[f]][1] for f in head.spans if r[f] >= 0)
        vals = {f: (stext[r[f]] if r[f] >= 0 else "_") for f in head.spans}
        vals.update(dict(zip(meta["label_fields"], lab)))
        out.append((first, vals, confidence))
    out = sorted(out, key=lambda x: x[0])
    seen, uniq, confidences = set(), [], []
    for _, v, c in out:
        key = tuple(sorted(v.items()))
        if key not in seen:
            seen.add(key)
            uniq.append(v)
            confidences.append(c)
    trace = {"tags": [head.tags[t] for t in tags], "emissions": e.tolist(),
             "spans": [{"field": f, "text": stext[k], "first": a, "last": b,
                        "probability": math.exp(lattice.span_logprob(head.spans.index(f), a, b))}
                       for k, (f, a, b) in enumerate(sp)],
             "links": links, "labels": [{"logits": x} for x in logits], "records": uniq,
             "confidences": confidences, "candidates": candidates}
    return uniq, trace, quads


def decode_review(model, head, meta, tok, text, labels):
    """decode() of one review's text through the model's trunk (under torch.no_grad()): (records,
    trace, quadruples, the prompt's byte ranges of the read copy)."""
    ids, read, ranges = prompt(tok, meta, text)
    h = model.hidden(torch.tensor([ids]))[0, read:read + len(ranges)]
    return (*decode(head, meta, h, text, ranges, labels), ranges)


def save(head, meta, labels, path, terms=None):
    """head.json + head.safetensors in heads/' tagger format, and the gazetteer file head.json names."""
    os.makedirs(path, exist_ok=True)
    if "gazetteer" in meta:
        write_gazetteer(os.path.join(path, meta["gazetteer"]["file"]), terms)
    doc = dict(meta)
    doc["link"] = dict(meta["link"], head_dim=head.head_dim)
    doc["labels"] = [list(x) for x in labels]
    doc["label_states"] = head.label_states
    doc.pop("no_record", None)
    if head.no_record:
        doc["no_record"] = True
    doc.pop("features", None)
    fs = head.features
    if fs is not None:  # the wide part: its declaration, lexicon and memory files, and its tables
        doc["features"] = fs.doc
        if fs.doc.get("lexicon"):
            FT.write_lexicon(os.path.join(path, fs.doc["lexicon"]), fs.lexicon)
        if fs.doc.get("memory"):
            FT.write_memory(os.path.join(path, fs.doc["memory"]), fs.memory)
        if fs.doc.get("polarity"):
            FT.write_polarity(os.path.join(path, fs.doc["polarity"]), *fs.polarity)
    with open(os.path.join(path, "head.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=2)
    t = {"tag.weight": head.tag.weight, "tag.bias": head.tag.bias, "tag.transitions": head.transitions,
         "tag.start": head.start, "tag.end": head.end,
         "link.q.weight": head.link_q.weight, "link.q.bias": head.link_q.bias,
         "link.k.weight": head.link_k.weight, "link.k.bias": head.link_k.bias, "link.none": head.link_none,
         "label.weight": head.label.weight, "label.bias": head.label.bias, "label.none": head.label_none}
    t.update({"features." + d: e.weight for d, e in head.sparse.items()})
    qwen3.write_safetensors(os.path.join(path, "head.safetensors"),
                            {k: v.detach().cpu().numpy() for k, v in t.items()})


def load(path, hidden):
    with open(os.path.join(path, "head.json"), encoding="utf-8") as f:
        meta = json.load(f)
    sd = qwen3.read_safetensors(os.path.join(path, "head.safetensors"))
    head = TaggerHead(hidden, meta["spans"], meta["link"]["head_dim"], len(meta["labels"]), torch.Generator(),
                      meta.get("label_states", ["last"]), meta.get("no_record", False), FT.load(path, meta))
    names = {"tag.weight": "tag.weight", "tag.bias": "tag.bias", "tag.transitions": "transitions",
             "tag.start": "start", "tag.end": "end", "link.q.weight": "link_q.weight",
             "link.q.bias": "link_q.bias", "link.k.weight": "link_k.weight", "link.k.bias": "link_k.bias",
             "link.none": "link_none", "label.weight": "label.weight", "label.bias": "label.bias",
             "label.none": "label_none"}
    names.update({"features." + d: f"sparse.{d}.weight" for d in FT.DECISIONS})
    head.load_state_dict({names[k]: torch.from_numpy(v.copy()) for k, v in sd.items()})
    return head.eval(), meta, [tuple(x) for x in meta["labels"]]


def load_gazetteer(path, meta):
    """The terms of the gazetteer a loaded head's head.json names (None when it names none)."""
    return read_gazetteer(os.path.join(path, meta["gazetteer"]["file"])) if "gazetteer" in meta else None
