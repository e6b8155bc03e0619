#!/usr/bin/python3
"""Random decision heads for pocketdec, and an independent numpy reference of their scores.

  make_head.py tokenizer --vocab 300 --out tok.json
      a synthetic byte-level tokenizer (make_model.py's) whose last five ids are the
      layout markers <|fim_prefix|> <|fim_middle|> <|box_start|> <|box_end|> <|fim_suffix|>;
      give it to make_model.py --tokenizer (with the same --vocab).
  make_head.py write --type pointer --hidden 64 --head-dim 16 --out DIR
  make_head.py write --type classifier --hidden 64 --labels a,b,c --out DIR
  make_head.py write --type tagger --hidden 64 --head-dim 16 [--schema FILE] [--spans aspect,opinion]
          [--features] --out DIR
      head.json + head.safetensors with random weights (--dtype F32|BF16|F16). A tagger's labels are
      every (category, polarity) of the schema (default schemas/tianchi-makeup.yaml); its biases favour
      B and I tags so that random heads find spans. --features adds sparse features (tag_features.py:
      templates using every atom, a lexicon and a memory file, random tables of 97/61/53 buckets).

The scores (module functions, float64):
  prompt(markers, text_ids, question_ids, cand_ids, kind, layout) -> ids, positions, blocks, query
  scores(model, head, text_ids, question_ids, cand_ids, layout)  -> dict(scores, probs, ...)
A pointer head in the parallel layout takes the key of each candidate from a plain causal
reference.forward of the prefix followed by that candidate alone, and the query from
masked_forward (a tree-masked forward written here) over the whole prompt; the LM verbalizer
scores each candidate alone after the prefix with reference.forward (parallel) or reads the
log-probabilities off one causal reference.forward of the whole prompt (sequential).

Tagger heads (extraction by decisions, float64, written from docs/extraction-by-decisions.md):
  tag_prompt(head, literal_ids, encode, text, terms) -> ids, read_start
  tag_decode(model, head, ids, read_start, token_bytes, fields, distinct) -> dict(emissions, tags, spans,
      links, label_logits, records); a head with "features" adds the sums of tag_features.Reference.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_model  # noqa: E402  (synthetic tokenizer, BF16 bits)
import reference   # noqa: E402  (the float64 forward)
import safetensors_io  # noqa: E402  (on the path make_model adds)
import tag_features  # noqa: E402  (sparse features: random sections, the reference sums)

MARKERS = ["<|fim_prefix|>", "<|fim_middle|>", "<|box_start|>", "<|box_end|>", "<|fim_suffix|>"]
MARKER_KEYS = ["prefix", "middle", "candidate_start", "candidate_end", "suffix"]

# ----------------------------------------------------------------------------- writers


def synthetic_tokenizer(vocab, seed=0):
    """make_model's synthetic tokenizer with the five markers as the last special ids."""
    tok = make_model.synthetic_tokenizer(vocab - len(MARKERS), seed)
    base = vocab - len(MARKERS)
    for i, m in enumerate(MARKERS):
        tok["added_tokens"].append({"id": base + i, "content": m, "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": True})
    return tok


def byte_ids(text):
    """Ids of text under the synthetic tokenizer when no merge applies (no letters): one id per
    byte, in GPT-2 byte-table order."""
    order = list(make_model.bytes_to_unicode())
    data = text.encode()
    if any(chr(b).isalpha() for b in data if b < 128) or any(b >= 128 for b in data):
        raise ValueError("byte_ids: only ASCII without letters tokenizes byte by byte")
    return [order.index(b) for b in data]


def write_safetensors(path, tensors, dtype):
    """tensors: {name: array}, all stored as dtype, in the given order."""
    safetensors_io.write(path, tensors, dtype, sort=False)


def write_head(out, kind, hidden, head_dim=16, labels=None, temperature=1.0, layout="sequential", seed=0,
               dtype="F32"):
    rng = np.random.default_rng([seed, 0x4EAD])
    os.makedirs(out, exist_ok=True)
    meta = {"type": kind, "temperature": temperature, "layout": layout,
            "markers": dict(zip(MARKER_KEYS, MARKERS))}
    s = 1.0 / np.sqrt(hidden)
    if kind == "pointer":
        meta["head_dim"] = head_dim
        t = {"q.weight": rng.standard_normal((head_dim, hidden)) * s, "q.bias": rng.standard_normal(head_dim) * 0.1,
             "k.weight": rng.standard_normal((head_dim, hidden)) * s, "k.bias": rng.standard_normal(head_dim) * 0.1}
    else:
        meta["labels"], meta["pool"] = list(labels), "last"
        t = {"weight": rng.standard_normal((len(labels), hidden)) * s, "bias": rng.standard_normal(len(labels)) * 0.1}
    write_safetensors(os.path.join(out, "head.safetensors"), t, dtype)
    with open(os.path.join(out, "head.json"), "w") as f:
        json.dump(meta, f, ensure_ascii=False, indent=1)


def edit_json(d, **changes):
    """Change keys of DIR/head.json (None removes one): broken heads for tests."""
    p = os.path.join(d, "head.json")
    with open(p) as f:
        meta = json.load(f)
    for k, v in changes.items():
        if v is None:
            meta.pop(k, None)
        else:
            meta[k] = v
    with open(p, "w") as f:
        json.dump(meta, f, ensure_ascii=False)


ECHO_PROMPT = "<|fim_prefix|>{text}<|fim_middle|>{text}<|fim_suffix|>"
TIANCHI_SCHEMA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                              "schemas", "tianchi-makeup.yaml")


def schema_enum_values(path, name):
    import yaml
    with open(path) as f:
        doc = yaml.safe_load(f)
    return next(fd["values"] for fd in doc["fields"] if fd["name"] == name)


def write_tagger(out, hidden, head_dim=16, spans=("aspect", "opinion"), schema=TIANCHI_SCHEMA, seed=0, dtype="F32",
                 prompt=ECHO_PROMPT, labels=True, transitions=True, label_states=None, gazetteer=None,
                 no_record=False, span_decoding=None, features=None, min_confidence=None):
    """A random tagger head. B and I tags get a positive bias so that spans appear. label_states
    (e.g. ["first", "last"]) goes into head.json; None leaves the key out (the last state).
    no_record adds the no-record class (head.json "no_record"), biased so that it wins now and then.
    gazetteer: (marks, lines) writes gazetteer.tsv (lines `field<TAB>term`) and head.json's key.
    span_decoding goes into head.json as it is (None leaves the key out: Viterbi); so does
    min_confidence (None: the key left out, every record written).
    features: a dict of tag_features.random_features options (seed, lexicon, memory, buckets, scale)
    writes sparse features, lexicon.tsv, memory.tsv and polarity.tsv; None: no features."""
    rng = np.random.default_rng([seed, 0x7A66])
    os.makedirs(out, exist_ok=True)
    n_tags, s = 1 + 2 * len(spans), 1.0 / np.sqrt(hidden)
    meta = {"type": "tagger", "prompt": prompt, "spans": list(spans)}
    if span_decoding is not None:
        meta["span_decoding"] = span_decoding
    if min_confidence is not None:
        meta["min_confidence"] = min_confidence
    t = {"tag.weight": rng.standard_normal((n_tags, hidden)) * 2 * s,
         "tag.bias": np.array([0.0] + [0.8, 0.6] * len(spans)) + rng.standard_normal(n_tags) * 0.1}
    if transitions:
        t["tag.transitions"] = rng.standard_normal((n_tags, n_tags)) * 0.5
        t["tag.start"] = rng.standard_normal(n_tags) * 0.3
        t["tag.end"] = rng.standard_normal(n_tags) * 0.3
    if len(spans) == 2:
        meta["link"] = {"from": spans[1], "to": spans[0], "head_dim": head_dim}
        t.update({"link.q.weight": rng.standard_normal((head_dim, hidden)) * s,
                  "link.q.bias": rng.standard_normal(head_dim) * 0.1,
                  "link.k.weight": rng.standard_normal((head_dim, hidden)) * s,
                  "link.k.bias": rng.standard_normal(head_dim) * 0.1,
                  "link.none": rng.standard_normal(head_dim) * 0.5})
    if labels:
        cats, pols = schema_enum_values(schema, "category"), schema_enum_values(schema, "polarity")
        meta["label_fields"] = ["category", "polarity"]
        meta["labels"] = [[c, p] for c in cats for p in pols]
        n = len(meta["labels"])
        if label_states is not None:
            meta["label_states"] = list(label_states)
        width = len(spans) * len(label_states or ["last"]) * hidden
        t.update({"label.weight": rng.standard_normal((n, width)) * s,
                  "label.bias": rng.standard_normal(n) * 0.1,
                  "label.none": rng.standard_normal(hidden)})
        if no_record:
            meta["no_record"] = True
            t["label.weight"] = np.vstack([t["label.weight"], rng.standard_normal((1, width)) * s])
            t["label.bias"] = np.append(t["label.bias"], 4.0)
    if features is not None:
        n_classes = len(meta.get("labels", [])) + bool(meta.get("no_record"))
        meta["features"], tables, lexicon, memory, polarity = tag_features.random_features(
            rng, list(spans), "link" in meta, meta.get("labels"), n_tags, n_classes, **features)
        t.update(tables)
        for name, lines in (("lexicon.tsv", lexicon), ("memory.tsv", memory), ("polarity.tsv", polarity)):
            with open(os.path.join(out, name), "w", encoding="utf-8", newline="") as f:
                f.write("".join(line + "\n" for line in lines))
    if gazetteer is not None:
        meta["gazetteer"] = {"file": "gazetteer.tsv", "marks": gazetteer[0]}
        with open(os.path.join(out, "gazetteer.tsv"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in gazetteer[1]))
    write_safetensors(os.path.join(out, "head.safetensors"), t, dtype)
    with open(os.path.join(out, "head.json"), "w") as f:
        json.dump(meta, f, ensure_ascii=False, indent=1)


# ----------------------------------------------------------------------------- reference


def load_head(path):
    with open(os.path.join(path, "head.json")) as f:
        meta = json.load(f)
    head = {"meta": meta, "t": reference.read_safetensors(os.path.join(path, "head.safetensors"))}
    if "features" in meta:
        head["features"] = tag_features.Reference(path, meta, head["t"])
    return head


def prompt(mk, text_ids, question_ids, cand_ids, kind, layout):
    """The decision prompt. mk: marker ids in MARKERS order. Returns ids, positions, blocks (start,
    end) and the query index (None for the verbalizer)."""
    ids = [mk[0]] + list(text_ids) + [mk[1]] + list(question_ids)
    P, blocks = len(ids), []
    if kind != "classifier":
        for c in cand_ids:
            start = len(ids)
            ids += [mk[2]] + list(c) + ([mk[3]] if kind == "pointer" else [])
            blocks.append((start, len(ids)))
    query = None
    if kind != "verbalizer":
        query = len(ids)
        ids.append(mk[4])
    pos = list(range(len(ids)))
    if layout == "parallel":
        for s, e in blocks:
            pos[s:e] = range(P, P + e - s)
    return ids, pos, blocks, query


def masked_forward(model, ids, positions, visible):
    """reference.forward with attention allowed where visible[i][j] (bool [T, T])."""
    c, w = model["config"], model["weights"]
    ids = np.asarray(ids, np.int64)
    T, hd, eps = ids.size, c["head_dim"], c["eps"]
    blocked = ~np.asarray(visible, bool)
    x = w["model.embed_tokens.weight"][ids]
    for i in range(c["layers"]):
        p = f"model.layers.{i}."
        h = reference.rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, c["heads"], hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, c["kv_heads"], hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, c["kv_heads"], hd)
        q = reference.rope(reference.rms_norm(q, w[p + "self_attn.q_norm.weight"], eps), positions, c["rope_theta"])
        k = reference.rope(reference.rms_norm(k, w[p + "self_attn.k_norm.weight"], eps), positions, c["rope_theta"])
        g = c["heads"] // c["kv_heads"]
        k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
        sc = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd)
        sc[:, blocked] = -np.inf
        sc = np.exp(sc - sc.max(axis=-1, keepdims=True))
        sc /= sc.sum(axis=-1, keepdims=True)
        x = x + np.einsum("hqk,khd->qhd", sc, v).reshape(T, -1) @ w[p + "self_attn.o_proj.weight"].T
        h = reference.rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        x = x + (reference.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
    return reference.rms_norm(x, w["model.norm.weight"], eps)


def tree_mask(n, P, blocks):
    """Causal; a block token sees the prefix [0, P) and its own block only."""
    vis = np.tril(np.ones((n, n), bool))
    for s, e in blocks:
        vis[s:e, P:s] = False
    return vis


def _softmax(x):
    e = np.exp(np.asarray(x) - np.max(x))
    return e / e.sum()


def scores(model, head, mk, text_ids, question_ids, cand_ids, layout):
    """Scores and probabilities of one decision (head None: LM verbalizer)."""
    kind = head["meta"]["type"] if head else "verbalizer"
    ids, pos, blocks, query = prompt(mk, text_ids, question_ids, cand_ids, kind, layout)
    P = len(ids) - (1 if query is not None else 0) - sum(e - s for s, e in blocks)
    out = {"ids": ids, "positions": pos, "query": query}
    temp = head["meta"].get("temperature", 1.0) if head else 1.0
    if kind == "classifier":
        h = reference.forward(model, ids)[0][query]
        s = (head["t"]["weight"] @ h + head["t"]["bias"]) / temp
    elif kind == "pointer":
        t, d = head["t"], head["meta"]["head_dim"]
        if layout == "sequential":
            hid = reference.forward(model, ids)[0]
            keys = [hid[e - 1] for s, e in blocks]
            hq = hid[query]
        else:
            keys = [reference.forward(model, ids[:P] + ids[s:e])[0][-1] for s, e in blocks]
            masked = masked_forward(model, ids, pos, tree_mask(len(ids), P, blocks))
            hq = masked[query]
            out["masked_key_error"] = float(max(np.abs(masked[e - 1] - k).max() for (s, e), k in zip(blocks, keys)))
        q = t["q.weight"] @ hq + t["q.bias"]
        s = np.array([q @ (t["k.weight"] @ k + t["k.bias"]) for k in keys]) / np.sqrt(d) / temp
        out["key_index"] = [e - 1 for s, e in blocks]
    else:
        s, mean = [], []
        full = reference.forward(model, ids)[1] if layout == "sequential" else None
        for (b, e) in blocks:
            logits = full[b:e] if full is not None else reference.forward(model, ids[:P] + ids[b:e])[1][P:]
            lp = logits - logits.max(-1, keepdims=True)
            lp -= np.log(np.exp(lp).sum(-1, keepdims=True))
            tgt = ids[b + 1:e]
            s.append(sum(lp[j, tgt[j]] for j in range(len(tgt))))
            mean.append(s[-1] / len(tgt))
        s = np.array(s)
        out["mean_logprob"] = mean
    out["scores"] = [float(v) for v in s]
    out["probs"] = [float(v) for v in _softmax(s)]
    return out


# ----------------------------------------------------------------------------- tagger reference


def tag_prompt(head, literal_ids, encode, text, terms=None):
    """The echo prompt's ids and the index of the read copy (the last {text} or {chars});
    literal_ids maps each literal part of the template to its ids, encode a piece of text to its
    plain ids ({chars}: each character encoded alone); terms (term -> set of span fields) is the
    gazetteer that {marked} shows."""
    ids, read_start, rest = [], 0, head["meta"]["prompt"]
    while rest:
        cut = [(rest.find(slot), slot) for slot in ("{text}", "{marked}", "{chars}") if slot in rest]
        at, slot = min(cut) if cut else (len(rest), "")
        if at:
            ids += list(literal_ids(rest[:at]))
        if slot == "{text}":
            read_start = len(ids)
            ids += list(encode(text))
        elif slot == "{chars}":
            read_start = len(ids)
            ids += [i for c in text for i in encode(c)]
        elif slot:
            ids += gazetteer_marked(head, literal_ids, encode, text, terms)
        rest = rest[at + len(slot):]
    return ids, read_start


def gazetteer_marked(head, literal_ids, encode, text, terms):
    """The {marked} copy, from the rule in docs/extraction-by-decisions.md: at every character the
    longest term that starts there is a candidate; candidates are taken longest first (then the
    earliest) unless they overlap a taken one; each taken match is wrapped in the open markers of its
    fields in span order and the close markers in reverse order."""
    marks, spans = head["meta"]["gazetteer"]["marks"], head["meta"]["spans"]
    longest = max((len(t) for t in terms), default=0)
    found = []
    for start in range(len(text)):
        hits = [n for n in range(1, longest + 1) if start + n <= len(text) and text[start:start + n] in terms]
        if hits:
            found.append((-max(hits), start))
    taken = set()
    keep = {}
    for neg, start in sorted(found):
        cells = set(range(start, start - neg))
        if not cells & taken:
            taken |= cells
            keep[start] = start - neg
    ids, at = [], 0
    for start in sorted(keep):
        end = keep[start]
        fields = [f for f in spans if f in terms[text[start:end]]]
        ids += list(encode(text[at:start]))
        for f in fields:
            ids += list(literal_ids(marks[f][0]))
        ids += list(encode(text[start:end]))
        for f in reversed(fields):
            ids += list(literal_ids(marks[f][1]))
        at = end
    return ids + list(encode(text[at:]))


def _allowed(prev, tag, boundary):
    prev_field = (prev - 1) // 2 if prev > 0 else -1
    if not boundary:
        return tag == (2 + 2 * prev_field if prev_field >= 0 else 0)
    if tag == 0 or tag % 2 == 1:
        return True
    return prev_field == (tag - 2) // 2


def viterbi(em, trans, start, end, boundary):
    """Constrained Viterbi (I-f only after B-f/I-f; a token inside a character continues its
    predecessor); ties to the smaller tag index."""
    n, T = em.shape
    score = [start[k] + em[0, k] if _allowed(-1, k, boundary[0]) else -np.inf for k in range(T)]
    back = np.full((n, T), -1, int)
    for i in range(1, n):
        new = []
        for k in range(T):
            best, arg = -np.inf, -1
            for p in range(T):
                if score[p] == -np.inf or not _allowed(p, k, boundary[i]):
                    continue
                v = score[p] + trans[p, k]
                if arg < 0 or v > best:
                    best, arg = v, p
            new.append(best + em[i, k] if arg >= 0 else -np.inf)
            back[i, k] = arg
        score = new
    last, best = -1, -np.inf
    for k in range(T):
        if score[k] != -np.inf and (last < 0 or score[k] + end[k] > best):
            best, last = score[k] + end[k], k
    tags = [0] * n
    for i in range(n - 1, -1, -1):
        tags[i] = last
        last = back[i, last]
    return tags


def _log_partition(em, trans, start, end, boundary, clamp=None):
    """log of the summed exp-scores of the allowed tag sequences; clamp(i) gives the tags allowed
    at token i (None: all)."""
    n, T = em.shape
    ok = [[True] * T if clamp is None or clamp(i) is None else [k in clamp(i) for k in range(T)] for i in range(n)]
    a = np.array([start[k] + em[0, k] if _allowed(-1, k, boundary[0]) and ok[0][k] else -np.inf for k in range(T)])
    for i in range(1, n):
        tr = np.array([[trans[p, k] if _allowed(p, k, boundary[i]) else -np.inf for k in range(T)] for p in range(T)])
        a = np.logaddexp.reduce(a[:, None] + tr, axis=0) + em[i]
        a = np.where(ok[i], a, -np.inf)
    return np.logaddexp.reduce(a + end)


def span_probability(em, trans, start, end, boundary, k, first, last):
    """P(tokens first..last are one span of field k): the partition function with those tags
    clamped (B-k, I-k..., then not I-k) over the whole one."""
    n = em.shape[0]
    b, i_tag, T = 1 + 2 * k, 2 + 2 * k, em.shape[1]

    def clamp(i):
        if i == first:
            return {b}
        if first < i <= last:
            return {i_tag}
        if i == last + 1:
            return set(range(T)) - {i_tag}
        return None
    z = _log_partition(em, trans, start, end, boundary)
    return float(np.exp(_log_partition(em, trans, start, end, boundary, clamp) - z)) if last < n else 0.0


def posterior_tags(em, trans, start, end, boundary, threshold):
    """head.json "span_decoding" "posterior": every span at least threshold probable, most probable
    first (ties: earlier, smaller field, shorter), kept unless it overlaps one kept before. Returns
    (tags, the number of candidates dropped for an overlap)."""
    n, T = em.shape
    cands = []
    for k in range((T - 1) // 2):
        for first in range(n):
            for last in range(first, n):
                p = span_probability(em, trans, start, end, boundary, k, first, last)
                if p >= threshold:
                    cands.append((-p, first, k, last))
    tags, taken, skipped = [0] * n, [False] * n, 0  # skipped: dropped for an overlap (the fixtures want some)
    for _, first, k, last in sorted(cands):
        if any(taken[first:last + 1]):
            skipped += 1
            continue
        for i in range(first, last + 1):
            taken[i] = True
            tags[i] = (1 if i == first else 2) + 2 * k
    return tags, skipped


def softmax(x):
    e = np.exp(np.asarray(x, dtype=np.float64) - np.max(x))
    return e / e.sum()


def tag_decode(model, head, ids, read_start, token_bytes, fields, distinct):
    """The whole decode of one text: token_bytes[i] are the bytes of read token i; fields the
    schema's field names in order."""
    meta, t = head["meta"], head["t"]
    spans_f, n_tags = meta["spans"], 1 + 2 * len(meta["spans"])
    hid = reference.forward(model, ids)[0]
    n = len(token_bytes)
    h = hid[read_start:read_start + n]
    em = h @ t["tag.weight"].T + t["tag.bias"]
    feats = head.get("features")
    text = b"".join(token_bytes).decode()
    if feats and feats.has("tag"):
        em = em + feats.tag(token_bytes)
    zero = np.zeros(n_tags)
    boundary = [len(b) == 0 or (b[0] & 0xC0) != 0x80 for b in token_bytes]
    crf = (em, t.get("tag.transitions", np.zeros((n_tags, n_tags))), t.get("tag.start", zero), t.get("tag.end", zero),
           boundary)
    rule = meta.get("span_decoding", "viterbi")
    rule = rule if isinstance(rule, dict) else {"rule": rule}
    posterior = rule["rule"] == "posterior"
    tags, skipped = posterior_tags(*crf, rule.get("threshold", 0.5)) if posterior else (viterbi(*crf), 0)
    spans, i = [], 0
    while i < n:
        tag = tags[i]
        if tag == 0 or tag % 2 == 0:
            i += 1
            continue
        f, j = (tag - 1) // 2, i
        while j + 1 < n and tags[j + 1] == 2 + 2 * f:
            j += 1
        spans.append({"field": spans_f[f], "k": f, "text": b"".join(token_bytes[i:j + 1]).decode(),
                      "first": i, "last": j, "probability": span_probability(*crf, f, i, j),
                      "chars": (len(b"".join(token_bytes[:i]).decode()), len(b"".join(token_bytes[:j + 1]).decode()))})
        i = j + 1
    recs, links = [], []
    link = meta.get("link")
    if link is None:
        recs = [{0: s} for s in range(len(spans))]
    else:
        fk, tk, d = spans_f.index(link["from"]), spans_f.index(link["to"]), link["head_dim"]
        frm = [s for s, sp in enumerate(spans) if sp["k"] == fk]
        to = [s for s, sp in enumerate(spans) if sp["k"] == tk]
        chosen, link_probs = set(), []
        for o in frm:
            q = t["link.q.weight"] @ h[spans[o]["last"]] + t["link.q.bias"]
            sc = [q @ (t["link.k.weight"] @ h[spans[a]["last"]] + t["link.k.bias"]) / np.sqrt(d) for a in to]
            sc.append(q @ t["link.none"] / np.sqrt(d))
            if feats and feats.has("link"):
                sc = list(np.array(sc) + feats.link(text, spans[o]["chars"], [spans[a]["chars"] for a in to]))
            best = int(np.argmax(sc))  # the first maximum
            choice = to[best] if best < len(to) else -1
            links.append({"from": o, "scores": [float(v) for v in sc], "choice": choice})
            p = softmax(np.array(sc))
            link_probs.append(p)
            if choice >= 0:
                chosen.add(choice)
            recs.append({fk: o, tk: choice, "link": float(p[best])})
        # a lone `to` span: the probability that no `from` span chose it
        recs += [{tk: a, "link": 1.0 - max([float(p[to.index(a)]) for p in link_probs] + [0.0])}
                 for a in to if a not in chosen]
    H = h.shape[1]
    label_logits, out, unsure, candidates = [], [], 0, []
    for r in recs:
        link_p = r.pop("link", 1.0)
        cand = {"spans": [r.get(k, -1) for k in range(len(spans_f))] + [-1] * (2 - len(spans_f)), "label": -1,
                "confidence": 0.0, "fate": "written"}
        candidates.append(cand)
        vals = {f: "_" for f in fields}
        meta_r = {"spans": {}, "probs": {f: 1.0 for f in fields}, "link": link_p}
        confidence = link_p
        for k, s in r.items():
            if s >= 0:
                vals[spans_f[k]] = spans[s]["text"]
                meta_r["spans"][spans_f[k]] = list(spans[s]["chars"])
                meta_r["probs"][spans_f[k]] = spans[s]["probability"]
                confidence *= spans[s]["probability"]
        if "labels" in meta:
            x = np.concatenate([h[spans[r[k]][state]] if r.get(k, -1) >= 0 else t["label.none"]
                                for k in range(len(spans_f)) for state in meta.get("label_states", ["last"])])
            logits = t["label.weight"] @ x + t["label.bias"]
            if feats and feats.has("label"):
                logits = logits + feats.label(text, [spans[r[k]]["chars"] if r.get(k, -1) >= 0 else None
                                                     for k in range(len(spans_f))])
            label_logits.append([float(v) for v in logits])
            best = int(np.argmax(logits))
            cand["label"] = best
            if best == len(meta["labels"]):  # the no-record class
                cand["fate"] = "no_record"
                continue
            p = softmax(np.asarray(logits, dtype=np.float64))
            confidence *= float(p[best])
            for j, (f, v) in enumerate(zip(meta["label_fields"], meta["labels"][best])):
                vals[f] = v
                # the value's marginal over the label classes (the no-record class excluded)
                meta_r["probs"][f] = float(sum(p[c] for c, lab in enumerate(meta["labels"]) if lab[j] == v))
        meta_r["confidence"] = cand["confidence"] = confidence
        # the head's min_confidence, compared as the library compares (in float32), before repeats
        if np.float32(confidence) < np.float32(meta.get("min_confidence", 0.0)):
            unsure += 1
            cand["fate"] = "below_floor"
            continue
        key = min(spans[s]["first"] for s in r.values() if s >= 0)
        out.append((key, len(out), vals, meta_r, cand))
    out.sort(key=lambda x: (x[0], x[1]))
    records, record_meta = [], []
    for _, _, v, m, cand in out:
        if distinct and v in records:
            cand["fate"] = "repeat"
            continue
        records.append(v)
        record_meta.append(m)
    assert H == t["tag.weight"].shape[1]
    return {"ids": [int(x) for x in ids], "read_start": read_start, "emissions": em.tolist(),
            "tags": [int(x) for x in tags],
            "tag_names": ["O"] + [p + f for f in spans_f for p in ("B-", "I-")],
            "spans": [{k: sp[k] for k in ("field", "text", "first", "last", "probability")} for sp in spans],
            "links": links, "label_logits": label_logits, "records": records, "overlaps_skipped": skipped,
            "record_meta": record_meta, "unsure_dropped": unsure, "candidates": candidates}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tokenizer")
    t.add_argument("--vocab", type=int, required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", required=True)
    w = sub.add_parser("write")
    w.add_argument("--type", choices=["pointer", "classifier", "tagger"], required=True)
    w.add_argument("--hidden", type=int, required=True)
    w.add_argument("--head-dim", type=int, default=16)
    w.add_argument("--labels", help="comma-separated classifier labels")
    w.add_argument("--temperature", type=float, default=1.0)
    w.add_argument("--layout", choices=["sequential", "parallel"], default="sequential")
    w.add_argument("--dtype", choices=["F32", "F16", "BF16"], default="F32")
    w.add_argument("--schema", default=TIANCHI_SCHEMA, help="tagger: the schema whose category/polarity are the labels")
    w.add_argument("--spans", default="aspect,opinion", help="tagger: span fields (the second links to the first)")
    w.add_argument("--features", action="store_true", help="tagger: sparse features (every atom, lexicon, memory)")
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "tokenizer":
        with open(a.out, "w") as f:
            json.dump(synthetic_tokenizer(a.vocab, a.seed), f, ensure_ascii=False)
    elif a.type == "tagger":
        write_tagger(a.out, a.hidden, a.head_dim, a.spans.split(","), a.schema, a.seed, a.dtype,
                     features={} if a.features else None)
    else:
        if a.type == "classifier" and not a.labels:
            raise SystemExit("make_head: a classifier needs --labels")
        write_head(a.out, a.type, a.hidden, a.head_dim, a.labels.split(",") if a.labels else None,
                   a.temperature, a.layout, a.seed, a.dtype)


if __name__ == "__main__":
    main()
