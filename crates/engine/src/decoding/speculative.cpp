// The project's one way into llama.cpp's drafters and contexts: a C ABI over `common_speculative`
// (the vendored llama.cpp's common/speculative.h) for one drafter type per instance, and over the
// contexts the engine decodes on (a target's with its drafter's, or one alone), each with a thread
// pool of its own; compiled by the engine's build script against the headers llama-cpp-sys-2 builds
// from. Rust wraps it in `decoding/speculative.rs`; nothing else calls it.
//
// Every entry point checks its arguments and catches C++ exceptions: llama.cpp's asserts abort
// the process, so the preconditions they test (a draft before an accept, an empty result before a
// draft) are kept here rather than left to them.

#include "common.h"
#include "ggml-cpu.h"
#include "log.h"
#include "speculative.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr llama_seq_id SEQ = 0;

// llama.cpp's own log (llama and ggml), through one callback: on stderr when asked (never stdout:
// the worker speaks its protocol there), and, while a model loads, the lines where llama.cpp says
// which device each layer went to, kept for the loader to read back.
std::mutex g_log_mu;
bool g_log_stderr = false;
bool g_log_capture = false;
std::string g_log_captured;
constexpr size_t LOG_CAPTURE_MAX = 1 << 20;

void on_llama_log(ggml_log_level /*level*/, const char * text, void * /*user*/) {
    if (text == nullptr) {
        return;
    }
    std::lock_guard<std::mutex> lock(g_log_mu);
    if (g_log_stderr) {
        std::fputs(text, stderr);
    }
    if (g_log_capture && std::strstr(text, "assigned to device") != nullptr &&
        g_log_captured.size() + std::strlen(text) <= LOG_CAPTURE_MAX) {
        g_log_captured += text;
    }
}

void set_error(char * err, size_t err_len, const std::string & msg) {
    if (err == nullptr || err_len == 0) {
        return;
    }
    const size_t n = std::min(err_len - 1, msg.size());
    std::memcpy(err, msg.data(), n);
    err[n] = '\0';
}

// Runs `start` (which makes a drafter or a pair), turning a C++ exception into null and a reason.
template <typename F> auto started(char * err, size_t err_len, F start) -> decltype(start()) {
    try {
        return start();
    } catch (const std::exception & e) {
        set_error(err, err_len, e.what());
    } catch (...) {
        set_error(err, err_len, "llama.cpp could not start the drafter");
    }
    return nullptr;
}

} // namespace

extern "C" {

// Where llama.cpp's logs go. Its own log (llama and ggml, every level): to stderr when
// `stderr_on`, else nowhere; either way the layer placement of a model being loaded is kept (see
// dl_load_capture). Its common log (its drafters' messages, printed by a thread of its own):
// warnings and errors on stderr when `stderr_on`, nothing otherwise — never its informational
// lines, which go to stdout, where the engine's worker speaks its protocol.
void dl_llama_log(bool stderr_on) {
    {
        std::lock_guard<std::mutex> lock(g_log_mu);
        g_log_stderr = stderr_on;
    }
    llama_log_set(on_llama_log, nullptr);
    common_log_set_verbosity_thold(stderr_on ? LOG_LEVEL_WARN : -1);
}

// Starts (clearing what was kept) or stops keeping the placement lines of a model load.
void dl_load_capture(bool on) {
    std::lock_guard<std::mutex> lock(g_log_mu);
    g_log_capture = on;
    if (on) {
        g_log_captured.clear();
    }
}

// Copies what was kept (at most `cap` bytes, not NUL-terminated) to `out`; returns its length.
size_t dl_load_captured(char * out, size_t cap) {
    std::lock_guard<std::mutex> lock(g_log_mu);
    const size_t n = std::min(cap, g_log_captured.size());
    if (out != nullptr && n > 0) {
        std::memcpy(out, g_log_captured.data(), n);
    }
    return g_log_captured.size();
}

// Status codes (mirrored in speculative.rs).
enum dl_status : int32_t {
    DL_OK = 0,
    DL_INVALID = 1,
    DL_FAILED = 2,
};

// The drafters the shim makes, by its own numbers (speculative.rs's `NativeKind::code`), never
// llama.cpp's: each is mapped to its `common_speculative_type` by name below, so a llama.cpp that
// inserts a type (and moves the numbers after it) still gets the drafter asked for, and one that
// renames or drops a type fails to build here rather than running another drafter.
enum dl_kind : int32_t {
    DL_KIND_DRAFT_SIMPLE = 1,
    DL_KIND_DRAFT_EAGLE3 = 2,
    DL_KIND_DRAFT_MTP = 3,
    DL_KIND_DRAFT_DFLASH = 4,
    DL_KIND_DRAFT_DSPARK = 5,
    DL_KIND_NGRAM_SIMPLE = 6,
    DL_KIND_NGRAM_MAP_K = 7,
    DL_KIND_NGRAM_MAP_K4V = 8,
    DL_KIND_NGRAM_MOD = 9,
    DL_KIND_NGRAM_CACHE = 10,
};

// llama.cpp's type for a `dl_kind`; `COMMON_SPECULATIVE_TYPE_NONE` for a number the shim does not know.
static common_speculative_type llama_type(int32_t kind) {
    switch (kind) {
        case DL_KIND_DRAFT_SIMPLE: return COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE;
        case DL_KIND_DRAFT_EAGLE3: return COMMON_SPECULATIVE_TYPE_DRAFT_EAGLE3;
        case DL_KIND_DRAFT_MTP: return COMMON_SPECULATIVE_TYPE_DRAFT_MTP;
        case DL_KIND_DRAFT_DFLASH: return COMMON_SPECULATIVE_TYPE_DRAFT_DFLASH;
        case DL_KIND_DRAFT_DSPARK: return COMMON_SPECULATIVE_TYPE_DRAFT_DSPARK;
        case DL_KIND_NGRAM_SIMPLE: return COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE;
        case DL_KIND_NGRAM_MAP_K: return COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K;
        case DL_KIND_NGRAM_MAP_K4V: return COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K4V;
        case DL_KIND_NGRAM_MOD: return COMMON_SPECULATIVE_TYPE_NGRAM_MOD;
        case DL_KIND_NGRAM_CACHE: return COMMON_SPECULATIVE_TYPE_NGRAM_CACHE;
        default: return COMMON_SPECULATIVE_TYPE_NONE;
    }
}

// What a drafter is asked to be. `type` is a `dl_kind`.
struct dl_spec_params {
    int32_t type;
    // Model drafters (draft-simple, -eagle3, -mtp, -dflash, -dspark).
    int32_t n_max;
    int32_t n_min;
    float p_min;
    // ngram-mod.
    int32_t mod_n_match;
    int32_t mod_n_min;
    int32_t mod_n_max;
};

struct dl_spec {
    common_params_speculative params;
    common_speculative * spec = nullptr;
    common_batch batch;
    llama_tokens prompt;
    llama_tokens draft;
    // Whether the last draft proposed tokens that llama.cpp has not heard the fate of, and how many.
    bool pending = false;
    size_t drafted = 0;
    bool has_batch = false;
};

// A drafter of `p->type` over the target context `tgt` and, for model drafters, the drafter's
// context `dft` (both may be null for the n-gram types). Null on failure, with the reason in `err`.
dl_spec * dl_spec_init(const dl_spec_params * p, llama_context * tgt, llama_context * dft, char * err, size_t err_len) {
    const common_speculative_type type = p == nullptr ? COMMON_SPECULATIVE_TYPE_NONE : llama_type(p->type);
    if (type == COMMON_SPECULATIVE_TYPE_NONE) {
        set_error(err, err_len, "unknown drafter type");
        return nullptr;
    }
    const bool model_drafter = type == COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE || type == COMMON_SPECULATIVE_TYPE_DRAFT_EAGLE3 ||
                               type == COMMON_SPECULATIVE_TYPE_DRAFT_MTP || type == COMMON_SPECULATIVE_TYPE_DRAFT_DFLASH ||
                               type == COMMON_SPECULATIVE_TYPE_DRAFT_DSPARK;
    if (model_drafter && (tgt == nullptr || dft == nullptr)) {
        set_error(err, err_len, "a model drafter needs the target's and the drafter's contexts");
        return nullptr;
    }
    if (p->n_max <= 0 || p->n_min < 0 || p->n_min > p->n_max || p->mod_n_match <= 0 || p->mod_n_max <= 0 ||
        p->mod_n_min < 0 || p->mod_n_min > p->mod_n_max) {
        set_error(err, err_len, "invalid drafter lengths");
        return nullptr;
    }
    return started(err, err_len, [&]() -> dl_spec * {
        auto s = std::make_unique<dl_spec>();
        s->params.types = { type };
        s->params.draft.ctx_tgt = tgt;
        s->params.draft.ctx_dft = dft;
        s->params.draft.n_max = p->n_max;
        s->params.draft.n_min = p->n_min;
        s->params.draft.p_min = p->p_min;
        s->params.ngram_mod.n_match = p->mod_n_match;
        s->params.ngram_mod.n_min = p->mod_n_min;
        s->params.ngram_mod.n_max = p->mod_n_max;
        if (tgt != nullptr) {
            s->batch = common_batch(tgt);
            s->has_batch = true;
        }
        s->spec = common_speculative_init(s->params, 1);
        if (s->spec == nullptr) {
            set_error(err, err_len, "llama.cpp could not start the drafter");
            return nullptr;
        }
        return s.release();
    });
}

void dl_spec_free(dl_spec * s) {
    if (s == nullptr) {
        return;
    }
    if (s->spec != nullptr) {
        common_speculative_free(s->spec);
    }
    delete s;
}

// A new generation whose prompt is `tokens` (a pending draft is forgotten).
int32_t dl_spec_begin(dl_spec * s, const llama_token * tokens, size_t n) {
    if (s == nullptr || (tokens == nullptr && n > 0)) {
        return DL_INVALID;
    }
    try {
        s->prompt.assign(tokens, tokens + n);
        s->pending = false;
        common_speculative_begin(s->spec, SEQ, s->prompt);
        return DL_OK;
    } catch (...) {
        return DL_FAILED;
    }
}

// The target decoded `n` tokens at `pos` (one sequence; `output[i]` non-zero where logits were
// asked for): model drafters read the target's hidden states of that batch.
int32_t dl_spec_process(dl_spec * s, const llama_token * tokens, const llama_pos * pos, const int8_t * output, int32_t n) {
    if (s == nullptr || tokens == nullptr || pos == nullptr || output == nullptr || n <= 0) {
        return DL_INVALID;
    }
    if (!s->has_batch) {
        return DL_OK;
    }
    try {
        s->batch.clear();
        for (int32_t i = 0; i < n; ++i) {
            s->batch.add(tokens[i], pos[i], SEQ, output[i] != 0);
        }
        return common_speculative_process(s->spec, s->batch) ? DL_OK : DL_FAILED;
    } catch (...) {
        return DL_FAILED;
    }
}

// Drafts up to `n_max` tokens after `id_last` at position `pos` (the context before it is
// `context`, `n_context` tokens). Writes at most `cap` tokens to `out` and their count to `n_out`.
int32_t dl_spec_draft(dl_spec * s, llama_pos pos, llama_token id_last, const llama_token * context, size_t n_context,
                      int32_t n_max, llama_token * out, size_t cap, size_t * n_out) {
    if (s == nullptr || (context == nullptr && n_context > 0) || out == nullptr || n_out == nullptr || pos < 0 ||
        n_max <= 0) {
        return DL_INVALID;
    }
    *n_out = 0;
    try {
        if (s->pending) {
            // llama.cpp drafts once per verification: what stood of the last draft comes first.
            common_speculative_accept(s->spec, SEQ, 0);
            s->pending = false;
        }
        s->prompt.assign(context, context + n_context);
        s->draft.clear();
        auto & dp = common_speculative_get_draft_params(s->spec, SEQ);
        dp.drafting = true;
        dp.n_max = n_max;
        dp.pos0 = pos;
        dp.id_last = id_last;
        dp.prompt = &s->prompt;
        dp.result = &s->draft;
        dp.result_q = nullptr;
        common_speculative_draft(s->spec);
        const size_t n = std::min(cap, s->draft.size());
        std::copy(s->draft.begin(), s->draft.begin() + n, out);
        *n_out = n;
        s->pending = n > 0;
        s->drafted = n;
        return DL_OK;
    } catch (...) {
        return DL_FAILED;
    }
}

// `n` tokens of the last draft stood. Without a pending draft there is nothing to tell.
int32_t dl_spec_accept(dl_spec * s, uint16_t n) {
    if (s == nullptr) {
        return DL_INVALID;
    }
    if (!s->pending) {
        return DL_OK;
    }
    try {
        common_speculative_accept(s->spec, SEQ, static_cast<uint16_t>(std::min<size_t>(n, s->drafted)));
        s->pending = false;
        return DL_OK;
    } catch (...) {
        return DL_FAILED;
    }
}

// ---------------------------------------------------------------------------------------------
// A target context whose decodes feed a model drafter: the target's context and the drafter's
// (on the drafter's model, or on the target's own with an MTP context), made here because the
// drafter's must name the target's (`ctx_other`: heads that borrow the target's embeddings and
// output, or its KV cache), and a drafter over both.

struct dl_ctx_params {
    uint32_t n_ctx;
    uint32_t n_batch;
    int32_t n_threads;
    uint32_t n_rs_seq;
    int32_t type_k;
    int32_t type_v;
    int32_t flash_attn;
    // Whether operations on weights kept in host memory may run on a GPU (llama.cpp's default):
    // off for a model with no layer offloaded, so "no GPU layers" means the CPU computes everything.
    bool op_offload;
};

// A target's context and, in a pair, its drafter's context and the drafter (a context alone has
// neither).
struct dl_pair {
    llama_context * tgt = nullptr;
    llama_context * dft = nullptr;
    dl_spec * spec = nullptr;
    ggml_threadpool * tgt_pool = nullptr;
    ggml_threadpool * dft_pool = nullptr;
    llama_batch batch{};
    int32_t n_batch = 0;
    bool has_batch = false;

    ~dl_pair() {
        // The drafter reads both contexts, the drafter's names the target's: freed in that order,
        // then the pools their computations ran on.
        dl_spec_free(spec);
        if (dft != nullptr) {
            llama_free(dft);
        }
        if (tgt != nullptr) {
            llama_free(tgt);
        }
        for (ggml_threadpool * pool : {dft_pool, tgt_pool}) {
            if (pool != nullptr) {
                ggml_threadpool_free(pool);
            }
        }
        if (has_batch) {
            llama_batch_free(batch);
        }
    }
};

// A thread pool of its own for `ctx`: without one, ggml's CPU backend makes one for every graph it
// computes and joins it after (threads started and stopped on every token: llama.cpp's own tools
// attach a pool, and decode about 2 % faster for it on two cores). Its workers sleep as soon as a
// graph is done (poll 0): a target and a draft model take turns, and a pool still spinning would
// take a core from the other. Null (and nothing attached) if ggml cannot make one: the context then
// computes as before.
static ggml_threadpool * attach_pool(llama_context * ctx, int32_t n_threads) {
    ggml_threadpool_params params = ggml_threadpool_params_default(std::max(1, n_threads));
    params.poll = 0;
    ggml_threadpool * pool = ggml_threadpool_new(&params);
    if (pool != nullptr) {
        llama_attach_threadpool(ctx, pool, pool);
    }
    return pool;
}

static void init_batch(dl_pair & pair, uint32_t n_batch) {
    pair.n_batch = static_cast<int32_t>(n_batch);
    pair.batch = llama_batch_init(pair.n_batch, 0, 1);
    pair.has_batch = true;
}

static llama_context_params context_params(const dl_ctx_params & p) {
    llama_context_params c = llama_context_default_params();
    c.n_ctx = p.n_ctx;
    c.n_batch = p.n_batch;
    c.n_ubatch = p.n_batch;
    c.n_threads = p.n_threads;
    c.n_threads_batch = p.n_threads;
    c.n_rs_seq = p.n_rs_seq;
    c.type_k = static_cast<ggml_type>(p.type_k);
    c.type_v = static_cast<ggml_type>(p.type_v);
    c.flash_attn_type = static_cast<llama_flash_attn_type>(p.flash_attn);
    c.op_offload = p.op_offload;
    return c;
}

// A pair holding only `model`'s context made with `p` (and its pool); null, with `failed` as the
// reason, when llama.cpp cannot make it.
static std::unique_ptr<dl_pair> with_target(llama_model * model, const dl_ctx_params & p, const char * failed,
                                            char * err, size_t err_len) {
    auto pair = std::make_unique<dl_pair>();
    pair->tgt = llama_init_from_model(model, context_params(p));
    if (pair->tgt == nullptr) {
        set_error(err, err_len, failed);
        return nullptr;
    }
    pair->tgt_pool = attach_pool(pair->tgt, p.n_threads);
    return pair;
}

// A pair over `target` and `drafter` (null: the target's own MTP layers, in an MTP context).
dl_pair * dl_pair_init(llama_model * target, llama_model * drafter, const dl_ctx_params * tp, const dl_ctx_params * dp,
                       const dl_spec_params * sp, char * err, size_t err_len) {
    if (target == nullptr || tp == nullptr || dp == nullptr || sp == nullptr || tp->n_batch == 0 || tp->n_ctx == 0) {
        set_error(err, err_len, "invalid arguments");
        return nullptr;
    }
    return started(err, err_len, [&]() -> dl_pair * {
        auto pair = with_target(target, *tp, "llama.cpp could not create the target's context (out of memory?)", err, err_len);
        if (pair == nullptr) {
            return nullptr;
        }
        llama_context_params dc = context_params(*dp);
        dc.n_ctx = llama_n_ctx(pair->tgt);
        dc.n_rs_seq = 0;
        dc.ctx_other = pair->tgt;
        if (drafter == nullptr) {
            dc.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
        }
        // A draft samples one position per decode, except DFlash and DSpark: they decode the whole
        // block (anchor and n_max masks) at once and sample every position on the backend, as
        // llama.cpp's own drafter contexts are made (common_base_params_to_speculative).
        const uint32_t per_seq = static_cast<uint32_t>(std::max(1, sp->n_max + 1));
        const bool block = sp->type == DL_KIND_DRAFT_DFLASH || sp->type == DL_KIND_DRAFT_DSPARK;
        dc.n_outputs_max = block ? per_seq : 1;
        dc.n_outputs_max_per_seq = block ? per_seq : 1;
        pair->dft = llama_init_from_model(drafter != nullptr ? drafter : target, dc);
        if (pair->dft == nullptr) {
            set_error(err, err_len, "llama.cpp could not create the drafter's context (a head for another model, or out of memory)");
            return nullptr;
        }
        pair->dft_pool = attach_pool(pair->dft, dp->n_threads);
        pair->spec = dl_spec_init(sp, pair->tgt, pair->dft, err, err_len);
        if (pair->spec == nullptr) {
            return nullptr;
        }
        init_batch(*pair, tp->n_batch);
        return pair.release();
    });
}

// A context of `model` alone (no drafter reads it): the pair functions below take it, `feed` unset.
dl_pair * dl_solo_init(llama_model * model, const dl_ctx_params * p, char * err, size_t err_len) {
    if (model == nullptr || p == nullptr || p->n_batch == 0 || p->n_ctx == 0) {
        set_error(err, err_len, "invalid arguments");
        return nullptr;
    }
    return started(err, err_len, [&]() -> dl_pair * {
        auto pair = with_target(model, *p, "llama.cpp could not create the context (out of memory?)", err, err_len);
        if (pair == nullptr) {
            return nullptr;
        }
        init_batch(*pair, p->n_batch);
        return pair.release();
    });
}

void dl_pair_free(dl_pair * pair) {
    delete pair;
}

dl_spec * dl_pair_spec(dl_pair * pair) {
    return pair == nullptr ? nullptr : pair->spec;
}

uint32_t dl_pair_n_ctx(const dl_pair * pair) {
    return pair == nullptr ? 0 : llama_n_ctx(pair->tgt);
}

// Decodes `n` tokens (at most the batch) at positions `pos0..` on the target, logits where
// `output[i]` is non-zero, then, when `feed` is set, lets the drafter read the batch (a drafter
// not fed a batch has a gap it cannot draft across: the caller stops asking it). Returns
// llama_decode's status (0: decoded), or -100 for invalid arguments and -101 when the drafter failed.
int32_t dl_pair_decode(dl_pair * pair, const llama_token * tokens, int32_t n, llama_pos pos0, const int8_t * output,
                       bool feed) {
    if (pair == nullptr || tokens == nullptr || output == nullptr || n <= 0 || n > pair->n_batch || pos0 < 0) {
        return -100;
    }
    try {
        llama_batch & b = pair->batch;
        b.n_tokens = n;
        for (int32_t i = 0; i < n; ++i) {
            b.token[i] = tokens[i];
            b.pos[i] = pos0 + i;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = SEQ;
            b.logits[i] = output[i] != 0;
        }
        const int32_t rc = llama_decode(pair->tgt, b);
        if (rc != 0 || !feed || pair->spec == nullptr) {
            return rc;
        }
        return dl_spec_process(pair->spec, tokens, b.pos, output, n) == DL_OK ? 0 : -101;
    } catch (...) {
        return -101;
    }
}

// The logits of row `i` of the last decoded batch (null when it asked for none there).
const float * dl_pair_logits(dl_pair * pair, int32_t i) {
    if (pair == nullptr || i < 0) {
        return nullptr;
    }
    return llama_get_logits_ith(pair->tgt, i);
}

// Forgets positions `from..` in the drafter's context and, when `target` is set, the target's.
bool dl_pair_trim(dl_pair * pair, llama_pos from, bool target) {
    if (pair == nullptr || from < 0) {
        return false;
    }
    const bool t = !target || llama_memory_seq_rm(llama_get_memory(pair->tgt), SEQ, from, -1);
    const bool d = pair->dft == nullptr || llama_memory_seq_rm(llama_get_memory(pair->dft), SEQ, from, -1);
    return t && d;
}

void dl_pair_clear(dl_pair * pair) {
    if (pair == nullptr) {
        return;
    }
    llama_memory_clear(llama_get_memory(pair->tgt), true);
    if (pair->dft != nullptr) {
        llama_memory_clear(llama_get_memory(pair->dft), true);
    }
}

} // extern "C"
