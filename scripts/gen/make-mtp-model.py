#!/usr/bin/env python3
"""Writes a small synthetic Qwen3.5-architecture GGUF with a multi-token-prediction (MTP) block.

No model with MTP layers can be had from the package registries here, so the tests of the `mtp`
strategy run on this one: random weights (seeded, so the file is the same on every machine),
Qwen2.5's tokenizer (copied from the Qwen 0.5B test model), two trunk layers (a gated-delta-net
layer and a full-attention layer, the way Qwen3.5 mixes them: a hybrid target whose recurrent
state must be rolled back after a rejected draft) and one NextN block (`qwen35.nextn_predict_layers
= 1`).

The weights are not trained, but they are not noise either: the trunk's layers are small next to
the token embeddings, so the target mostly predicts a fixed successor of the current token (plus a
little context), and the MTP block's input projection passes the next token's embedding through,
so the MTP head predicts the successor of the token after — what the target will say, most of the
time. The MTP drafts are then often, not always, accepted: both verify paths get exercised.

Usage: make-mtp-model.py SOURCE_QWEN_GGUF OUT_GGUF
"""
import sys

import gguf
import numpy as np

N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = 16
N_FF = 128
N_TRUNK = 2
N_LAYER_ALL = N_TRUNK + 1
# Gated delta net (the recurrent layer): key heads (groups), value heads, head size, conv kernel.
SSM_GROUPS = 2
SSM_V_HEADS = 4
SSM_STATE = 16
SSM_CONV = 4
# How much the layers add to the token embedding: small enough that the current token mostly decides
# the next one, large enough that the context does sometimes.
LAYER_SCALE = 0.08
# The output layer's scale (the hidden state reaching it is normalised): the top logits about a
# unit or two apart, so the target is sure of its next token sometimes and unsure often.
OUTPUT_SCALE = 1.0


def main(src, out):
    rng = np.random.default_rng(20261125)
    reader = gguf.GGUFReader(src)
    writer = gguf.GGUFWriter(out, "qwen35")
    arch = "qwen35"

    writer.add_name("Draftlab synthetic Qwen3.5 with MTP (random weights)")
    writer.add_uint32(f"{arch}.context_length", 4096)
    writer.add_uint32(f"{arch}.embedding_length", N_EMBD)
    writer.add_uint32(f"{arch}.block_count", N_LAYER_ALL)
    writer.add_uint32(f"{arch}.nextn_predict_layers", 1)
    writer.add_uint32(f"{arch}.feed_forward_length", N_FF)
    writer.add_uint32(f"{arch}.attention.head_count", N_HEAD)
    writer.add_uint32(f"{arch}.attention.head_count_kv", N_HEAD_KV)
    writer.add_uint32(f"{arch}.attention.key_length", HEAD_DIM)
    writer.add_uint32(f"{arch}.attention.value_length", HEAD_DIM)
    writer.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32(f"{arch}.rope.freq_base", 10000000.0)
    writer.add_uint32(f"{arch}.rope.dimension_count", HEAD_DIM)
    writer.add_array(f"{arch}.rope.dimension_sections", [3, 3, 2, 0])
    # Layer 0 is a gated-delta-net layer, layer 1 full attention (every 2nd), the MTP block attention.
    writer.add_uint32(f"{arch}.full_attention_interval", 2)
    writer.add_uint32(f"{arch}.ssm.conv_kernel", SSM_CONV)
    writer.add_uint32(f"{arch}.ssm.state_size", SSM_STATE)
    writer.add_uint32(f"{arch}.ssm.group_count", SSM_GROUPS)
    writer.add_uint32(f"{arch}.ssm.time_step_rank", SSM_V_HEADS)
    writer.add_uint32(f"{arch}.ssm.inner_size", SSM_STATE * SSM_V_HEADS)

    n_vocab = 0
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        if key == "tokenizer.ggml.tokens":
            n_vocab = len(field.data)
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = field.types[1]
            if sub == gguf.GGUFValueType.STRING:
                values = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
            else:
                values = [field.parts[i].tolist()[0] for i in field.data]
            writer.add_key_value(key, values, vtype, sub_type=sub)
        elif vtype == gguf.GGUFValueType.STRING:
            writer.add_key_value(key, bytes(field.parts[field.data[0]]).decode("utf-8"), vtype)
        else:
            writer.add_key_value(key, field.parts[field.data[0]].tolist()[0], vtype)
    assert n_vocab > 0, "the source model has no token list"

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    def small(rows, cols):
        # A matrix whose output is LAYER_SCALE of its (normalised) input's size.
        return normal(rows, cols, scale=LAYER_SCALE / np.sqrt(cols))

    # numpy shapes are (rows, cols) = GGUF's (ne1, ne0): a matrix {n_in, n_out} is (n_out, n_in).
    writer.add_tensor("token_embd.weight", normal(n_vocab, N_EMBD).astype(np.float16))
    writer.add_tensor("output_norm.weight", ones(N_EMBD))
    # Unsure enough for sampling tests to mean something, sure enough for few samples to tell.
    writer.add_tensor("output.weight", normal(n_vocab, N_EMBD, scale=OUTPUT_SCALE).astype(np.float16))

    def attention_block(il):
        writer.add_tensor(f"blk.{il}.attn_q.weight", small(HEAD_DIM * N_HEAD * 2, N_EMBD))
        writer.add_tensor(f"blk.{il}.attn_k.weight", small(HEAD_DIM * N_HEAD_KV, N_EMBD))
        writer.add_tensor(f"blk.{il}.attn_v.weight", small(HEAD_DIM * N_HEAD_KV, N_EMBD))
        writer.add_tensor(f"blk.{il}.attn_output.weight", normal(N_EMBD, HEAD_DIM * N_HEAD, scale=1 / np.sqrt(HEAD_DIM * N_HEAD)))
        writer.add_tensor(f"blk.{il}.attn_q_norm.weight", ones(HEAD_DIM))
        writer.add_tensor(f"blk.{il}.attn_k_norm.weight", ones(HEAD_DIM))

    def common(il):
        writer.add_tensor(f"blk.{il}.attn_norm.weight", ones(N_EMBD))
        writer.add_tensor(f"blk.{il}.post_attention_norm.weight", ones(N_EMBD))
        writer.add_tensor(f"blk.{il}.ffn_gate.weight", normal(N_FF, N_EMBD, scale=1 / np.sqrt(N_EMBD)))
        writer.add_tensor(f"blk.{il}.ffn_up.weight", normal(N_FF, N_EMBD, scale=1 / np.sqrt(N_EMBD)))
        writer.add_tensor(f"blk.{il}.ffn_down.weight", small(N_EMBD, N_FF))

    # Layer 0: gated delta net.
    key_dim = SSM_STATE * SSM_GROUPS
    value_dim = SSM_STATE * SSM_V_HEADS
    conv_dim = key_dim * 2 + value_dim
    common(0)
    writer.add_tensor("blk.0.attn_qkv.weight", normal(conv_dim, N_EMBD, scale=1 / np.sqrt(N_EMBD)))
    writer.add_tensor("blk.0.attn_gate.weight", normal(value_dim, N_EMBD, scale=1 / np.sqrt(N_EMBD)))
    writer.add_tensor("blk.0.ssm_conv1d.weight", normal(conv_dim, SSM_CONV, scale=0.5))
    writer.add_tensor("blk.0.ssm_dt.bias", normal(SSM_V_HEADS, scale=0.5))
    writer.add_tensor("blk.0.ssm_a", -np.exp(normal(SSM_V_HEADS, scale=0.5)))
    writer.add_tensor("blk.0.ssm_beta.weight", normal(SSM_V_HEADS, N_EMBD, scale=1 / np.sqrt(N_EMBD)))
    writer.add_tensor("blk.0.ssm_alpha.weight", normal(SSM_V_HEADS, N_EMBD, scale=1 / np.sqrt(N_EMBD)))
    writer.add_tensor("blk.0.ssm_norm.weight", ones(SSM_STATE))
    writer.add_tensor("blk.0.ssm_out.weight", small(N_EMBD, value_dim))

    # Layer 1: full attention.
    common(1)
    attention_block(1)

    # Layer 2: the MTP (NextN) block. Its input projection passes the next token's embedding
    # through (and a little of the target's hidden state).
    mtp = N_TRUNK
    common(mtp)
    attention_block(mtp)
    eh = np.concatenate([np.eye(N_EMBD, dtype=np.float32), small(N_EMBD, N_EMBD)], axis=1)
    writer.add_tensor(f"blk.{mtp}.nextn.eh_proj.weight", eh)
    writer.add_tensor(f"blk.{mtp}.nextn.enorm.weight", ones(N_EMBD))
    writer.add_tensor(f"blk.{mtp}.nextn.hnorm.weight", ones(N_EMBD))
    writer.add_tensor(f"blk.{mtp}.nextn.shared_head_norm.weight", ones(N_EMBD))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
