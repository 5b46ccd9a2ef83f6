"""Anthropic's Messages API on `draftlab serve`, with the anthropic Python package: a message,
streamed and not (the same text: the server's default is greedy, and this client no longer sends a
temperature), a tool round trip (tool_use → tool_result →
answer), the `draftlab` extension, any model name, `count_tokens`, the models list, errors as the
client's exceptions.

Usage: messages.py BASE_URL MODEL API_KEY
"""
import json
import sys

import anthropic

base, model, key = sys.argv[1], sys.argv[2], sys.argv[3]
client = anthropic.Anthropic(base_url=base.removesuffix("/v1"), api_key=key, max_retries=0, timeout=600)
ask = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]

m = client.messages.create(model=model, max_tokens=48, system="You are terse.", messages=ask)
assert m.type == "message" and m.role == "assistant" and m.stop_reason in ("end_turn", "max_tokens"), m
text = m.content[0].text
assert text and m.usage.output_tokens > 0 and m.usage.input_tokens > 0, m
print(f"anthropic: message {text!r} ({m.stop_reason}, {m.usage.output_tokens} tokens)")

# Streamed: the same text, through the client's event parser.
with client.messages.stream(model=model, max_tokens=48, system="You are terse.", messages=ask,
                            extra_body={"draftlab": {"strategy": "lookup"}}) as stream:
    streamed = "".join(stream.text_stream)
    final = stream.get_final_message()
assert streamed.rstrip() == text, (streamed, text)
assert final.stop_reason == m.stop_reason, final
print(f"anthropic: streamed the same text; stop_reason {final.stop_reason}")

# A stop sequence.
s = client.messages.create(model=model, max_tokens=48, messages=ask, stop_sequences=["Paris"])
assert s.stop_reason == "stop_sequence" and s.stop_sequence == "Paris" and "Paris" not in s.content[0].text, s

# Tools: a required call (tool_choice any), its result, the answer.
weather = {"name": "get_weather", "description": "The current weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40}},
                            "required": ["city"]}}
q = [{"role": "user", "content": "What is the weather like in Paris right now?"}]
m = client.messages.create(model=model, max_tokens=96, tools=[weather], tool_choice={"type": "any"},
                           messages=q)
assert m.stop_reason == "tool_use", m
use = next(b for b in m.content if b.type == "tool_use")
assert use.name == "get_weather" and isinstance(use.input["city"], str), use
print(f"anthropic: tool_use {use.name}({json.dumps(use.input)})")
# Streamed: the tool_use block opens with its name, and its input arrives in input_json_delta
# pieces as the model writes it (not as one piece at the end).
pieces = 0
with client.messages.stream(model=model, max_tokens=96, tools=[weather],
                            tool_choice={"type": "tool", "name": "get_weather"}, messages=q) as stream:
    for event in stream:
        if event.type == "content_block_start" and event.content_block.type == "tool_use":
            assert event.content_block.name == "get_weather" and pieces == 0, event
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            pieces += 1
    final = stream.get_final_message()
streamed_use = next(b for b in final.content if b.type == "tool_use")
assert final.stop_reason == "tool_use" and streamed_use.input == use.input, final
assert pieces >= 3, f"the input came in {pieces} input_json_delta pieces"
print(f"anthropic: streamed tool_use, its input in {pieces} pieces")
follow = q + [
    {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                  "content": json.dumps({"temperature_c": 18, "sky": "sunny"})}]},
]
m = client.messages.create(model=model, max_tokens=96, tools=[weather], tool_choice={"type": "none"},
                           messages=follow)
answer = m.content[0].text
assert m.stop_reason == "end_turn" and "18" in answer, m
print(f"anthropic: answer from the tool's result: {answer!r}")

# Any model name is served by the target, as Claude Code's default names are; tokens are counted
# as the template renders them; models are listed in Anthropic's shape.
m = client.messages.create(model="claude-opus-5-5", max_tokens=48, system="You are terse.", messages=ask)
assert m.model == model and m.content[0].text == text, m
counted = client.messages.count_tokens(model="claude-opus-5-5", system="You are terse.", messages=ask)
assert counted.input_tokens == m.usage.input_tokens, (counted, m.usage)
listed = client.models.list()
assert [x.id for x in listed.data] == [model] and listed.data[0].type == "model", listed
assert client.models.retrieve("claude-haiku-5").id == "claude-haiku-5"
print(f"anthropic: claude-opus-5-5 answered by {m.model}; {counted.input_tokens} input tokens counted")

# Errors are the client's own exceptions.
image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
for call, exc in [
    (lambda: client.messages.create(model=model, max_tokens=8, messages=[{"role": "user", "content": [image]}]),
     anthropic.BadRequestError),
    (lambda: client.messages.create(model=model, max_tokens=8, messages=[{"role": "system", "content": "x"}]),
     anthropic.BadRequestError),
    (lambda: anthropic.Anthropic(base_url=base.removesuffix("/v1"), api_key="wrong", max_retries=0)
     .messages.create(model=model, max_tokens=8, messages=ask), anthropic.AuthenticationError),
]:
    try:
        call()
        raise AssertionError(f"no {exc.__name__}")
    except exc as e:
        assert e.body["type"] == "error" and e.body["error"]["message"], e.body
print("anthropic: passed")
