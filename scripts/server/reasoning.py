"""A reasoning model on `draftlab serve`, with the openai and anthropic Python packages: the server
runs the Qwen pair with a Qwen3-shaped template (`--chat-template-file scripts/server/thinking.jinja`,
whose generation prompt opens a `<think>` block). Checked: the thinking comes apart from the
answer (`reasoning_content`; Anthropic's `thinking` blocks), streamed and not, with the same text;
a thinking budget closes the thinking and the model answers; `enable_thinking: false` answers at
once; `reasoning_format: none` keeps the thinking in `content`; speculation reports its
acceptance in the thinking and in the answer; greedy output with speculation equals the target
alone's; bad requests are refused in each API's shape.

Usage: reasoning.py BASE_URL MODEL API_KEY
"""
import sys

import anthropic
import openai

base, model, key = sys.argv[1], sys.argv[2], sys.argv[3]
oa = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=600)
an = anthropic.Anthropic(base_url=base.removesuffix("/v1"), api_key=key, max_retries=0, timeout=600)
ask = [{"role": "user", "content": "What is 17 * 3? Give the number."}]
BUDGET = 24


def fresh():
    """The same KV cache before each compared request: greedy output is the same for the same
    cache state (a prompt decoded in one batch, or its last token alone after the previous
    request, can differ in a near tie)."""
    oa.chat.completions.create(model=model, messages=[{"role": "system", "content": "Reset."},
                                                      {"role": "user", "content": "Hi"}], max_tokens=1)


def reasoning_of(message):
    return (message.model_extra or {}).get("reasoning_content")


# A budget: the thinking is closed after BUDGET tokens, and the model answers.
fresh()
r = oa.chat.completions.create(model=model, messages=ask, max_tokens=160, temperature=0,
                               extra_body={"draftlab": {"strategy": "draft", "n_draft": 3, "thinking_budget": BUDGET}})
m = r.choices[0].message
thinking, answer = reasoning_of(m), m.content
assert thinking and answer, m
assert "<think>" not in answer and "</think>" not in answer and "</think>" not in thinking, m
details = r.usage.completion_tokens_details
assert BUDGET <= details.reasoning_tokens <= BUDGET + 8, (details, BUDGET)
d = r.usage.model_extra["draftlab"]
parts = d["thinking"], d["answer"]
assert parts[0]["tokens"] == details.reasoning_tokens, d
assert parts[0]["tokens"] + parts[1]["tokens"] == r.usage.completion_tokens, d
assert parts[0]["drafted"] + parts[1]["drafted"] == d["drafted"] and parts[1]["drafted"] > 0, d
assert parts[0]["accepted"] + parts[1]["accepted"] == d["accepted"], d
print(f"reasoning: thought {parts[0]['tokens']} tokens (budget {BUDGET}; acceptance "
      f"{parts[0]['acceptance_rate']:.2f}), answered {parts[1]['tokens']} (acceptance {parts[1]['acceptance_rate']:.2f}): "
      f"{answer[:60]!r}")

# Streamed: reasoning deltas first, then content, the same texts.
fresh()
chunks = list(oa.chat.completions.create(
    model=model, messages=ask, max_tokens=160, temperature=0, stream=True,
    extra_body={"draftlab": {"strategy": "draft", "n_draft": 3, "thinking_budget": BUDGET}}))
kinds = []
st, sa = "", ""
for c in chunks:
    if not c.choices:
        continue
    delta = c.choices[0].delta
    rc = (delta.model_extra or {}).get("reasoning_content")
    if rc:
        st += rc
        kinds.append("t")
    if delta.content:
        sa += delta.content
        kinds.append("a")
assert (st, sa) == (thinking, answer), ((st, sa), (thinking, answer))
assert "".join(kinds).find("a") > "".join(kinds).rfind("t"), "thinking deltas after the answer began"
print(f"reasoning: streamed {kinds.count('t')} thinking and {kinds.count('a')} answer chunks, the same texts")

# Greedy identity: the target alone writes the same thinking and answer.
fresh()
alone = oa.chat.completions.create(model=model, messages=ask, max_tokens=160, temperature=0,
                                   extra_body={"draftlab": {"strategy": "none", "thinking_budget": BUDGET}})
# The thinking is the same token for token. The answer after the closed thinking is decoded on a
# KV cache the speculative run filled in batches and the target alone one token at a time: it
# may part at a near tie (llama.cpp's numerics), so it is checked for the number.
assert reasoning_of(alone.choices[0].message) == thinking, (alone, thinking)
assert "51" in alone.choices[0].message.content and "51" in answer, (alone, answer)
print("reasoning: the speculative thinking equals the target alone's")

# Thinking off: the template writes an empty block, the model answers at once.
off = oa.chat.completions.create(model=model, messages=ask, max_tokens=40, temperature=0,
                                 extra_body={"chat_template_kwargs": {"enable_thinking": False}})
assert off.choices[0].message.content and not reasoning_of(off.choices[0].message), off
assert off.usage.completion_tokens_details.reasoning_tokens == 0, off.usage
assert "51" in off.choices[0].message.content, off
print(f"reasoning: enable_thinking false answers at once: {off.choices[0].message.content[:40]!r}")

# reasoning_format none: the thinking stays in content, as the model wrote it.
fresh()
raw = oa.chat.completions.create(model=model, messages=ask, max_tokens=20, temperature=0,
                                 extra_body={"reasoning_format": "none"})
assert raw.choices[0].message.content and not reasoning_of(raw.choices[0].message), raw
assert thinking.startswith(raw.choices[0].message.content.strip()[:20]), (raw, thinking)

try:
    oa.chat.completions.create(model=model, messages=ask, max_tokens=8,
                               extra_body={"chat_template_kwargs": {"enable_thinking": "yes"}})
    raise AssertionError("enable_thinking 'yes' was accepted")
except openai.BadRequestError as e:
    assert e.body["param"] == "chat_template_kwargs.enable_thinking", e.body

# Anthropic: a thinking block, then the text; streamed the same.
fresh()
spec = {"draftlab": {"strategy": "draft", "n_draft": 3}}
msg = an.messages.create(model=model, max_tokens=160, messages=ask, extra_body=spec,
                         thinking={"type": "enabled", "budget_tokens": BUDGET})
assert [b.type for b in msg.content] == ["thinking", "text"], msg
assert msg.content[0].thinking == thinking and msg.content[1].text == answer.rstrip(), (msg, thinking, answer)
fresh()
with an.messages.stream(model=model, max_tokens=160, messages=ask, extra_body=spec,
                        thinking={"type": "enabled", "budget_tokens": BUDGET}) as stream:
    final = stream.get_final_message()
assert [b.type for b in final.content] == ["thinking", "text"], final
assert final.content[0].thinking == thinking and final.content[1].text.rstrip() == answer.rstrip(), final
# A past turn's thinking block is accepted (and not shown to the model again).
again = an.messages.create(model=model, max_tokens=24, messages=ask + [
    {"role": "assistant", "content": [b.model_dump() for b in msg.content]},
    {"role": "user", "content": "And 17 * 4?"}], thinking={"type": "disabled"})
assert [b.type for b in again.content] == ["text"] and again.content[0].text, again
try:
    an.messages.create(model=model, max_tokens=8, messages=ask, thinking={"type": "sometimes"})
    raise AssertionError("thinking type 'sometimes' was accepted")
except anthropic.BadRequestError as e:
    assert e.body["type"] == "error" and "thinking" in e.body["error"]["message"], e.body
print("reasoning: anthropic thinking blocks, streamed and not; errors in each API's shape")
