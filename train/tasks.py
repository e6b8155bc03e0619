"""Training examples: extraction (the schema's prompt, records as the schema prints
them) and decisions (pointer-head prompts over the joint category/polarity candidates)."""

import os

import yaml

import data as D

# PyTorch (and pointer.py, which needs it) are imported by the functions that build tensors, so
# that evaluate.py, which reads the schema's template and candidates only, runs without it.

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(os.path.dirname(HERE), "schemas", "tianchi-makeup.yaml")
TEMPLATE = os.path.join(HERE, "extract_template.yaml")
IGNORE = -100


def load_template(schema=SCHEMA):
    """The fallback template, with prompt/separator/record_end/end from the schema
    YAML where it has them. Returns (template dict, where the prompt came from)."""
    with open(TEMPLATE, encoding="utf-8") as f:
        t = yaml.safe_load(f)
    source = TEMPLATE
    if os.path.exists(schema):
        with open(schema, encoding="utf-8") as f:
            s = yaml.safe_load(f) or {}
        for k in ("prompt", "separator", "record_end", "end"):
            if isinstance(s.get(k), str) and s[k]:
                t[k] = s[k]
                source = schema if k == "prompt" else source
        for k in ("question", "candidate"):  # the decide section: what the head is asked
            if isinstance((s.get("decide") or {}).get(k), str):
                t[k] = s["decide"][k]
    if t["prompt"].count("{text}") != 1:
        raise ValueError(f"{source}: the prompt must hold {{text}} exactly once")
    return t, source


def candidates(t):
    """The joint (category, polarity) candidates, in label-set order."""
    return [t["candidate"].format(category=c, polarity=p) for c in D.CATEGORIES for p in D.POLARITIES]


def full_prompt(t, text):
    return t["prompt"].replace("{text}", text)


def records(t, quads):
    return "".join(t["separator"].join(q) + t["record_end"] for q in quads)


def extraction_example(tok, t, text, quads):
    """(ids, targets): the loss covers the records and the end token only."""
    p = tok.encode(full_prompt(t, text))
    a = tok.encode(records(t, quads)) + [tok.token_id(t["end"])]
    ids = p + a
    return ids[:-1], [IGNORE] * (len(p) - 1) + a


def decision_examples(tok, t, text, quads, cands):
    """One pointer-head example per quadruple: (ids, pos, vis, key indices, query, gold index)."""
    import pointer
    out = []
    for a, o, c, p in quads:
        q = t["question"].format(aspect=a, opinion=o)
        ids, pos, vis, keys, query = pointer.prompt(tok, text, q, cands)
        out.append((ids, pos, vis, keys, query, cands.index(t["candidate"].format(category=c, polarity=p))))
    return out


def collate_lm(examples):
    """Right-padded ids/targets, causal mask that hides padding keys."""
    import torch
    T = max(len(i) for i, _ in examples)
    ids = torch.zeros(len(examples), T, dtype=torch.long)
    tgt = torch.full((len(examples), T), IGNORE, dtype=torch.long)
    valid = torch.zeros(len(examples), T, dtype=torch.bool)
    for b, (i, y) in enumerate(examples):
        ids[b, :len(i)] = torch.tensor(i)
        tgt[b, :len(y)] = torch.tensor(y)
        valid[b, :len(i)] = True
    mask = torch.ones(T, T, dtype=torch.bool).tril()[None] & valid[:, None, :]
    mask |= torch.eye(T, dtype=torch.bool)[None]  # padding rows see themselves: no NaN
    return ids, tgt, mask


def collate_decisions(examples):
    """Padded ids, positions, masks; key indices [B, C]; query indices [B]; gold [B]."""
    import torch
    T = max(len(e[0]) for e in examples)
    B = len(examples)
    ids = torch.zeros(B, T, dtype=torch.long)
    pos = torch.zeros(B, T, dtype=torch.long)
    mask = torch.eye(T, dtype=torch.bool).repeat(B, 1, 1)
    keys = torch.tensor([e[3] for e in examples])
    for b, (i, p, v, _, _, _) in enumerate(examples):
        n = len(i)
        ids[b, :n], pos[b, :n] = torch.tensor(i), torch.tensor(p)
        mask[b, :n, :n] = v
    return ids, pos, mask, keys, torch.tensor([e[4] for e in examples]), torch.tensor([e[5] for e in examples])
