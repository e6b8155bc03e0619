/* pocketdec - the command-line tool: the table of subcommands (each in its
 * own cmd_*.c) with their usage and help.
 *
 * Every subcommand prints JSON (or text for generate) on stdout, exits 0 on
 * success, and on failure prints one line "pocketdec: message" on stderr and
 * exits 1 (2 for a usage error). */
#include "cli.h"

static const cli_command commands[] = {
    {"tokenize", "--tokenizer FILE [--decode]",
     "Reads one JSON string per stdin line and writes one JSON array of ids per line;\n"
     "with --decode reads arrays of ids and writes JSON strings (invalid UTF-8 becomes U+FFFD).",
     cmd_tokenize},
    {"logits", "--model PATH --ids 1,2,3 [--threads N] [--kv-cache auto|f32|f16] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Prints the logits at the last position as one JSON array.", cmd_logits},
    {"hidden", "--model PATH --ids 1,2,3 [--threads N] [--kv-cache auto|f32|f16] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Prints the final-norm hidden state of every position as a JSON array of arrays.", cmd_hidden},
    {"generate",
     "--model PATH --prompt TEXT [--chat] [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--threads N]"
     " [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]"
     " [--draft DIR [--draft-block N] [--draft-quantize none|q8_0|q4_0]]",
     "Generates text after the prompt (greedy unless --temperature > 0); --chat wraps it as a ChatML user turn.\n"
     "--draft DIR: a DFlash / DFlash2 draft (docs/drafts.md) proposes blocks of --draft-block N tokens (default:\n"
     "its block size) that the model verifies in one pass each: the same text as without it (greedy, or sampled\n"
     "with the same --seed); --draft-quantize q8_0|q4_0 quantizes its matrices at load (fewer bytes a draft\n"
     "pass; other proposals, the same text). A summary line ends stderr: tokens and tokens/s (with --draft:\n"
     "passes, drafted and accepted tokens).",
     cmd_generate},
    {"info", "--model PATH", "Prints a JSON summary of the model.", cmd_info},
    {"bench", "--model PATH [--prompt-tokens 512] [--gen-tokens 128] [--threads N] [--reps 3] [--kv-cache auto|f32|f16] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64]",
     "Times prefill and decode on random ids; prints JSON with tokens/s (medians), load time and peak RSS.\n"
     "--weight-layout file keeps every weight in the file's layout (auto: the kernels' faster layout where they have one).",
     cmd_bench},
    {"extract",
     "--model PATH --schema FILE --input FILE --output FILE [--format tianchi|jsonl] [--input-format csv|jsonl] [--id-column NAME] [--text-column NAME] [--encoding NAME] [--threads N] [--max-records N] [--max-tokens N] [--speculate K] [--parallel N] [--ctx N] [--temperature T] [--seed S] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime] [--head DIR] [--min-confidence P] [--max-chars N] [--progress S] [--resume] [--sync] [--draft DIR [--draft-block N] [--draft-quantize none|q8_0|q4_0]]",
     "Extracts schema-bound records (e.g. Tianchi quadruples) from each review of --input: Tianchi CSV\n"
     "(id,Reviews) or JSONL ({\"id\",\"text\"}; by the .jsonl extension or --input-format). Writes Tianchi\n"
     "submission rows (every id in order, id,_,_,_,_ for none) or JSONL. '-' is stdin/stdout; constant\n"
     "memory. --id-column NAME, --text-column NAME: a CSV with a header (or JSONL keys) of other names, e.g. a\n"
     "shop's export review_id,rating,content,date,sku (default: id and Reviews, or id and the one column\n"
     "named Reviews, text, review, content or comment); the other columns are carried into the JSONL output.\n"
     "--encoding NAME: the reviews' encoding when not UTF-8 (gb18030, gbk, utf-16 with its byte order mark:\n"
     "any iconv name); a file that is not UTF-8 but reads as GB18030 or starts with UTF-16's mark is refused\n"
     "at once, naming the option.\n"
     "CSV is read as Python's csv reads it (a quote inside an unquoted field\n"
     "is a character); a broken row is reported with its line and its id still written as id,_,_,_,_, and\n"
     "reading resumes at the next well-formed row. A summary line ends stderr; the exit status is 1 when a\n"
     "row was broken or failed (after all others were written) or when the input holds no review.\n"
     "--head DIR: a decision head then picks each record's labels (the schema's decide section); a tagger\n"
     "head instead extracts each review's records in one forward pass (no generation; --max-records,\n"
     "--max-tokens, --speculate, --parallel, --temperature and --seed do not apply).\n"
     "--speculate K (0-16, default 4): copy speculation in generation: up to K tokens the schema\n"
     "forces or, inside a span, the review's own continuation are verified with the next token in one\n"
     "forward pass, the same output with fewer passes (span copies only while no more reviews are in\n"
     "flight than threads and a review's copies are kept at least 1 time in 4; 0 = off; with --temperature\n"
     "the samples verify the drafts: the records of the same --seed without them). The summary line gives\n"
     "passes, drafts kept and span copies kept.\n"
     "--draft DIR: a DFlash / DFlash2 draft of the model (docs/drafts.md) proposes blocks of --draft-block N\n"
     "tokens (default: its block size) in generation; a token the schema forbids is replaced by the draft's\n"
     "best allowed choice; it drafts when copy speculation proposes nothing: the same records in fewer\n"
     "passes (sampled: those of the same --seed); --draft-quantize q8_0|q4_0 quantizes its matrices at load.\n"
     "A second summary line gives draft passes, drafted and kept tokens.\n"
     "--parallel N (1-256): reviews in flight, the same records as one at a time (1), written in input\n"
     "order; reads ahead 32 x N reviews, and each review in flight holds a KV cache. Generation (default 2 x\n"
     "--threads, at most 16): advanced together in joint forward passes (the weights read once a pass for\n"
     "all). A tagger head (default --threads, at most 16): side by side, each on a context of its own with\n"
     "--threads / N threads (at least one).\n"
     "JSONL records carry each span's character offsets in the review, each field's probability, the\n"
     "link's and the record's confidence (docs/extraction.md, \"Confidence and offsets\"); --min-confidence P\n"
     "(0-1) drops the records whose confidence is below P, in either format; default: a tagger head's floor\n"
     "(head.json min_confidence, 0.3 for the bundled default), else 0; 0 writes every record.\n"
     "A review too long for the context is not refused: it is read in windows cut at sentence ends that\n"
     "fit (sharing their edge sentences), the records merged with offsets in the whole review; --max-chars N\n"
     "(16 or more) reads every review longer than N characters in windows of at most N; default: a tagger\n"
     "head's max_chars (the longest reviews it learned from), else 0 (only what the context cannot hold).\n"
     "Progress: a bar on stderr when it is a terminal; --progress S writes a line there every S seconds\n"
     "instead (share of the input read, reviews, records, reviews/s), for logs and pipes (0: every review).\n"
     "Nothing lost when it dies (docs/reliability.md): a review's lines are written whole, in one write, and\n"
     "OUTPUT.progress beside the output names the run (the input, the model, the schema and the options,\n"
     "by their contents) and how far the output is whole. An existing OUTPUT is replaced, unless --resume:\n"
     "then a run killed, or stopped by a full disk, continues where it stopped (its torn last line cut,\n"
     "the reviews written skipped) and the output ends byte for byte as one uninterrupted run's; a resume\n"
     "with another input, model, schema or option is refused, naming what differs (--threads, --parallel\n"
     "and --progress may change). The output is fsync'ed every 5 s (what a power loss may cost) and at the\n"
     "end; --sync after every review instead (slower). Both need --input FILE and --output FILE.",
     cmd_extract},
    {"summarize",
     "[--records FILE] [--model PATH] [--schema FILE] [--threads N] [--input REVIEWS] [--input-format csv|jsonl] [--id-column NAME] [--text-column NAME] [--encoding NAME] [--by COLUMN[:month|:week]] [--json FILE] [--html FILE] [--csv DIR]"
     " [--calibration FILE | --calibrate LABELS --calibrate-records RECORDS [--save-calibration FILE]]"
     " [--min-support N] [--top N] [--examples N] [--list-reviews N] [--save-state FILE] [--merge STATE]",
     "Summarizes a corpus's records (docs/summarize.md): for every polarity and every (category, polarity)\n"
     "the records found, the reviews with one and their share, the count corrected by the model's measured\n"
     "precision and recall with its 90% interval, the top aspects and opinions and example reviews with\n"
     "their spans. --records: what extract wrote (JSONL or Tianchi rows), read a review at a time in\n"
     "constant memory; --input: the reviews they came from (as extract reads them), in the same order, for\n"
     "the examples' text and the reviews with no record; or --model with --schema and no --records: the\n"
     "reviews of --input extracted here first (the bundle's head and extract's defaults). JSON on stdout (or --json FILE), --html FILE one\n"
     "self-contained page (tables, charts, complaints, examples), --csv DIR writes polarity.csv and cells.csv.\n"
     "--list-reviews N lists up to N reviews a cell under \"listed\" (-1: all, the default with --html, whose\n"
     "cells then link to all their reviews; 0: none); listed reviews are kept in memory.\n"
     "--id-column, --text-column, --encoding: as extract. --by COLUMN: the summary again per value of a column of the\n"
     "reviews (or of the records' JSONL lines); COLUMN:month or COLUMN:week groups a date by period and names\n"
     "the largest changes between the last two.\n"
     "The rates: --calibration FILE, else --model DIR's calibration.json,\n"
     "or measured with --calibrate LABELS (train/dataset.py's JSONL or the Tianchi labels CSV) against\n"
     "--calibrate-records (the model's records over those reviews), kept with --save-calibration FILE.\n"
     "A cell with fewer than --min-support gold records (default 20) uses its polarity's rates.\n"
     "--save-state FILE keeps the whole summary (every aspect and opinion counted) of a partition; --merge STATE\n"
     "(repeated, instead of --records) merges partitions' states in order: the same summary as one pass.",
     cmd_summarize},
    {"tag",
     "--model PATH [--head DIR] --schema FILE --text T [--html FILE] [--threads N] [--ctx N] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Runs a tagger head (extraction by decisions) on one text and prints one JSON object:\n"
     "{\"tokens\":[prompt ids],\"read_start\":k,\"tags\":[one per read-copy token],\"emissions\":[[n_tags] per\n"
     "read-copy token],\"spans\":[{\"field\",\"text\",\"first\",\"last\"}] (token indices within the read copy,\n"
     "text order),\"links\":[{\"from\":span index,\"scores\":[to spans in text order, none last],\"choice\":span\n"
     "index or -1}],\"labels\":[{\"logits\":[n_labels, then no-record with a no_record head]}] (one per record\n"
     "before sorting and dropping repeats, in the order made: from spans, then unchosen to spans),\n"
     "\"candidates\":[{\"spans\":[span index of each span field or -1],\"label\":class or -1,\"confidence\":c,\n"
     "\"fate\":\"written\"|\"no_record\"|\"below_floor\"|\"repeat\"}] (the same records, the same order: what became\n"
     "of each, so that none is dropped without its reason),\"records\":[{field: value}],\"confidences\":[...],\n"
     "\"forward_passes\":1}.\n"
     "--html FILE writes instead the pass as a person reads it (one self-contained page: each character's\n"
     "tag probabilities, the spans, each link as an arc with its runner-up, each record's three likeliest\n"
     "labels, the sparse features that weighed most beside the trunk's share), drawn from the JSON of\n"
     "pd_tag_explain, which the page carries; it prints the file's name. A text that is not UTF-8 is refused.",
     cmd_tag},
    {"score",
     "--model PATH [--head DIR] [--text T] [--question Q] [--candidate A] [--layout sequential|parallel] [--explain] [--jsonl] [--threads N] [--ctx N] [--bench N] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Scores label candidates for a text in one forward pass with a decision head (pointer or classifier;\n"
     "without --head, the LM log-probability of each candidate). Prints JSON\n"
     "{\"candidates\":[{\"label\",\"prob\",\"score\"}],\"forward_passes\":1,\"prompt_tokens\":N}; --explain adds the\n"
     "token ids, their positions and the query/key positions. --candidate repeats; a classifier scores all its\n"
     "labels when none is given. --jsonl reads {\"text\",\"question\",\"candidates\"} per stdin line (a repeated\n"
     "text reuses its cache). --bench N prints the best time of N decisions and of N prefills of the same prompt.",
     cmd_score},
    {"rank",
     "--model PATH --schema FILE --input FILE [--order confidence|entropy|complaint|random] [--seed N] [--output FILE] [--input-format csv|jsonl] [--id-column NAME] [--text-column NAME] [--encoding NAME] [--head DIR] [--threads N] [--ctx N] [--min-confidence P] [--max-chars N] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Orders the reviews of --input (read as extract reads them) most useful to label first, and writes one\n"
     "JSON line a review, {\"id\": ..., \"score\": ...}, the highest score first (ties in input order), to\n"
     "--output (default stdout). The orderings (docs/serve.md, \"Teach it\"): confidence, 1 - the lowest\n"
     "record confidence (1 for a review with no record; any head); entropy, the mean entropy of the tag\n"
     "marginals of a tagger head's pass; complaint, the largest probability a candidate record gives to a\n"
     "complaint label (负面, 差评, negative or neg; a tagger head); random, a draw from --seed N (default 0)\n"
     "and the id. Default: complaint for a tagger head with a complaint label, else confidence (the folds'\n"
     "choice: train/README.md).\n"
     "`pocketdec serve --teach` asks its reviews in the same order.",
     cmd_rank},
    {"serve",
     "--model PATH --schema FILE [--head DIR] [--threads N] [--parallel N] [--host ADDR] [--port P] [--api-key KEY] [--api-key-file FILE] [--max-body BYTES] [--max-texts N] [--queue N] [--timeout S] [--max-connections N] [--max-per-client N] [--idle-timeout S] [--min-rate BYTES] [--max-header BYTES] [--ctx N] [--min-confidence P] [--max-chars N] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime] [--teach REVIEWS --labels FILE [--order confidence|entropy|complaint|random] [--seed N] [--input-format csv|jsonl] [--id-column NAME] [--text-column NAME] [--encoding NAME]]",
     "Serves extraction over HTTP/1.1 + JSON until SIGTERM or SIGINT (docs/serve.md):\n"
     "  POST /v1/extract {\"text\": T} -> {\"records\": [...]}, or {\"texts\": [T, ...]} -> {\"results\": [{\"records\": [...]}, ...]}:\n"
     "       each record as `pocketdec extract --format jsonl` writes it for that text;\n"
     "  POST /v1/score {\"text\", \"question\", \"candidates\"} -> {\"candidates\": [{\"label\",\"prob\",\"score\"}], ...}\n"
     "       (a decision head only: pointer or classifier; 422 otherwise);\n"
     "  GET /health -> {\"status\":\"ok\"}; GET /metrics -> Prometheus text;\n"
     "  POST /v1/reload {\"model\": DIR} (or no body, or SIGHUP: the --model started with) -> the new model's\n"
     "       /v1/info, requests in flight finishing on the old one; a bundle that does not load: 422.\n"
     "--parallel N (0-256) texts in flight, as extract's --parallel: a tagger head's side by side, a context\n"
     "and a thread each (0: one a thread); generation's in joint passes, texts of every client joining as\n"
     "slots free (0: 2 a thread, at most 16). --threads (default: every core): split among a tagger's\n"
     "contexts; --queue N (default: --max-connections) requests may wait for a free slot, more\n"
     "are answered 503 with Retry-After. --host (default 127.0.0.1),\n"
     "--port (default 8080; 0: any free port, printed on stderr). Limits: --max-body BYTES (default 1 MiB;\n"
     "413), --max-texts N (default 64 texts or candidates a request; 413), --timeout S (default 60; 504).\n"
     "Slow or greedy clients: --max-connections N (default 256) connections at once, more wait in the\n"
     "listen backlog; --max-per-client N (default 0: off) from one address, more answered 503 with\n"
     "Retry-After; --idle-timeout S (default 10): a connection silent\n"
     "that long is closed, and a request's headers must be complete within it (408); --min-rate BYTES\n"
     "(default 1024 a second; 0: off): a body slower on average after its first second is answered 408, an\n"
     "answer read slower is cut; --max-header BYTES (default 32768): a longer request line and headers 431.\n"
     "A bad body (empty, not UTF-8, not JSON, a field missing or of the wrong type) is answered 400\n"
     "{\"error\": \"...\"} naming what is wrong. --api-key KEY or --api-key-file FILE (its first line): every\n"
     "endpoint but /health then needs Authorization: Bearer KEY (401). On SIGTERM or SIGINT it stops\n"
     "accepting, answers every request already accepted, and exits 0. --ctx, --min-confidence, --max-chars,\n"
     "the adapter and weight options are those of extract.\n"
     "--teach REVIEWS --labels FILE: annotation at /teach (docs/serve.md, \"Teach it\"): the reviews of REVIEWS\n"
     "(read as extract reads them) asked one at a time, most useful first by --order (as `pocketdec rank`\n"
     "orders them; default complaint for a tagger head with a complaint label, else confidence; --seed N\n"
     "for random), with the model's records to accept or fix; each answer is a line of FILE (JSONL as\n"
     "train/ reads it; FILE.progress beside it), fsync'ed before it is answered; a restart continues at\n"
     "the next review FILE does not hold. Skips are not written.",
     cmd_serve},
    {"quantize", "--model HFDIR --type q4_0|q4_1|q8_0 [--out FILE.gguf]",
     "Writes the HF model as one GGUF v3 file that pocketdec and llama.cpp load: matrices and the\n"
     "embedding quantized row by row as ggml's reference quantizers do, norms F32, the vocabulary\n"
     "from tokenizer.json. Default output: HFDIR-TYPE.gguf. Prints a JSON summary.",
     cmd_quantize},
};

int main(int argc, char **argv)
{
    return cli_main(argc, argv, commands, sizeof commands / sizeof commands[0]);
}
