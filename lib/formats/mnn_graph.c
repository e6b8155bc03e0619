/* mnn_graph.c - read an llm.mnn graph (mnn.h) with the flatbuffer reader.
 *
 * Field ids and enum values are those of MNN's public schema
 * (schema/default/MNN.fbs, CaffeOp.fbs, Tensor.fbs): ids count the fields of a
 * table in declaration order, a union taking two (its type, then its value). */
#include "mnn.h"

#include "flatbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* OpType values (MNN.fbs enum OpType). */
enum {
    OP_BINARY = 7, OP_CAST = 9, OP_CONCAT = 10, OP_CONST = 11, OP_CONV = 12, OP_GATHER_V2 = 31, OP_INPUT = 34,
    OP_RANK = 66, OP_RESHAPE = 73, OP_SHAPE = 80, OP_SQUEEZE = 90, OP_STRIDED_SLICE = 91, OP_UNSQUEEZE = 107,
    OP_CONVERT_TENSOR = 129, OP_ATTENTION = 299, OP_ROPE = 306, OP_FUSED_LINEAR = 307, OP_LAYER_NORM = 603
};
/* OpParameter union members (their 1-based position in MNN.fbs). */
enum { P_BLOB = 7, P_CONV2D = 9, P_LAYER_NORM = 88, P_ATTENTION = 98, P_ROPE = 102, P_FUSED_LINEAR = 103 };
/* Field ids: Net, Op, Convolution2D, Convolution2DCommon, IDSTQuan, LayerNorm,
 * RoPEParam, FusedLinearParam, AttentionParam, Blob. */
enum { NET_OPLISTS = 3 };
enum { OP_MAIN_TYPE = 1, OP_MAIN = 2, OP_NAME = 3, OP_TYPE = 5 };
enum { CONV_COMMON = 0, CONV_WEIGHT = 1, CONV_BIAS = 2, CONV_QUAN = 3, CONV_EXTERNAL = 6 };
enum { COMMON_KX = 2, COMMON_KY = 3, COMMON_GROUP = 9, COMMON_OUT = 10, COMMON_IN = 11 };
enum { QUAN_TYPE = 2, QUAN_BITS = 7, QUAN_READ_TYPE = 9, QUAN_SHAPE_INT32 = 11, QUAN_SCALE_STORAGE = 15 };
enum { LN_EPS = 1, LN_GAMMA = 2, LN_BETA = 3, LN_EXTERNAL = 5, LN_RMS = 6 };
enum { ROPE_CUT = 0, ROPE_HEADS = 1, ROPE_KV_HEADS = 2, ROPE_HEAD_DIM = 3, ROPE_Q_NORM = 4, ROPE_K_NORM = 5 };
enum { FL_CONVS = 0, FL_SILU_MUL = 1, FL_HAS_LN = 2, FL_LN = 3 };
enum { ATT_KV_SHARED_INDEX = 3, ATT_SCALE = 6 };
enum { BLOB_DIMS = 0, BLOB_TYPE = 2, BLOB_F32 = 7 };

#define MNN_QUANT_BLOCK 64
#define MNN_MAX_OPS (1 << 20)

/* Where the walk is inside the current layer. */
typedef enum { AT_QKV, AT_ROPE, AT_ATTENTION, AT_O, AT_MLP, AT_DOWN } stage;

typedef struct reader {
    pdi_fb fb;
    const char *path;
    pd_error *err;
    pdi_mnn_graph *g;
    const char *op; /* name of the op being read */
    stage at;
    pdi_mnn_norm pending; /* a standalone norm waiting for its projections */
    bool have_pending;
    int cap;
    pdi_fb_vec cos;        /* the likeliest RoPE cos table so far */
    int64_t cos_rows, cos_cols;
    const char *cos_op;
} reader;

static pd_status bad(reader *r)
{
    bool named = r->op && r->op[0];
    return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: malformed graph%s%s: %s", r->path, named ? " at op " : "",
                         named ? r->op : "", r->fb.what);
}

static pd_status refuse(reader *r, pd_status code, const char *fmt, ...) PD_PRINTF(3, 4);

static pd_status refuse(reader *r, pd_status code, const char *fmt, ...)
{
    char what[PD_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return pdi_set_error(r->err, code, "%s: op %s: %s", r->path, r->op ? r->op : "?", what);
}

/* The op's parameter table, which must be of union member `want`. */
static pd_status op_param(reader *r, const pdi_fb_table *op, uint8_t want, const char *what, pdi_fb_table *p)
{
    uint8_t type;
    bool present;
    if (!pdi_fb_u8(op, OP_MAIN_TYPE, 0, &type) || !pdi_fb_table_field(op, OP_MAIN, p, &present)) return bad(r);
    if (type != want || !present) return refuse(r, PD_ERR_FORMAT, "has no %s parameters (parameter type %u)", what, type);
    return PD_OK;
}

/* ------------------------------------------------------------ linears */

/* A Convolution2D table holding a 1x1 4-bit asymmetric linear in blocks of
 * 64 with F16 scales, its data in the weight file. */
static pd_status read_linear(reader *r, const pdi_fb_table *conv, pdi_mnn_linear *w)
{
    pdi_fb_table common, quan;
    pdi_fb_vec ext, weight, bias;
    bool has_common, has_quan;
    int32_t kx, ky, group, out, in, qtype, bits, read_type;
    uint8_t storage, shape32;
    if (!pdi_fb_table_field(conv, CONV_COMMON, &common, &has_common) ||
        !pdi_fb_table_field(conv, CONV_QUAN, &quan, &has_quan) || !pdi_fb_vector(conv, CONV_EXTERNAL, 8, &ext) ||
        !pdi_fb_vector(conv, CONV_WEIGHT, 4, &weight) || !pdi_fb_vector(conv, CONV_BIAS, 4, &bias))
        return bad(r);
    if (!has_common) return refuse(r, PD_ERR_FORMAT, "a convolution without its common parameters");
    if (!pdi_fb_i32(&common, COMMON_KX, 1, &kx) || !pdi_fb_i32(&common, COMMON_KY, 1, &ky) ||
        !pdi_fb_i32(&common, COMMON_GROUP, 1, &group) || !pdi_fb_i32(&common, COMMON_OUT, 0, &out) ||
        !pdi_fb_i32(&common, COMMON_IN, 0, &in))
        return bad(r);
    if (kx != 1 || ky != 1 || group != 1)
        return refuse(r, PD_ERR_UNSUPPORTED, "a %dx%d convolution in %d groups, not a linear layer", kx, ky, group);
    if (out < 1 || in < 1 || out > PD_MAX_DIM || in > PD_MAX_DIM)
        return refuse(r, PD_ERR_FORMAT, "%d outputs and %d inputs are out of range", out, in);
    if (!has_quan || weight.n)
        return refuse(r, PD_ERR_UNSUPPORTED, "float weights; pocketdec reads MNN's 4-bit quantized weights");
    if (!pdi_fb_i32(&quan, QUAN_TYPE, 0, &qtype) || !pdi_fb_i32(&quan, QUAN_BITS, 0, &bits) ||
        !pdi_fb_i32(&quan, QUAN_READ_TYPE, 0, &read_type) || !pdi_fb_u8(&quan, QUAN_SHAPE_INT32, 0, &shape32) ||
        !pdi_fb_u8(&quan, QUAN_SCALE_STORAGE, 0, &storage))
        return bad(r);
    if (qtype != 1) return refuse(r, PD_ERR_UNSUPPORTED, "quantization type %d (pocketdec reads type 1, int4/int8 "
                                  "blocks)", qtype);
    if (bits != 4) return refuse(r, PD_ERR_UNSUPPORTED, "%d-bit weights; pocketdec reads 4-bit ones", bits);
    if (storage != 1) return refuse(r, PD_ERR_UNSUPPORTED, "FP32 scales; pocketdec reads FP16 (16-bit) scales");
    if (ext.n < 3) return refuse(r, PD_ERR_UNSUPPORTED, "weights inside the graph; pocketdec reads them from llm.mnn.weight");
    if (read_type < 1 || read_type % out != 0)
        return refuse(r, PD_ERR_FORMAT, "%d scale groups for %d rows", read_type, out);
    int64_t blocks = read_type / out;
    if (in % blocks != 0 || in / blocks != MNN_QUANT_BLOCK)
        return refuse(r, PD_ERR_UNSUPPORTED, "blocks of %lld weights; pocketdec reads blocks of %d", in % blocks ? -1LL :
                      (long long)(in / blocks), MNN_QUANT_BLOCK);
    w->op = r->op;
    w->rows = out;
    w->cols = in;
    w->dims32 = shape32 != 0;
    w->header = 1 + 2 * (w->dims32 ? 4 : 2) + 1 + 16;
    w->offset = pdi_fb_vec_i64(&ext, 0);
    w->weight_bytes = pdi_fb_vec_i64(&ext, 1);
    w->alpha_bytes = pdi_fb_vec_i64(&ext, 2);
    int64_t bias_bytes = ext.n > 3 ? pdi_fb_vec_i64(&ext, 3) : 0;
    if (bias.n || bias_bytes) return refuse(r, PD_ERR_UNSUPPORTED, "a bias; Qwen3's projections have none");
    int64_t groups = (int64_t)out * blocks;
    if (w->alpha_bytes == groups * 2)
        return refuse(r, PD_ERR_UNSUPPORTED, "symmetric scales (one per block); pocketdec reads MNN's asymmetric "
                      "blocks (a zero and a scale each)");
    if (w->alpha_bytes != groups * 4)
        return refuse(r, PD_ERR_FORMAT, "%lld bytes of scales for %lld blocks of F16 (zero, scale) pairs",
                      (long long)w->alpha_bytes, (long long)groups);
    if (w->offset < 0 || w->weight_bytes != w->header + (int64_t)out * in / 2)
        return refuse(r, PD_ERR_FORMAT, "%lld weight bytes at offset %lld, expected %lld for [%d, %d] in 4 bits",
                      (long long)w->weight_bytes, (long long)w->offset, (long long)w->header + (int64_t)out * in / 2,
                      out, in);
    return PD_OK;
}

/* The convolutions of a FusedLinear op, which must number n. */
static pd_status read_fused(reader *r, const pdi_fb_table *p, int n, pdi_mnn_linear **out)
{
    pdi_fb_vec convs;
    if (!pdi_fb_vector(p, FL_CONVS, 4, &convs)) return bad(r);
    if (convs.n != (uint32_t)n)
        return refuse(r, PD_ERR_UNSUPPORTED, "a fused projection of %u matrices where pocketdec expects %d", convs.n, n);
    for (int i = 0; i < n; i++) {
        pdi_fb_table conv;
        if (!pdi_fb_vec_table(&convs, (uint32_t)i, &conv)) return bad(r);
        pd_status rc = read_linear(r, &conv, out[i]);
        if (rc) return rc;
    }
    return PD_OK;
}

/* ------------------------------------------------------------- norms */

static pd_status read_norm(reader *r, const pdi_fb_table *ln, pdi_mnn_norm *nm)
{
    uint8_t rms;
    pdi_fb_vec ext, gamma, beta;
    if (!pdi_fb_u8(ln, LN_RMS, 0, &rms) || !pdi_fb_f32(ln, LN_EPS, 0.0f, &nm->eps) ||
        !pdi_fb_vector(ln, LN_EXTERNAL, 8, &ext) || !pdi_fb_vector(ln, LN_GAMMA, 4, &gamma) ||
        !pdi_fb_vector(ln, LN_BETA, 4, &beta))
        return bad(r);
    if (!rms) return refuse(r, PD_ERR_UNSUPPORTED, "a LayerNorm with a mean; Qwen3 uses RMSNorm");
    if (!(nm->eps > 0 && nm->eps < 1)) return refuse(r, PD_ERR_FORMAT, "epsilon %g is not in (0, 1)", (double)nm->eps);
    nm->op = r->op;
    nm->at = NULL;
    nm->offset = nm->beta_offset = -1;
    if (ext.n >= 2) {
        int64_t bytes = pdi_fb_vec_i64(&ext, 1), beta_bytes = ext.n >= 3 ? pdi_fb_vec_i64(&ext, 2) : 0;
        nm->offset = pdi_fb_vec_i64(&ext, 0);
        if (nm->offset < 0 || bytes < 4 || bytes % 4 || bytes / 4 > PD_MAX_DIM || (beta_bytes && beta_bytes != bytes))
            return refuse(r, PD_ERR_FORMAT, "gamma of %lld bytes at %lld, beta of %lld bytes", (long long)bytes,
                          (long long)nm->offset, (long long)beta_bytes);
        nm->n = (int32_t)(bytes / 4);
        if (beta_bytes) nm->beta_offset = nm->offset + bytes;
        return PD_OK;
    }
    if (gamma.n < 1 || gamma.n > PD_MAX_DIM) return refuse(r, PD_ERR_FORMAT, "a norm without its gamma");
    for (uint32_t i = 0; i < beta.n; i++)
        if (pdi_fb_vec_f32(&beta, i) != 0.0f) return refuse(r, PD_ERR_UNSUPPORTED, "a norm with a bias (beta)");
    nm->at = r->fb.data + gamma.pos;
    nm->n = (int32_t)gamma.n;
    return PD_OK;
}

/* ------------------------------------------------------------- layers */

static pdi_mnn_layer *layer(reader *r) { return &r->g->layers[r->g->n_layers]; }

static pd_status start_layer(reader *r)
{
    pdi_mnn_graph *g = r->g;
    if (g->n_layers >= PD_MAX_LAYERS) return refuse(r, PD_ERR_FORMAT, "more than %d layers", PD_MAX_LAYERS);
    if (g->n_layers + 1 >= r->cap) {
        int cap = r->cap ? 2 * r->cap : 8;
        pdi_mnn_layer *grown = realloc(g->layers, (size_t)cap * sizeof *grown);
        if (!grown) return pdi_set_error(r->err, PD_ERR_NOMEM, "%s: out of memory", r->path);
        g->layers = grown;
        r->cap = cap;
    }
    memset(layer(r), 0, sizeof *layer(r));
    return PD_OK;
}

static pd_status out_of_place(reader *r, const char *what)
{
    static const char *const expected[] = {"the fused q/k/v projection (FusedLinear)", "the RoPE op", "the Attention op",
                                           "o_proj (Convolution)", "the fused gate/up projection (FusedLinear)",
                                           "down_proj (Convolution)"};
    return refuse(r, PD_ERR_UNSUPPORTED, "%s in layer %d where pocketdec expects %s (an export with other fusion "
                  "settings than MNN's defaults?)", what, (int)r->g->n_layers, expected[r->at]);
}

/* A FusedLinear: q/k/v (three, a layer starts) or gate/up (two, with SiLU). */
static pd_status on_fused(reader *r, const pdi_fb_table *op)
{
    pdi_fb_table p, ln;
    uint8_t silu, has_ln;
    bool ln_present;
    pd_status rc = op_param(r, op, P_FUSED_LINEAR, "FusedLinear", &p);
    if (rc) return rc;
    if (!pdi_fb_u8(&p, FL_SILU_MUL, 0, &silu) || !pdi_fb_u8(&p, FL_HAS_LN, 0, &has_ln) ||
        !pdi_fb_table_field(&p, FL_LN, &ln, &ln_present))
        return bad(r);
    if (has_ln && !ln_present) return refuse(r, PD_ERR_FORMAT, "has_ln without its norm");
    pdi_mnn_norm norm;
    if (has_ln && (rc = read_norm(r, &ln, &norm))) return rc;
    if (!has_ln && !r->have_pending) return refuse(r, PD_ERR_UNSUPPORTED, "a projection without the RMSNorm before it");
    if (!has_ln) norm = r->pending;
    r->have_pending = false;
    if (!silu) {
        if (r->at != AT_QKV) return out_of_place(r, "a fused q/k/v projection");
        if ((rc = start_layer(r))) return rc;
        pdi_mnn_layer *L = layer(r);
        L->attn_norm = norm;
        pdi_mnn_linear *w[] = {&L->q, &L->k, &L->v};
        r->at = AT_ROPE;
        return read_fused(r, &p, 3, w);
    }
    if (r->at != AT_MLP) return out_of_place(r, "a fused gate/up projection");
    pdi_mnn_layer *L = layer(r);
    L->ffn_norm = norm;
    pdi_mnn_linear *w[] = {&L->gate, &L->up};
    r->at = AT_DOWN;
    return read_fused(r, &p, 2, w);
}

static pd_status on_rope(reader *r, const pdi_fb_table *op)
{
    pdi_fb_table p, qn, kn;
    int32_t cut, heads, kv, hd;
    bool has_q, has_k;
    if (r->at != AT_ROPE) return out_of_place(r, "a RoPE op");
    pd_status rc = op_param(r, op, P_ROPE, "RoPE", &p);
    if (rc) return rc;
    if (!pdi_fb_i32(&p, ROPE_CUT, 0, &cut) || !pdi_fb_i32(&p, ROPE_HEADS, 0, &heads) ||
        !pdi_fb_i32(&p, ROPE_KV_HEADS, 0, &kv) || !pdi_fb_i32(&p, ROPE_HEAD_DIM, 0, &hd) ||
        !pdi_fb_table_field(&p, ROPE_Q_NORM, &qn, &has_q) || !pdi_fb_table_field(&p, ROPE_K_NORM, &kn, &has_k))
        return bad(r);
    if (heads < 1 || kv < 1 || hd < 2 || heads > PD_MAX_DIM || kv > PD_MAX_DIM || hd > PD_MAX_DIM)
        return refuse(r, PD_ERR_FORMAT, "%d heads, %d kv heads of %d", heads, kv, hd);
    if (cut != hd) return refuse(r, PD_ERR_UNSUPPORTED, "RoPE on %d of the head's %d dimensions; pocketdec rotates "
                                 "them all", cut, hd);
    if (!has_q || !has_k) return refuse(r, PD_ERR_UNSUPPORTED, "no q_norm/k_norm; Qwen3 normalizes q and k");
    pdi_mnn_graph *g = r->g;
    if (g->n_layers > 0 && (heads != g->n_heads || kv != g->n_kv_heads || hd != g->head_dim))
        return refuse(r, PD_ERR_UNSUPPORTED, "%d heads, %d kv heads of %d, where the first layer has %d, %d of %d",
                      heads, kv, hd, g->n_heads, g->n_kv_heads, g->head_dim);
    g->n_heads = heads, g->n_kv_heads = kv, g->head_dim = hd;
    pdi_mnn_layer *L = layer(r);
    if ((rc = read_norm(r, &qn, &L->q_norm)) || (rc = read_norm(r, &kn, &L->k_norm))) return rc;
    r->at = AT_ATTENTION;
    return PD_OK;
}

static pd_status on_attention(reader *r, const pdi_fb_table *op)
{
    pdi_fb_table p;
    int32_t shared;
    float scale;
    if (r->at != AT_ATTENTION) return out_of_place(r, "an Attention op");
    pd_status rc = op_param(r, op, P_ATTENTION, "Attention", &p);
    if (rc) return rc;
    if (!pdi_fb_i32(&p, ATT_KV_SHARED_INDEX, -1, &shared) || !pdi_fb_f32(&p, ATT_SCALE, 0.0f, &scale)) return bad(r);
    if (shared != -1) return refuse(r, PD_ERR_UNSUPPORTED, "a KV cache shared with layer %d", shared);
    float want = 1.0f / sqrtf((float)r->g->head_dim);
    if (scale != 0.0f && fabsf(scale - want) > 1e-6f * want)
        return refuse(r, PD_ERR_UNSUPPORTED, "attention scale %g; pocketdec scales by 1/sqrt(head_dim) = %g",
                      (double)scale, (double)want);
    r->at = AT_O;
    return PD_OK;
}

static pd_status on_conv(reader *r, const pdi_fb_table *op)
{
    pdi_fb_table p;
    pd_status rc = op_param(r, op, P_CONV2D, "Convolution2D", &p);
    if (rc) return rc;
    if (r->at == AT_O || r->at == AT_DOWN) {
        pdi_mnn_layer *L = layer(r);
        bool o = r->at == AT_O;
        r->at = o ? AT_MLP : AT_QKV;
        if (!o) r->g->n_layers++;
        return read_linear(r, &p, o ? &L->o : &r->g->layers[r->g->n_layers - 1].down);
    }
    if (r->at != AT_QKV || !r->have_pending || r->g->lm_head.op)
        return out_of_place(r, "a Convolution");
    r->g->final_norm = r->pending; /* the last norm, then the LM head */
    r->have_pending = false;
    return read_linear(r, &p, &r->g->lm_head);
}

static pd_status on_norm(reader *r, const pdi_fb_table *op)
{
    pdi_fb_table p;
    if (r->have_pending) return refuse(r, PD_ERR_UNSUPPORTED, "two norms in a row");
    /* before a layer's q/k/v (or the LM head), or before gate/up when not folded into their op */
    if (r->at != AT_QKV && r->at != AT_MLP) return out_of_place(r, "a standalone norm");
    pd_status rc = op_param(r, op, P_LAYER_NORM, "LayerNorm", &p);
    if (rc == PD_OK) rc = read_norm(r, &p, &r->pending);
    r->have_pending = rc == PD_OK;
    return rc;
}

/* A float constant [rows, cols] whose first row is all ones may be the cos
 * table of the RoPE subgraph: the one with the most rows is kept for
 * rope_theta, read once the heads are known. */
static pd_status on_const(reader *r, const pdi_fb_table *op)
{
    pdi_fb_table blob;
    pdi_fb_vec dims, f;
    int32_t type;
    uint8_t ptype;
    bool present;
    if (!pdi_fb_u8(op, OP_MAIN_TYPE, 0, &ptype) || !pdi_fb_table_field(op, OP_MAIN, &blob, &present)) return bad(r);
    if (ptype != P_BLOB || !present) return PD_OK;
    if (!pdi_fb_vector(&blob, BLOB_DIMS, 4, &dims) || !pdi_fb_i32(&blob, BLOB_TYPE, 1, &type) ||
        !pdi_fb_vector(&blob, BLOB_F32, 4, &f))
        return bad(r);
    if (dims.n != 2 || type != 1) return PD_OK;
    int64_t rows = pdi_fb_vec_i32(&dims, 0), cols = pdi_fb_vec_i32(&dims, 1);
    if (rows < 2 || cols < 2 || rows <= r->cos_rows || (uint64_t)rows * (uint64_t)cols != f.n) return PD_OK;
    for (int64_t j = 0; j < cols; j++)
        if (pdi_fb_vec_f32(&f, (uint32_t)j) != 1.0f) return PD_OK; /* not a cos table */
    r->cos = f;
    r->cos_rows = rows, r->cos_cols = cols;
    r->cos_op = r->op;
    return PD_OK;
}

/* theta from row 1 of the cos table (angle theta^(-2/d) at column 1), then
 * the table's first rows checked against plain RoPE with it. */
static pd_status rope_theta(reader *r)
{
    const int64_t half = r->cos_cols, d = r->g->head_dim;
    r->op = r->cos_op;
    if (!r->cos_rows) return pdi_set_error(r->err, PD_ERR_UNSUPPORTED, "%s: no RoPE table in the graph", r->path);
    if (half != d / 2)
        return refuse(r, PD_ERR_UNSUPPORTED, "a RoPE table of %lld columns for heads of %lld", (long long)half,
                      (long long)d);
    double angle = acos(fmax(-1.0, fmin(1.0, pdi_fb_vec_f32(&r->cos, (uint32_t)(half + 1)))));
    double theta = angle > 0 ? pow(angle, -(double)d / 2.0) : 0;
    if (!(theta > 1 && theta < 1e12)) return refuse(r, PD_ERR_UNSUPPORTED, "a RoPE table without a plain RoPE base");
    /* a float table pins theta to about 1e-5: configs use round bases (1e4, 5e5, 1e6) */
    double unit = pow(10.0, floor(log10(theta)) - 2), round_theta = unit * floor(theta / unit + 0.5);
    if (fabs(round_theta - theta) < 1e-4 * theta) theta = round_theta;
    for (int64_t p = 0; p < r->cos_rows && p < 64; p++)
        for (int64_t j = 0; j < half; j++) {
            double want = cos((double)p * pow(theta, -2.0 * (double)j / (double)d));
            double got = pdi_fb_vec_f32(&r->cos, (uint32_t)(p * half + j));
            if (fabs(want - got) > 2e-3)
                return refuse(r, PD_ERR_UNSUPPORTED, "the RoPE table is not plain RoPE (row %lld, column %lld: %g; "
                              "theta %g gives %g)", (long long)p, (long long)j, got, theta, want);
        }
    r->g->rope_theta = (float)theta;
    return PD_OK;
}

/* Ops that only move or index tensors, or compute positions for the RoPE table. */
static bool plumbing(int32_t type)
{
    static const int32_t ok[] = {OP_INPUT, OP_RESHAPE, OP_CONVERT_TENSOR, OP_BINARY, OP_CAST, OP_CONCAT,
                                 OP_GATHER_V2, OP_RANK, OP_SHAPE, OP_SQUEEZE, OP_STRIDED_SLICE, OP_UNSQUEEZE};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (type == ok[i]) return true;
    return false;
}

static pd_status on_op(reader *r, const pdi_fb_table *op)
{
    int32_t type;
    size_t len;
    if (!pdi_fb_i32(op, OP_TYPE, 0, &type) || !pdi_fb_string(op, OP_NAME, &r->op, &len)) return bad(r);
    if (!len) r->op = "(unnamed)";
    switch (type) {
    case OP_FUSED_LINEAR: return on_fused(r, op);
    case OP_ROPE: return on_rope(r, op);
    case OP_ATTENTION: return on_attention(r, op);
    case OP_CONV: return on_conv(r, op);
    case OP_LAYER_NORM: return on_norm(r, op);
    case OP_CONST: return on_const(r, op);
    default:
        if (plumbing(type)) return PD_OK;
        return refuse(r, PD_ERR_UNSUPPORTED, "op type %d is not part of the Qwen3 graph pocketdec runs", type);
    }
}

void pdi_mnn_graph_free(pdi_mnn_graph *g)
{
    if (!g) return;
    free(g->layers);
    memset(g, 0, sizeof *g);
}

pd_status pdi_mnn_graph_read(const uint8_t *data, size_t size, const char *path, pdi_mnn_graph *g, pd_error *err)
{
    memset(g, 0, sizeof *g);
    reader r = {.fb = {.data = data, .size = size}, .path = path, .err = err, .g = g};
    pdi_fb_table net;
    pdi_fb_vec ops;
    if (!pdi_fb_root(&r.fb, &net) || !pdi_fb_vector(&net, NET_OPLISTS, 4, &ops)) return bad(&r);
    if (ops.n > MNN_MAX_OPS) return pdi_set_error(err, PD_ERR_FORMAT, "%s: %u ops is too many", path, ops.n);
    pd_status rc = PD_OK;
    for (uint32_t i = 0; i < ops.n && rc == PD_OK; i++) {
        pdi_fb_table op;
        r.op = NULL;
        rc = pdi_fb_vec_table(&ops, i, &op) ? on_op(&r, &op) : bad(&r);
    }
    if (rc == PD_OK && (r.at != AT_QKV || !g->lm_head.op || g->n_layers == 0))
        rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: the graph ends %s", path,
                           g->n_layers == 0 ? "before a whole layer" : r.at != AT_QKV ? "inside a layer" :
                           "without the final norm and LM head");
    if (rc == PD_OK) rc = rope_theta(&r);
    if (rc) pdi_mnn_graph_free(g);
    return rc;
}
