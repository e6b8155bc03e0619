"""A character tagger to teach the trunk: an averaged structured perceptron over character n-gram
features, with BIO tags for aspect and opinion and first-order transitions.

It is a training tool only (pocketdec ships trunk + heads): train_tagger.py uses it to tag the
unlabelled reviews (test reviews, never the dev split) and augmented reviews, and the trunk learns
its spans there (distillation). Deterministic for a seed.
"""

import random

TAGS = ["O", "B-aspect", "I-aspect", "B-opinion", "I-opinion"]
START = len(TAGS)  # the "previous tag" of the first character


def kind(c):
    if c.isdigit():
        return "d"
    if c.isascii() and c.isalpha():
        return "a"
    if "\u4e00" <= c <= "\u9fff":
        return "h"
    return "p" if not c.isspace() else "s"


def features(text, i):
    """Feature strings of character i."""
    pad = "^^" + text + "$$"
    j = i + 2
    c = lambda k: pad[j + k]  # noqa: E731
    return ("u0" + c(0), "u-1" + c(-1), "u1" + c(1), "u-2" + c(-2), "u2" + c(2),
            "b-1" + c(-1) + c(0), "b1" + c(0) + c(1), "b-2" + c(-2) + c(-1), "b2" + c(1) + c(2),
            "t0" + c(-1) + c(0) + c(1), "t-1" + c(-2) + c(-1) + c(0), "t1" + c(0) + c(1) + c(2),
            "k" + kind(c(-1)) + kind(c(0)) + kind(c(1)), "bias")


def allowed(prev, t):
    name = TAGS[t]
    if not name.startswith("I-"):
        return True
    return prev < START and TAGS[prev] != "O" and TAGS[prev][2:] == name[2:]


class Perceptron:
    def __init__(self):
        self.w = {}      # feature -> [weight per tag]
        self.total = {}  # feature -> [sum of weights over updates, for averaging]
        self.stamp = {}  # feature -> [step of last change per tag]
        self.step = 0

    def _get(self, f, avg):
        if avg:
            return self.avg.get(f)
        return self.w.get(f)

    def decode(self, text, avg=False):
        n, T = len(text), len(TAGS)
        emit = []
        for i in range(n):
            s = [0.0] * T
            for f in features(text, i):
                w = self._get(f, avg)
                if w:
                    for t in range(T):
                        s[t] += w[t]
            emit.append(s)
        trans = lambda p, t: self._trans(p, t, avg)  # noqa: E731
        score = [(emit[0][t] + trans(START, t)) if allowed(START, t) else -1e18 for t in range(T)]
        back = []
        for i in range(1, n):
            row, bp = [], []
            for t in range(T):
                best, arg = -1e18, 0
                for p in range(T):
                    if allowed(p, t) and score[p] + trans(p, t) > best:
                        best, arg = score[p] + trans(p, t), p
                row.append(best + emit[i][t])
                bp.append(arg)
            score = row
            back.append(bp)
        y = max(range(T), key=lambda t: score[t])
        out = [y]
        for bp in reversed(back):
            y = bp[y]
            out.append(y)
        return out[::-1]

    def _trans(self, p, t, avg):
        w = self._get(("tr", p), avg)
        return w[t] if w else 0.0

    def _update(self, f, t, delta):
        w = self.w.setdefault(f, [0.0] * len(TAGS))
        tot = self.total.setdefault(f, [0.0] * len(TAGS))
        st = self.stamp.setdefault(f, [0] * len(TAGS))
        tot[t] += (self.step - st[t]) * w[t]
        st[t] = self.step
        w[t] += delta

    def train(self, data, epochs=8, seed=0):
        """data: [(text, [tag id per character])]."""
        rng = random.Random(seed)
        data = list(data)
        for _ in range(epochs):
            rng.shuffle(data)
            for text, gold in data:
                self.step += 1
                pred = self.decode(text)
                if pred == gold:
                    continue
                for i, (g, p) in enumerate(zip(gold, pred)):
                    gp = gold[i - 1] if i else START
                    pp = pred[i - 1] if i else START
                    if g != p or gp != pp:
                        for f in features(text, i):
                            self._update(f, g, 1.0)
                            self._update(f, p, -1.0)
                        self._update(("tr", gp), g, 1.0)
                        self._update(("tr", pp), p, -1.0)
        self.avg = {}
        for f, w in self.w.items():
            tot, st = self.total[f], self.stamp[f]
            self.avg[f] = [(tot[t] + (self.step - st[t]) * w[t]) / self.step for t in range(len(TAGS))]

    def spans(self, text):
        """[(field, start, end)] character spans of the averaged model's tags."""
        out = []
        for i, t in enumerate(self.decode(text, avg=True)):
            name = TAGS[t]
            if name.startswith("B-"):
                out.append([name[2:], i, i + 1])
            elif name.startswith("I-") and out and out[-1][0] == name[2:] and out[-1][2] == i:
                out[-1][2] = i + 1
        return [tuple(s) for s in out]
