"""Byte-level BPE in pure Python: train, encode, and read/write a Qwen-style tokenizer.json.

The pre-tokenizer is the Qwen3 Split regex written out by hand (Debian's python3 has no
`regex` module for \\p{L}); pieces are byte-level mapped (the GPT-2 table) and merged by rank,
exactly as tokenizer.json's BPE model does, so pocketdec gives the same ids.
"""

import heapq
import json
import unicodedata

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|fim_prefix|>", "<|fim_middle|>",
            "<|fim_suffix|>", "<|box_start|>", "<|box_end|>"]
QWEN3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")


def bytes_to_unicode():
    """GPT-2's byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_CHAR = bytes_to_unicode()
CHAR_BYTE = {c: b for b, c in BYTE_CHAR.items()}


def _is_l(c):
    return unicodedata.category(c)[0] == "L"


def _is_n(c):
    return unicodedata.category(c)[0] == "N"


def _is_s(c):
    # PCRE2 \s with UCP: Z categories plus the ASCII spaces.
    return c in "\t\n\x0b\x0c\r" or unicodedata.category(c) in ("Zs", "Zl", "Zp")


def _run(text, i, pred):
    while i < len(text) and pred(text[i]):
        i += 1
    return i


def _match(t, i):
    """End of the Qwen3 Split regex match at i (alternatives in order, with their backtracking)."""
    c, n = t[i], len(t)
    if c == "'":
        for w in CONTRACTIONS:
            if t[i + 1:i + 1 + len(w)].lower() == w:
                return i + 1 + len(w)
    if _is_l(c):
        return _run(t, i + 1, _is_l)
    if c not in "\r\n" and not _is_n(c) and i + 1 < n and _is_l(t[i + 1]):
        return _run(t, i + 2, _is_l)
    if _is_n(c):
        return i + 1
    other = lambda ch: not (_is_s(ch) or _is_l(ch) or _is_n(ch))  # noqa: E731
    j = i + 1 if c == " " and i + 1 < n and other(t[i + 1]) else i
    if j < n and other(t[j]):
        return _run(t, _run(t, j, other), lambda ch: ch in "\r\n")
    end = _run(t, i, _is_s)  # c is a space character from here on
    last_nl = max((k for k in range(i, end) if t[k] in "\r\n"), default=-1)
    if last_nl >= 0:
        return last_nl + 1
    if end == n or end - 1 > i:
        return end if end == n else end - 1
    return end


def pretokenize(text):
    """The pieces of `text` (already NFC) under the Qwen3 Split regex, behavior Isolated."""
    out, i = [], 0
    while i < len(text):
        j = _match(text, i)
        out.append(text[i:j])
        i = j
    return out


def to_bytelevel(piece):
    return "".join(BYTE_CHAR[b] for b in piece.encode("utf-8"))


def train(texts, vocab_size, specials=SPECIALS, log=None, within_chars=False):
    """Learn merges on `texts` until the vocabulary (bytes + merges + specials) has vocab_size ids
    (fewer when no pair is left to merge).

    within_chars: learn merges on single characters only, so that no token ever crosses a
    character boundary: every merge joins bytes of one character and its right part starts with a
    UTF-8 continuation byte, which never follows a character boundary at encoding time. A tagger
    then labels characters exactly (a span of the review is always a run of whole tokens).

    Incremental pair counts with a lazy max-heap; ties go to the smallest pair of token ids,
    so training is deterministic."""
    words = {}
    for t in texts:
        t = unicodedata.normalize("NFC", t)
        for p in (t if within_chars else pretokenize(t)):
            words[p] = words.get(p, 0) + 1
    seqs = [list(p.encode("utf-8")) for p in words]
    freq = list(words.values())
    tokens = [BYTE_CHAR[b] for b in range(256)]
    pairs, where = {}, {}
    for w, s in enumerate(seqs):
        for a, b in zip(s, s[1:]):
            pairs[(a, b)] = pairs.get((a, b), 0) + freq[w]
            where.setdefault((a, b), set()).add(w)
    heap = [(-c, p) for p, c in pairs.items()]
    heapq.heapify(heap)
    merges = []
    n_merges = vocab_size - 256 - len(specials)
    while len(merges) < n_merges and heap:
        c, p = heapq.heappop(heap)
        if pairs.get(p, 0) != -c or c == 0:
            continue
        new = len(tokens)
        tokens.append(tokens[p[0]] + tokens[p[1]])
        merges.append(p)
        touched = {}
        for w in where.pop(p, ()):
            s, f = seqs[w], freq[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] -= f
                touched[(a, b)] = True
            out, k = [], 0
            while k < len(s):
                if k + 1 < len(s) and (s[k], s[k + 1]) == p:
                    out.append(new)
                    k += 2
                else:
                    out.append(s[k])
                    k += 1
            seqs[w] = out
            for a, b in zip(out, out[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + f
                where.setdefault((a, b), set()).add(w)
                touched[(a, b)] = True
        for q in touched:
            if pairs.get(q, 0) > 0:
                heapq.heappush(heap, (-pairs[q], q))
        if log and len(merges) % 1000 == 0:
            log(f"bpe: {len(merges)} merges")
    return Tokenizer(tokens + list(specials), [(tokens[a], tokens[b]) for a, b in merges],
                     list(specials))


class Tokenizer:
    """vocab: list of token strings (byte-level form) by id; merges: ranked pairs of strings."""

    def __init__(self, vocab, merges, specials):
        self.vocab = vocab
        self.ids = {t: i for i, t in enumerate(vocab)}
        self.rank = {m: r for r, m in enumerate(merges)}
        self.merges = merges
        self.specials = specials
        self.cache = {}

    def __len__(self):
        return len(self.vocab)

    def _bpe(self, piece):
        if piece in self.cache:
            return self.cache[piece]
        parts = list(to_bytelevel(piece))
        while len(parts) > 1:
            r, k = min((self.rank.get((a, b), 1 << 60), k) for k, (a, b) in enumerate(zip(parts, parts[1:])))
            if r == 1 << 60:
                break
            parts[k:k + 2] = [parts[k] + parts[k + 1]]
        ids = [self.ids[p] for p in parts]
        self.cache[piece] = ids
        return ids

    def encode(self, text):
        """Ids of `text`: added tokens split out first, then NFC, pre-tokenizer and BPE."""
        out, i = [], 0
        while i < len(text):
            hits = [(text.find(s, i), -len(s), s) for s in self.specials]
            hits = [h for h in hits if h[0] >= 0]
            j, _, s = min(hits) if hits else (len(text), 0, None)
            for p in pretokenize(unicodedata.normalize("NFC", text[i:j])):
                out += self._bpe(p)
            if s is not None:
                out.append(self.ids[s])
                j += len(s)
            i = j
        return out

    def encode_plain(self, text):
        """Ids of `text` with no added-token recognition: "<|im_end|>" inside is plain bytes."""
        out = []
        for p in pretokenize(unicodedata.normalize("NFC", text)):
            out += self._bpe(p)
        return out

    def token_id(self, s):
        return self.ids[s]

    def decode(self, ids):
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", errors="replace")

    def token_bytes(self, i):
        t = self.vocab[i]
        return t.encode() if t in self.specials else bytes(CHAR_BYTE[c] for c in t)

    def to_json(self):
        n_plain = len(self.vocab) - len(self.specials)
        added = [{"id": n_plain + k, "content": s, "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": True}
                 for k, s in enumerate(self.specials)]
        bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
        return {
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN3_SPLIT}, "behavior": "Isolated",
                 "invert": False}, bl]},
            "post_processor": bl, "decoder": bl,
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False,
                      "vocab": {t: i for i, t in enumerate(self.vocab[:n_plain])},
                      "merges": [[a, b] for a, b in self.merges]}}

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, ensure_ascii=False)


def load(path):
    """A Tokenizer from a tokenizer.json with a byte-level BPE model (ours or Qwen's)."""
    with open(path, encoding="utf-8") as f:
        j = json.load(f)
    m = j.get("model") or {}
    pre = json.dumps(j.get("pre_tokenizer"))
    if m.get("type") != "BPE" or json.dumps(QWEN3_SPLIT)[1:-1] not in pre or '"ByteLevel"' not in pre:
        raise ValueError(f"{path}: not a byte-level BPE with the Qwen3 Split regex (this encoder "
                         "only reproduces that pre-tokenizer)")
    added = sorted(j.get("added_tokens", []), key=lambda a: a["id"])
    size = max([*m["vocab"].values(), *(a["id"] for a in added)]) + 1
    vocab = [""] * size
    for t, i in m["vocab"].items():
        vocab[i] = t
    for a in added:
        vocab[a["id"]] = a["content"]
    merges = [tuple(x) if isinstance(x, list) else tuple(x.split(" ", 1)) for x in m["merges"]]
    return Tokenizer(vocab, merges, [a["content"] for a in added])
