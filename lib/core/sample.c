/* sample.c - greedy, temperature, top-k and top-p sampling with a seeded stream. */
#include "pd_internal.h"

#include <math.h>
#include <stdlib.h>

pd_sampler_params pd_sampler_default_params(void)
{
    pd_sampler_params p = {.temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .seed = 0};
    return p;
}

/* splitmix64: tiny, statistically sound, and the same stream on every platform. */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double next_unit(uint64_t *state) { return (double)(next_u64(state) >> 11) * (1.0 / 9007199254740992.0); }

typedef struct {
    int32_t id;
    float logit;
} candidate;

/* Larger logit first; equal logits by smaller id, so the order is total and reproducible. */
static int by_logit_desc(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int32_t pd_sample(const float *logits, int32_t n_vocab, const uint8_t *mask, const pd_sampler_params *params,
                  uint64_t *rng_state)
{
    pd_sampler_params p = params ? *params : pd_sampler_default_params();
    int32_t best = -1;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (mask && !mask[i]) continue;
        if (isnan(logits[i])) continue;
        if (best < 0 || logits[i] > logits[best]) best = i;
    }
    if (best < 0 || p.temperature <= 0.0f || p.top_k == 1) return best;

    candidate *c = malloc((size_t)n_vocab * sizeof *c);
    if (!c) return best; /* no memory to sample: the greedy answer is still a valid token */
    int32_t n = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        if ((!mask || mask[i]) && !isnan(logits[i])) c[n++] = (candidate){i, logits[i]};
    qsort(c, (size_t)n, sizeof *c, by_logit_desc);
    if (p.top_k > 0 && p.top_k < n) n = p.top_k;

    /* softmax over the kept candidates, stored in place of the logits */
    double sum = 0.0;
    float top = c[0].logit;
    for (int32_t i = 0; i < n; i++) {
        float e = expf((c[i].logit - top) / p.temperature);
        c[i].logit = e;
        sum += e;
    }
    if (p.top_p < 1.0f && p.top_p > 0.0f) {
        double cum = 0.0;
        for (int32_t i = 0; i < n; i++) {
            cum += c[i].logit / sum;
            if (cum >= p.top_p) {
                n = i + 1;
                break;
            }
        }
        sum = 0.0;
        for (int32_t i = 0; i < n; i++) sum += c[i].logit;
    }
    double r = next_unit(rng_state) * sum, acc = 0.0;
    int32_t pick = c[n - 1].id;
    for (int32_t i = 0; i < n; i++) {
        acc += c[i].logit;
        if (r < acc) {
            pick = c[i].id;
            break;
        }
    }
    free(c);
    return pick;
}
