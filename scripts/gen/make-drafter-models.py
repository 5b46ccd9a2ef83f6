#!/usr/bin/env python3
"""Writes small synthetic GGUF drafters of the kinds llama.cpp drives besides MTP: an EAGLE-3 head,
a DFlash block drafter, a DSpark drafter, and a Gemma 4 assistant (with the small Gemma 4 target it
belongs to).

None of these can be had from the package registries here, so tests of the `draft-eagle3`,
`draft-dflash`, `draft-dspark` and `draft-mtp` (separate head) strategies can run on these: random
weights (seeded, no timestamps, so a file is the same byte for byte on every run), each file a few
tens of megabytes at most. Every metadata key, tensor name and shape is the one the vendored
llama.cpp loads for the architecture (src/models/eagle3.cpp, dflash.cpp, gemma4.cpp,
gemma4-assistant.cpp; common/speculative.cpp drives them).

Targets. EAGLE-3 and DFlash read hidden states out of the target's layers, and llama.cpp taps
those only in some architectures' graphs (qwen35, llama, qwen3, gemma4 ...; not qwen2, so not the
Qwen2.5 0.5B test model). The `eagle3`, `dflash` and `dspark` drafters therefore draft for the
synthetic Qwen3.5 target that make-mtp-model.py writes (n_embd 64, two trunk layers, Qwen2.5's
tokenizer, 151936 tokens), which is also small enough that the heads can share its embeddings and
output layer (`ctx_other`) and stay tiny. The Gemma 4 assistant must share a Gemma 4 target's KV
cache, so `gemma4` writes that target: two layers (sliding-window, then full attention), n_embd 48,
with the Gemma 3 270M test model's tokenizer (262144 tokens). Real Gemma 4 files carry a BPE
tokenizer (`tokenizer.ggml.model = gemma4`, with merges); the Gemma 3 one copied here is
SentencePiece (`llama`, with scores), which llama.cpp loads the same way for any architecture.

The weights are not trained, but they are shaped so the drafts are often right. The Qwen3.5
target mostly says a fixed successor of its current token, succ(x) = argmax output . norm(embd[x])
(make-mtp-model.py's docstring says why), so:

- eagle3: the head's one decoder layer attends to its own position (query = key = the normalised
  token embedding, sharp enough to ignore the rest of the context) and passes that embedding through
  value and output projections; the target's hidden states (fc keeps the final one) and the head's
  feed-forward add only a little. With the target's output layer the head then predicts
  succ(token), the token after the one it is given: what the target will say, most of the time.
- dflash: the noise block [anchor, mask, mask, ...] attends to the anchor only (the mask token's
  own embedding sets the key direction; two query heads cover both signs of the anchor's key;
  the injected target context is zeroed by the encoder norm so it neither wins nor dilutes
  attention), and the value/output projections pass the anchor's embedding through. Every block
  position then predicts succ(anchor): the first draft token is usually right, the later ones
  only when the target repeats itself. One non-causal layer cannot compose succ with itself, so
  a DFlash drafter shaped this way drafts about one good token a round; that is said plainly here
  because it is the limit of this shaping, not of DFlash.
- dspark: the same drafter plus the Markov head, whose bias for the previous token is the target's
  own successor logits (markov_w1 = the normalised embeddings, markov_w2 = the output rows), and a
  faint base (output_norm 0.02). llama.cpp chains that bias through the block by argmax, so the
  drafts are succ(anchor), succ(succ(anchor)), ...: the whole block is often right. The confidence
  head is constant (sigmoid(4) = 0.98), so a p_min below that never cuts a draft short.
- gemma4: the target's layers add little to the scaled token embedding, so it too mostly says a
  fixed successor of its current token. Its output layer reads only the first 32 of its 48 hidden
  dimensions (output = [A | 0], A random), which is what lets a 32-wide assistant reproduce it.
- gemma4-assistant: the pre-projection passes those 32 dimensions of the target's embedding of
  the token through (and a little of the target's hidden state), its layers add little, and its
  LM head (its own token_embd, as in real assistants) is A: it predicts the target's successor of
  the token it is given. The post-projection maps back into the target's hidden space.

Checked against llama.cpp built from the vendored source (CPU, greedy verification, one prompt,
drafting through common_speculative as the engine does): eagle3 and dspark had 56% of their
6-token drafts accepted (4.4 tokens a round), dflash 75% of its first draft tokens and none of the
later ones (1.75 a round), the Gemma 4 assistant 53% of its 4-token drafts (3.1 a round). A
DFlash/DSpark drafter's context needs n_outputs_max_per_seq >= n_max + 1 (the default is 1, and
llama.cpp samples the whole block on the backend), as common_speculative's own draft-context
parameters set it; with the default every block decode fails and the drafts come back empty.

Usage: make-drafter-models.py KIND SOURCE_GGUF OUT_GGUF

  KIND eagle3, dflash, dspark: SOURCE_GGUF is the target, the synthetic Qwen3.5 model written by
      make-mtp-model.py (its tokenizer is copied and its embeddings and output layer read).
  KIND gemma4: SOURCE_GGUF is the Gemma 3 270M test model (only its tokenizer is copied).
  KIND gemma4-assistant: SOURCE_GGUF is the target written by KIND gemma4 (tokenizer copied,
      its output layer read).
"""
import sys

import gguf
import numpy as np

# The mask token DFlash fills its noise block with: the first of the Qwen2.5 tokenizer's unused
# padding slots ('[PAD151665]'); any token would do, its embedding is all that matters.
QWEN_MASK_TOKEN = 151665

# How much a drafter's own extra paths (its feed-forward, the target state it mixes in) add,
# relative to the token signal it passes through. The targets' successor is an argmax over 150k to
# 260k tokens: a 2% change of the hidden state already flips it for about 7% of tokens, a 20% change
# for about 35%, so the drafters keep theirs this small.
DRAFT_SCALE = 0.02


def copy_tokenizer(reader, writer):
    """Copies every tokenizer.* key of `reader` into `writer`; returns the number of tokens."""
    n_vocab = 0
    for key, f in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        if key == "tokenizer.ggml.tokens":
            n_vocab = len(f.data)
        vtype = f.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = f.types[1]
            if sub == gguf.GGUFValueType.STRING:
                values = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            else:
                values = [f.parts[i].tolist()[0] for i in f.data]
            writer.add_key_value(key, values, vtype, sub_type=sub)
        elif vtype == gguf.GGUFValueType.STRING:
            writer.add_key_value(key, bytes(f.parts[f.data[0]]).decode("utf-8"), vtype)
        else:
            writer.add_key_value(key, f.parts[f.data[0]].tolist()[0], vtype)
    if n_vocab == 0:
        sys.exit("the source model has no token list")
    return n_vocab


def field(reader, key):
    f = reader.fields.get(key)
    if f is None:
        sys.exit(f"the source model has no '{key}'")
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    return f.parts[f.data[0]].tolist()[0]


def tensor(reader, name):
    """A tensor of `reader` as numpy has it: (ne1, ne0), i.e. one row per token for embeddings."""
    for t in reader.tensors:
        if t.name == name:
            return np.asarray(t.data)
    sys.exit(f"the source model has no tensor '{name}'")


def rms_rows(m):
    """Each row of `m` divided by its root mean square (llama.cpp's RMS norm, without eps)."""
    m = m.astype(np.float64)
    return m / np.sqrt(np.mean(m * m, axis=1, keepdims=True))


def finish(writer):
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


class Weights:
    """A seeded source of the few shapes of weights the drafters use (numpy (rows, cols) = GGUF
    (ne1, ne0): a matrix {n_in, n_out} in llama.cpp is (n_out, n_in) here)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def normal(self, *shape, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def dense(self, rows, cols):
        # Output about as large as the (normalised) input.
        return self.normal(rows, cols, scale=1 / np.sqrt(cols))

    def small(self, rows, cols):
        # Output DRAFT_SCALE of the (normalised) input's size.
        return self.normal(rows, cols, scale=DRAFT_SCALE / np.sqrt(cols))


def ones(n, value=1.0):
    return np.full(n, value, dtype=np.float32)


def eye(n, scale=1.0):
    return (np.eye(n) * scale).astype(np.float32)


def qwen35_target(reader):
    """The synthetic Qwen3.5 target's shape: hidden size and the layers whose inputs llama.cpp taps."""
    arch = field(reader, "general.architecture")
    if arch != "qwen35":
        sys.exit(f"the target must be make-mtp-model.py's qwen35 model (got '{arch}'): llama.cpp taps "
                 "layer inputs only in some architectures' graphs, and qwen2's is not one of them")
    n_embd = field(reader, f"{arch}.embedding_length")
    n_layer = field(reader, f"{arch}.block_count") - field(reader, f"{arch}.nextn_predict_layers")
    return arch, n_embd, n_layer


# --------------------------------------------------------------------------------------------
# EAGLE-3 (src/models/eagle3.cpp; common/speculative.cpp common_speculative_impl_draft_eagle3)

def write_eagle3(src, out):
    w = Weights(20261201)
    reader = gguf.GGUFReader(src)
    _, n_embd, n_layer_tgt = qwen35_target(reader)
    # The decoder's token embeddings and output layer are the target's (`ctx_other`), so its width
    # is the target's; one head of the full width.
    n_head, head_dim, n_ff = 1, n_embd, 2 * n_embd
    # Three taps, as EAGLE-3 requires: the inputs of the first and last trunk layers and, as id
    # n_layer, the target's final normalised hidden state (llama_set_embeddings_nextn on the target).
    target_layers = [0, n_layer_tgt - 1, n_layer_tgt]

    arch = "eagle3"
    writer = gguf.GGUFWriter(out, arch)
    writer.add_name("Draftlab synthetic EAGLE-3 head for the synthetic Qwen3.5 (random weights)")
    writer.add_uint32(f"{arch}.context_length", 4096)
    writer.add_uint32(f"{arch}.embedding_length", n_embd)
    writer.add_uint32(f"{arch}.block_count", 1)
    writer.add_uint32(f"{arch}.feed_forward_length", n_ff)
    writer.add_uint32(f"{arch}.attention.head_count", n_head)
    writer.add_uint32(f"{arch}.attention.head_count_kv", n_head)
    writer.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32(f"{arch}.rope.freq_base", 10000.0)
    writer.add_array(f"{arch}.target_layers", target_layers)
    writer.add_uint32(f"{arch}.target_hidden_size", n_embd)
    # The residual carries the normalised (and scaled down, attn_norm_2) target state, not the raw one.
    writer.add_bool(f"{arch}.norm_before_residual", True)
    copy_tokenizer(reader, writer)

    zero = np.zeros((n_embd, n_embd), dtype=np.float32)
    # fc: a little of the two layer inputs, the final hidden state passed through.
    writer.add_tensor("fc.weight", np.concatenate([w.small(n_embd, n_embd), w.small(n_embd, n_embd), eye(n_embd)], axis=1))
    writer.add_tensor("output_norm.weight", ones(n_embd))
    writer.add_tensor("blk.0.attn_norm.weight", ones(n_embd))
    # hidden_norm: the target features reach the output at DRAFT_SCALE of the token's weight.
    writer.add_tensor("blk.0.attn_norm_2.weight", ones(n_embd, DRAFT_SCALE))
    # Attention input is [norm(token embedding) | norm(g)]. Query = key = 2 x the embedding half:
    # a position's score with itself is 2*2*64/8 = 32, with other tokens 0 give or take 4, so each
    # position reads its own value (or that of the same token elsewhere), the embedding itself.
    qk = np.concatenate([eye(n_embd, 2.0), zero], axis=1)
    writer.add_tensor("blk.0.attn_q.weight", qk)
    writer.add_tensor("blk.0.attn_k.weight", qk.copy())
    writer.add_tensor("blk.0.attn_v.weight", np.concatenate([eye(n_embd), zero], axis=1))
    writer.add_tensor("blk.0.attn_output.weight", eye(head_dim * n_head))
    writer.add_tensor("blk.0.ffn_norm.weight", ones(n_embd))
    writer.add_tensor("blk.0.ffn_gate.weight", w.dense(n_ff, n_embd))
    writer.add_tensor("blk.0.ffn_down.weight", w.small(n_embd, n_ff))
    writer.add_tensor("blk.0.ffn_up.weight", w.dense(n_ff, n_embd))
    finish(writer)


# --------------------------------------------------------------------------------------------
# DFlash / DSpark (src/models/dflash.cpp; common/speculative.cpp common_speculative_impl_draft_dflash)

def write_dflash(src, out, dspark):
    w = Weights(20261202 if not dspark else 20261203)
    reader = gguf.GGUFReader(src)
    _, n_embd, n_layer_tgt = qwen35_target(reader)
    # The draft's width must be the target's: the loader sizes fc by len(target_layers) x its own
    # n_embd, common/speculative.cpp feeds it len(target_layers) x the target's.
    head_dim = n_embd
    n_head = n_head_kv = 2
    n_rot = head_dim // 2  # the last half of each head is not rotated: the attention's key lives there
    n_ff = 2 * n_embd
    block_size = 16
    target_layers = list(range(n_layer_tgt))  # qwen35 taps the inputs of its trunk layers only

    embd = tensor(reader, "token_embd.weight")
    out_w = tensor(reader, "output.weight")
    n_vocab_src = embd.shape[0]
    assert embd.shape == (n_vocab_src, n_embd) and out_w.shape == (n_vocab_src, n_embd)

    arch = "dflash"
    writer = gguf.GGUFWriter(out, arch)
    what = "DSpark drafter" if dspark else "DFlash block drafter"
    writer.add_name(f"Draftlab synthetic {what} for the synthetic Qwen3.5 (random weights)")
    writer.add_uint32(f"{arch}.context_length", 4096)
    writer.add_uint32(f"{arch}.embedding_length", n_embd)
    writer.add_uint32(f"{arch}.block_count", 1)
    writer.add_uint32(f"{arch}.feed_forward_length", n_ff)
    writer.add_uint32(f"{arch}.attention.head_count", n_head)
    writer.add_uint32(f"{arch}.attention.head_count_kv", n_head_kv)
    writer.add_uint32(f"{arch}.attention.key_length", head_dim)
    writer.add_uint32(f"{arch}.attention.value_length", head_dim)
    writer.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32(f"{arch}.rope.freq_base", 1000000.0)
    writer.add_uint32(f"{arch}.rope.dimension_count", n_rot)
    writer.add_uint32(f"{arch}.block_size", block_size)
    writer.add_array(f"{arch}.target_layers", target_layers)
    if dspark:
        writer.add_bool(f"{arch}.sample_from_anchor", True)
        writer.add_bool(f"{arch}.has_confidence_head", True)
    n_vocab = copy_tokenizer(reader, writer)
    assert n_vocab == n_vocab_src, "the target's token list and embeddings disagree"
    writer.add_uint32("tokenizer.ggml.mask_token_id", QWEN_MASK_TOKEN)

    # u: the direction of the mask token's embedding (after RMS norm it is the same direction).
    e_mask = embd[QWEN_MASK_TOKEN].astype(np.float64)
    u = e_mask / np.linalg.norm(e_mask)
    key = head_dim - 1  # the unrotated head dimension the scores are made in

    # Encoder: fc passes the last tapped layer's input through, but the encoder norm is zero, so
    # the injected context keys and values are zero: score 0, value 0.
    fc = np.concatenate([w.small(n_embd, n_embd * (len(target_layers) - 1)), eye(n_embd)], axis=1)
    writer.add_tensor("fc.weight", fc)
    writer.add_tensor("enc.output_norm.weight", ones(n_embd, 0.0))
    # DSpark: a faint base (DRAFT_SCALE), so the Markov head's bias decides every block position.
    writer.add_tensor("output_norm.weight", ones(n_embd, DRAFT_SCALE if dspark else 1.0))

    writer.add_tensor("blk.0.attn_norm.weight", ones(n_embd))
    # Scores. Both key heads are sign(u . x) in dimension `key` (after the key norm, +-8 x sqrt(5));
    # the mask token's key is +. Query head 0 is -sign(u . x), query head 1 +sign(u . x), so at a
    # mask position head 0 scores the anchor +40 when its key is - (masks -40, context 0), and
    # head 1 scores anchor and masks +40 alike when the anchor's key is +.
    wq = np.zeros((n_head * head_dim, n_embd), dtype=np.float32)
    wq[0 * head_dim + key] = -u
    wq[1 * head_dim + key] = u
    wk = np.zeros((n_head_kv * head_dim, n_embd), dtype=np.float32)
    wk[0 * head_dim + key] = u
    wk[1 * head_dim + key] = u
    qk_norm = np.zeros(head_dim, dtype=np.float32)
    qk_norm[key] = np.sqrt(5.0)
    # Values: head 0 the embedding itself (it reads the anchor alone); head 1 the embedding without
    # its mask direction, so the masks it also reads add nothing.
    wv = np.concatenate([np.eye(n_embd), np.eye(n_embd) - np.outer(u, u)], axis=0).astype(np.float32)
    # Outputs: loud enough to drown the mask token's own embedding in the residual (1/64); head 1
    # shares its weight between the anchor and up to block_size - 1 masks, hence the extra block_size.
    gain = 64.0
    wo = np.concatenate([eye(n_embd, gain), eye(n_embd, gain * block_size)], axis=1)
    writer.add_tensor("blk.0.attn_q.weight", wq)
    writer.add_tensor("blk.0.attn_k.weight", wk)
    writer.add_tensor("blk.0.attn_v.weight", wv)
    writer.add_tensor("blk.0.attn_output.weight", wo)
    writer.add_tensor("blk.0.attn_q_norm.weight", qk_norm)
    writer.add_tensor("blk.0.attn_k_norm.weight", qk_norm.copy())
    writer.add_tensor("blk.0.ffn_norm.weight", ones(n_embd))
    writer.add_tensor("blk.0.ffn_gate.weight", w.dense(n_ff, n_embd))
    writer.add_tensor("blk.0.ffn_down.weight", w.small(n_embd, n_ff))
    writer.add_tensor("blk.0.ffn_up.weight", w.dense(n_ff, n_embd))

    if dspark:
        # Markov head: bias(prev) = markov_w2 . markov_w1[prev] = output . norm(embd[prev]), the
        # target's own logits for the token after prev (rank = the target's width).
        writer.add_tensor("markov_w1.weight", rms_rows(embd).astype(np.float16))
        writer.add_tensor("markov_w2.weight", np.array(out_w, dtype=np.float16))
        # Confidence head: constant, sigmoid(0 . features + 4).
        writer.add_tensor("conf_proj.weight", np.zeros((1, 2 * n_embd), dtype=np.float32))
        writer.add_tensor("conf_proj.bias", ones(1, 4.0))
    finish(writer)


# --------------------------------------------------------------------------------------------
# Gemma 4 target and assistant (src/models/gemma4.cpp, gemma4-assistant.cpp; the assistant's KV
# cache shares the target's last sliding-window and last full-attention layers, llama-model.cpp)

GEMMA_EMBD = 48        # the target's width
GEMMA_HEAD = 32        # the assistant's width = the columns of the target's output layer it reads
GEMMA_HEADS = 2
GEMMA_HEADS_KV = 1
GEMMA_HEAD_DIM_SWA = 16
GEMMA_HEAD_DIM_FULL = 32
GEMMA_SWA_PATTERN = [True, False]   # layer 0 sliding-window, layer 1 full attention
GEMMA_WINDOW = 128
# The target's sub-blocks each add a post-normed output of this RMS to an embedding of RMS
# sqrt(48) ~ 6.9: the current token mostly decides the next, the context sometimes.
GEMMA_POST_NORM = 0.35
# The assistant's sub-blocks add DRAFT_SCALE of its input's RMS (sqrt(48) again).
GEMMA_ASSISTANT_POST_NORM = DRAFT_SCALE * np.sqrt(GEMMA_EMBD)


def gemma_common_keys(writer, arch, n_embd, n_ff):
    writer.add_uint32(f"{arch}.context_length", 4096)
    writer.add_uint32(f"{arch}.embedding_length", n_embd)
    writer.add_uint32(f"{arch}.block_count", len(GEMMA_SWA_PATTERN))
    writer.add_uint32(f"{arch}.feed_forward_length", n_ff)
    writer.add_uint32(f"{arch}.attention.head_count", GEMMA_HEADS)
    writer.add_uint32(f"{arch}.attention.head_count_kv", GEMMA_HEADS_KV)
    writer.add_uint32(f"{arch}.attention.key_length", GEMMA_HEAD_DIM_FULL)
    writer.add_uint32(f"{arch}.attention.value_length", GEMMA_HEAD_DIM_FULL)
    writer.add_uint32(f"{arch}.attention.key_length_swa", GEMMA_HEAD_DIM_SWA)
    writer.add_uint32(f"{arch}.attention.value_length_swa", GEMMA_HEAD_DIM_SWA)
    writer.add_uint32(f"{arch}.attention.sliding_window", GEMMA_WINDOW)
    writer.add_array(f"{arch}.attention.sliding_window_pattern", GEMMA_SWA_PATTERN)
    writer.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32(f"{arch}.rope.freq_base", 1000000.0)
    writer.add_float32(f"{arch}.rope.freq_base_swa", 10000.0)
    writer.add_uint32(f"{arch}.rope.dimension_count", GEMMA_HEAD_DIM_FULL)
    writer.add_uint32(f"{arch}.rope.dimension_count_swa", GEMMA_HEAD_DIM_SWA)


def write_gemma4(src, out):
    w = Weights(20261204)
    reader = gguf.GGUFReader(src)
    arch = "gemma4"
    n_embd, n_ff = GEMMA_EMBD, 2 * GEMMA_EMBD
    writer = gguf.GGUFWriter(out, arch)
    writer.add_name("Draftlab synthetic Gemma 4 (random weights)")
    gemma_common_keys(writer, arch, n_embd, n_ff)
    writer.add_uint32(f"{arch}.embedding_length_per_layer_input", 0)  # no per-layer embeddings
    writer.add_float32(f"{arch}.final_logit_softcapping", 30.0)
    n_vocab = copy_tokenizer(reader, writer)

    writer.add_tensor("token_embd.weight", w.normal(n_vocab, n_embd).astype(np.float16))
    # Untied output layer reading the first GEMMA_HEAD hidden dimensions only: [A | 0].
    a = w.normal(n_vocab, GEMMA_HEAD).astype(np.float16)
    writer.add_tensor("output.weight", np.concatenate([a, np.zeros((n_vocab, n_embd - GEMMA_HEAD), np.float16)], axis=1))
    writer.add_tensor("output_norm.weight", ones(n_embd))
    writer.add_tensor("rope_freqs.weight", ones(GEMMA_HEAD_DIM_FULL // 2))  # plain rope on full layers
    for il, swa in enumerate(GEMMA_SWA_PATTERN):
        hd = GEMMA_HEAD_DIM_SWA if swa else GEMMA_HEAD_DIM_FULL
        writer.add_tensor(f"blk.{il}.attn_norm.weight", ones(n_embd))
        writer.add_tensor(f"blk.{il}.attn_q.weight", w.dense(GEMMA_HEADS * hd, n_embd))
        writer.add_tensor(f"blk.{il}.attn_k.weight", w.dense(GEMMA_HEADS_KV * hd, n_embd))
        writer.add_tensor(f"blk.{il}.attn_v.weight", w.dense(GEMMA_HEADS_KV * hd, n_embd))
        writer.add_tensor(f"blk.{il}.attn_output.weight", w.dense(n_embd, GEMMA_HEADS * hd))
        # Gemma 4 does not scale scores: small query/key norms keep the attention soft.
        writer.add_tensor(f"blk.{il}.attn_q_norm.weight", ones(hd, 0.5))
        writer.add_tensor(f"blk.{il}.attn_k_norm.weight", ones(hd, 0.5))
        writer.add_tensor(f"blk.{il}.post_attention_norm.weight", ones(n_embd, GEMMA_POST_NORM))
        writer.add_tensor(f"blk.{il}.layer_output_scale.weight", ones(1))
        writer.add_tensor(f"blk.{il}.ffn_norm.weight", ones(n_embd))
        writer.add_tensor(f"blk.{il}.ffn_gate.weight", w.dense(n_ff, n_embd))
        writer.add_tensor(f"blk.{il}.ffn_up.weight", w.dense(n_ff, n_embd))
        writer.add_tensor(f"blk.{il}.ffn_down.weight", w.dense(n_embd, n_ff))
        writer.add_tensor(f"blk.{il}.post_ffw_norm.weight", ones(n_embd, GEMMA_POST_NORM))
    finish(writer)


def write_gemma4_assistant(src, out):
    w = Weights(20261205)
    reader = gguf.GGUFReader(src)
    if field(reader, "general.architecture") != "gemma4" or field(reader, "gemma4.embedding_length") != GEMMA_EMBD:
        sys.exit("the source must be the Gemma 4 target written by this script's KIND gemma4")
    out_w = tensor(reader, "output.weight")
    n_backbone = GEMMA_EMBD
    n_embd, n_ff = GEMMA_HEAD, 2 * GEMMA_HEAD
    arch = "gemma4-assistant"
    writer = gguf.GGUFWriter(out, arch)
    writer.add_name("Draftlab synthetic Gemma 4 assistant for the synthetic Gemma 4 (random weights)")
    gemma_common_keys(writer, arch, n_embd, n_ff)
    writer.add_uint32(f"{arch}.embedding_length_out", n_backbone)  # the target's width
    writer.add_uint32(f"{arch}.nextn_predict_layers", len(GEMMA_SWA_PATTERN))  # all layers are heads
    n_vocab = copy_tokenizer(reader, writer)
    assert out_w.shape == (n_vocab, n_backbone)

    # The LM head (token_embd, duplicated as output): the target's A, bit for bit.
    writer.add_tensor("token_embd.weight", np.ascontiguousarray(out_w[:, :n_embd], dtype=np.float16))
    writer.add_tensor("output_norm.weight", ones(n_embd))
    # Input [target embedding of the token x sqrt(48) | target hidden state] -> the first 32
    # embedding dimensions through, a little of the hidden state.
    pre = np.concatenate([eye(n_embd), np.zeros((n_embd, n_backbone - n_embd), np.float32),
                          w.small(n_embd, n_backbone)], axis=1)
    writer.add_tensor("nextn.pre_projection.weight", pre)
    # Back into the target's hidden space (the next draft step's hidden-state input).
    writer.add_tensor("nextn.post_projection.weight",
                      np.concatenate([eye(n_embd), np.zeros((n_backbone - n_embd, n_embd), np.float32)], axis=0))
    writer.add_tensor("rope_freqs.weight", ones(GEMMA_HEAD_DIM_FULL // 2))
    for il, swa in enumerate(GEMMA_SWA_PATTERN):
        hd = GEMMA_HEAD_DIM_SWA if swa else GEMMA_HEAD_DIM_FULL
        writer.add_tensor(f"blk.{il}.attn_norm.weight", ones(n_embd))
        writer.add_tensor(f"blk.{il}.attn_q.weight", w.dense(GEMMA_HEADS * hd, n_embd))
        writer.add_tensor(f"blk.{il}.attn_output.weight", w.dense(n_embd, GEMMA_HEADS * hd))
        writer.add_tensor(f"blk.{il}.attn_q_norm.weight", ones(hd, 0.5))
        writer.add_tensor(f"blk.{il}.post_attention_norm.weight", ones(n_embd, GEMMA_ASSISTANT_POST_NORM))
        writer.add_tensor(f"blk.{il}.layer_output_scale.weight", ones(1))
        writer.add_tensor(f"blk.{il}.ffn_norm.weight", ones(n_embd))
        writer.add_tensor(f"blk.{il}.ffn_gate.weight", w.dense(n_ff, n_embd))
        writer.add_tensor(f"blk.{il}.ffn_up.weight", w.dense(n_ff, n_embd))
        writer.add_tensor(f"blk.{il}.ffn_down.weight", w.dense(n_embd, n_ff))
        writer.add_tensor(f"blk.{il}.post_ffw_norm.weight", ones(n_embd, GEMMA_ASSISTANT_POST_NORM))
    finish(writer)


KINDS = {
    "eagle3": write_eagle3,
    "dflash": lambda src, out: write_dflash(src, out, dspark=False),
    "dspark": lambda src, out: write_dflash(src, out, dspark=True),
    "gemma4": write_gemma4,
    "gemma4-assistant": write_gemma4_assistant,
}


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in KINDS:
        sys.exit(__doc__)
    KINDS[sys.argv[1]](sys.argv[2], sys.argv[3])
