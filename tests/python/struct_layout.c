/* struct_layout.c - the size and field offsets of every public struct the
 * Python package mirrors with ctypes, as the C compiler lays them out, in
 * JSON (test_layout.py compares them with the ctypes structs). */
#include <stddef.h>
#include <stdio.h>

#include "pocketdec.h"
#include "tianchi_eval.h"

static int first_struct = 1, first_field;

#define STRUCT(T)                                                                        \
    printf("%s\"%s\": {\"size\": %zu, \"fields\": {", first_struct ? "" : ", ", #T, sizeof(T)); \
    first_struct = 0;                                                                    \
    first_field = 1
#define FIELD(T, f)                                                                      \
    printf("%s\"%s\": %zu", first_field ? "" : ", ", #f, offsetof(T, f));               \
    first_field = 0
#define END() printf("}}")

int main(void)
{
    printf("{");
    STRUCT(pd_error); FIELD(pd_error, code); FIELD(pd_error, message); END();
    STRUCT(te_error); FIELD(te_error, code); FIELD(te_error, message); END();
    STRUCT(pd_config);
    FIELD(pd_config, n_layers); FIELD(pd_config, hidden); FIELD(pd_config, n_heads); FIELD(pd_config, n_kv_heads);
    FIELD(pd_config, head_dim); FIELD(pd_config, ffn); FIELD(pd_config, vocab); FIELD(pd_config, max_positions);
    FIELD(pd_config, rope_theta); FIELD(pd_config, rms_eps); FIELD(pd_config, tied_embeddings);
    FIELD(pd_config, bos_id); FIELD(pd_config, eos_id); END();
    STRUCT(pd_model_params); FIELD(pd_model_params, layout); FIELD(pd_model_params, quantize); END();
    STRUCT(pd_bundle_params);
    FIELD(pd_bundle_params, model); FIELD(pd_bundle_params, adapters); FIELD(pd_bundle_params, weights);
    FIELD(pd_bundle_params, n_adapters); FIELD(pd_bundle_params, adapter_mode); FIELD(pd_bundle_params, head);
    FIELD(pd_bundle_params, no_head); END();
    STRUCT(pd_context_params);
    FIELD(pd_context_params, n_ctx); FIELD(pd_context_params, n_threads); FIELD(pd_context_params, n_batch);
    FIELD(pd_context_params, max_bytes); FIELD(pd_context_params, kv_type); END();
    STRUCT(pd_batch);
    FIELD(pd_batch, tokens); FIELD(pd_batch, n_tokens); FIELD(pd_batch, positions); FIELD(pd_batch, visible);
    FIELD(pd_batch, outputs); FIELD(pd_batch, n_outputs); FIELD(pd_batch, want_logits); END();
    STRUCT(pd_decider_params);
    FIELD(pd_decider_params, layout); FIELD(pd_decider_params, n_threads); FIELD(pd_decider_params, n_ctx);
    FIELD(pd_decider_params, max_bytes); END();
    STRUCT(pd_decision);
    FIELD(pd_decision, n_candidates); FIELD(pd_decision, probs); FIELD(pd_decision, scores);
    FIELD(pd_decision, mean_logprob); FIELD(pd_decision, label_index); FIELD(pd_decision, forward_passes);
    FIELD(pd_decision, prompt_tokens); FIELD(pd_decision, tokens); FIELD(pd_decision, positions);
    FIELD(pd_decision, query_index); FIELD(pd_decision, key_index); END();
    STRUCT(pd_sampler_params);
    FIELD(pd_sampler_params, temperature); FIELD(pd_sampler_params, top_k); FIELD(pd_sampler_params, top_p);
    FIELD(pd_sampler_params, seed); END();
    STRUCT(pd_extract_params);
    FIELD(pd_extract_params, sampler); FIELD(pd_extract_params, max_records); FIELD(pd_extract_params, max_tokens);
    FIELD(pd_extract_params, sparse_head); FIELD(pd_extract_params, speculate); FIELD(pd_extract_params, drafter); END();
    STRUCT(pd_record); FIELD(pd_record, values); FIELD(pd_record, start); FIELD(pd_record, end);
    FIELD(pd_record, prob); FIELD(pd_record, link); FIELD(pd_record, confidence); END();
    STRUCT(pd_pipeline_params);
    FIELD(pd_pipeline_params, extract); FIELD(pd_pipeline_params, n_threads); FIELD(pd_pipeline_params, n_ctx);
    FIELD(pd_pipeline_params, parallel); FIELD(pd_pipeline_params, max_bytes);
    FIELD(pd_pipeline_params, min_confidence); FIELD(pd_pipeline_params, max_chars); FIELD(pd_pipeline_params, draft);
    FIELD(pd_pipeline_params, draft_block); END();
    STRUCT(pd_output_params);
    FIELD(pd_output_params, resume); FIELD(pd_output_params, sync_seconds); END();
    STRUCT(pd_reviews_params);
    FIELD(pd_reviews_params, format); FIELD(pd_reviews_params, id_column); FIELD(pd_reviews_params, text_column);
    FIELD(pd_reviews_params, encoding); FIELD(pd_reviews_params, keep_extra); FIELD(pd_reviews_params, first_line);
    END();
    STRUCT(pd_review);
    FIELD(pd_review, line); FIELD(pd_review, ordinal); FIELD(pd_review, header); FIELD(pd_review, id);
    FIELD(pd_review, text); FIELD(pd_review, text_len); FIELD(pd_review, problem); FIELD(pd_review, keep_id);
    FIELD(pd_review, extra); END();
    STRUCT(pd_summarize_params);
    FIELD(pd_summarize_params, records); FIELD(pd_summarize_params, pipeline); FIELD(pd_summarize_params, schema);
    FIELD(pd_summarize_params, merge); FIELD(pd_summarize_params, n_merge); FIELD(pd_summarize_params, reviews);
    FIELD(pd_summarize_params, reviews_params); FIELD(pd_summarize_params, by);
    FIELD(pd_summarize_params, calibration); FIELD(pd_summarize_params, calibrate_labels);
    FIELD(pd_summarize_params, calibrate_records); FIELD(pd_summarize_params, save_calibration);
    FIELD(pd_summarize_params, bundle); FIELD(pd_summarize_params, save_state);
    FIELD(pd_summarize_params, min_support); FIELD(pd_summarize_params, top); FIELD(pd_summarize_params, examples);
    FIELD(pd_summarize_params, listed); FIELD(pd_summarize_params, note); FIELD(pd_summarize_params, note_ctx); END();
    STRUCT(pd_extraction_stats);
    FIELD(pd_extraction_stats, n_prompt_tokens); FIELD(pd_extraction_stats, n_tokens);
    FIELD(pd_extraction_stats, n_sparse); FIELD(pd_extraction_stats, mask_us);
    FIELD(pd_extraction_stats, n_cached_tokens); FIELD(pd_extraction_stats, n_forward);
    FIELD(pd_extraction_stats, n_drafted); FIELD(pd_extraction_stats, n_accepted);
    FIELD(pd_extraction_stats, n_copies_drafted); FIELD(pd_extraction_stats, n_copies_kept);
    FIELD(pd_extraction_stats, n_windows); FIELD(pd_extraction_stats, n_draft_passes);
    FIELD(pd_extraction_stats, n_draft_drafted); FIELD(pd_extraction_stats, n_draft_kept); END();
    STRUCT(pd_extraction);
    FIELD(pd_extraction, n_fields); FIELD(pd_extraction, n_records); FIELD(pd_extraction, records);
    FIELD(pd_extraction, stop); FIELD(pd_extraction, stats); END();
    STRUCT(te_quad);
    FIELD(te_quad, id); FIELD(te_quad, aspect); FIELD(te_quad, opinion); FIELD(te_quad, category);
    FIELD(te_quad, polarity); END();
    printf("}\n");
    return 0;
}
