"""The openai Python client against `draftlab serve`, and a bounded load test.

Usage: clients.py BASE_URL MODEL API_KEY CLIENTS
"""
import concurrent.futures
import json
import sys
import time
import urllib.request

import openai

base, model, key, clients = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=300)
ask = [{"role": "system", "content": "Answer in one short sentence."}, {"role": "user", "content": "What is the sun?"}]


def health():
    # Its counters come only with the key (without it: liveness).
    asked = urllib.request.Request(base.removesuffix("/v1") + "/health", headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(asked) as r:
        return json.load(r)


# Not streamed: the text, and usage with what speculation did.
r = client.chat.completions.create(model=model, messages=ask, max_tokens=32, temperature=0)
text = r.choices[0].message.content
assert text and r.choices[0].finish_reason in ("stop", "length"), r
assert r.usage.completion_tokens > 0 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
extra = r.usage.model_extra["draftlab"]
details = r.usage.completion_tokens_details
assert details.accepted_prediction_tokens == extra["accepted"], (details, extra)
print(f"openai: chat {text!r} ({extra['strategy']}: {extra['accepted']}/{extra['drafted']} drafted tokens accepted)")

# Streamed: the same text at temperature 0, whatever the speculation.
for spec in ({}, {"strategy": "none"}, {"strategy": "lookup", "n_draft": "adaptive"}, {"strategy": "draft", "n_draft": 4}):
    stream = client.chat.completions.create(
        model=model, messages=ask, max_tokens=32, temperature=0, stream=True,
        stream_options={"include_usage": True}, extra_body={"draftlab": spec} if spec else None,
    )
    parts, usage = [], None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
        if chunk.usage:
            usage = chunk.usage
    streamed = "".join(parts)
    assert streamed == text, (spec, streamed, text)
    assert usage is not None and usage.model_extra["draftlab"]["strategy"] == spec.get("strategy", "auto"), usage
    print(f"openai: streamed with {spec or 'the defaults'}: the same text, {len(parts)} chunks")

# Provenance: each streamed chunk says where its tokens came from; with the target alone, the target.
for spec, allowed in (({"strategy": "none"}, {"target"}), ({"strategy": "draft", "n_draft": 4}, {"target", "draft"})):
    stream = client.chat.completions.create(
        model=model, messages=ask, max_tokens=32, temperature=0, stream=True,
        extra_body={"draftlab": {**spec, "provenance": True}},
    )
    sources = []
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            tokens = chunk.model_extra["draftlab"]["tokens"]
            assert tokens and all(t["source"] in allowed for t in tokens), tokens
            assert all((t["strategy"] == "draft") == (t["source"] == "draft") for t in tokens), tokens
            sources += [t["source"] for t in tokens]
    assert sources, spec
    print(f"openai: provenance with {spec}: {sources.count('draft')} of {len(sources)} tokens drafted")

# Completions.
c = client.completions.create(model=model, prompt="The first three planets are", max_tokens=12, temperature=0)
assert c.choices[0].text, c
print(f"openai: completion {c.choices[0].text!r}")

# Structured output: response_format json_schema (strict), streamed and not, speculation on: the
# answer parses and matches the schema, the same text at temperature 0 with and without drafting.
# (Bounded: the small test model would otherwise write digits until max_tokens.)
city = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
        "country": {"type": "string", "maxLength": 40},
        "continent": {"enum": ["Africa", "Asia", "Europe", "North America", "South America", "Oceania"]},
        "population": {"type": "integer", "minimum": 0, "maximum": 100000000}},
        "required": ["name", "country", "continent", "population"], "additionalProperties": False}
fmt = {"type": "json_schema", "json_schema": {"name": "city", "strict": True, "schema": city}}
where = [{"role": "user", "content": "Give the capital of France as JSON."}]
answers = {}
for spec in ({}, {"strategy": "none"}, {"strategy": "draft", "n_draft": 4}):
    r = client.chat.completions.create(model=model, messages=where, max_tokens=96, temperature=0, response_format=fmt,
                                       extra_body={"draftlab": spec} if spec else None)
    v = json.loads(r.choices[0].message.content)
    assert set(v) == {"name", "country", "continent", "population"} and isinstance(v["population"], int), v
    assert r.choices[0].finish_reason == "stop", r
    answers[json.dumps(spec)] = r.choices[0].message.content
    forced = r.usage.model_extra["draftlab"]["forced_accepted"]
    assert spec.get("strategy") == "none" or forced > 0, (spec, r.usage)
assert len(set(answers.values())) == 1, answers
stream = client.chat.completions.create(model=model, messages=where, max_tokens=96, temperature=0, response_format=fmt, stream=True)
assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == answers["{}"]
r = client.chat.completions.create(model=model, messages=where, max_tokens=96, temperature=0.8, seed=3,
                                   response_format={"type": "json_object", "schema": city})
assert set(json.loads(r.choices[0].message.content)) == set(city["properties"]), r
print(f"openai: response_format json_schema: {answers['{}']!r}, the same with and without drafting; sampled too")

# Errors are the client's own exceptions, with OpenAI's codes.
for call, exc, code in [
    (lambda: client.responses.create(model=model, input="hi", previous_response_id="resp_0"), openai.NotFoundError,
     "previous_response_not_found"),
    (lambda: client.chat.completions.create(model=model, messages=ask, n=9), openai.BadRequestError, None),
    (lambda: client.chat.completions.create(model=model, messages=ask, extra_body={"draftlab": {"strategy": "x"}}), openai.BadRequestError, None),
    (lambda: client.chat.completions.create(model=model, messages=ask, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nonsense"}}}), openai.BadRequestError, None),
    # SmolLM2's template shows no tools.
    (lambda: client.chat.completions.create(model=model, messages=ask, tools=[{"type": "function", "function": {"name": "f"}}]), openai.BadRequestError, None),
    (lambda: client.chat.completions.create(model=model, messages=ask, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nonsense"}}}, stream=True), openai.BadRequestError, None),
    (lambda: openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list(), openai.AuthenticationError, "invalid_api_key"),
]:
    try:
        call()
        raise AssertionError(f"no {exc.__name__}")
    except exc as e:
        assert code is None or e.code == code, (e.code, code)
print("openai: errors raise NotFoundError, BadRequestError and AuthenticationError")
assert [m.id for m in client.models.list()] == [model]
# Any name is served by the target (clients set up with a fixed name work), and answers name it.
assert client.models.retrieve("gpt-9").id == "gpt-9"
r = client.chat.completions.create(model="gpt-9", messages=ask, max_tokens=32, temperature=0)
assert r.model == model and r.choices[0].message.content == text, r

# Log probabilities: each output token's under the target, with the likeliest beside it; the same
# whether the token was drafted and verified or generated alone; streamed chunk by chunk; the
# legacy shape on completions.
lps = {}
for spec in ({}, {"strategy": "none"}):
    r = client.chat.completions.create(model=model, messages=ask, max_tokens=16, temperature=0, logprobs=True,
                                       top_logprobs=2, extra_body={"draftlab": spec} if spec else None)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens, (len(content), r.usage)
    assert "".join(t.token for t in content) == r.choices[0].message.content, r
    for t in content:
        assert t.logprob <= 0 and len(t.top_logprobs) == 2, t
        assert t.top_logprobs[0].logprob >= t.logprob - 1e-4 and bytes(t.bytes).decode(errors="replace") == t.token, t
    lps[json.dumps(spec)] = [(t.token, t.logprob) for t in content]
drafted, alone = lps["{}"], lps['{"strategy": "none"}']
assert [t for t, _ in drafted] == [t for t, _ in alone], (drafted, alone)
assert all(abs(a - b) < 0.05 for (_, a), (_, b) in zip(drafted, alone)), (drafted, alone)
streamed = [t for c in client.chat.completions.create(model=model, messages=ask, max_tokens=16, temperature=0,
                                                       logprobs=True, top_logprobs=2, stream=True)
            if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.content]
assert [t.token for t in streamed] == [t for t, _ in drafted], streamed
r = client.completions.create(model=model, prompt="1, 2, 3,", max_tokens=8, temperature=0, logprobs=2)
legacy = r.choices[0].logprobs
assert "".join(legacy.tokens) == r.choices[0].text and len(legacy.token_logprobs) == len(legacy.tokens), legacy
assert all(len(top) == 2 for top in legacy.top_logprobs) and legacy.text_offset[0] == 0, legacy
print(f"clients: logprobs {drafted[:3]}…, the same drafted or not, streamed, legacy")

# n choices (one run after another, each with its own seed): greedy, the same answer n times;
# sampled, each its own draw (the same draws again for the same seed when the target samples
# alone: with drafting on, how many random numbers a run uses depends on its adaptive schedule).
r = client.chat.completions.create(model=model, messages=ask, max_tokens=12, temperature=0, n=3)
assert [c.index for c in r.choices] == [0, 1, 2], r
assert len({c.message.content for c in r.choices}) == 1 and r.choices[0].message.content, r
alone = {"draftlab": {"strategy": "none"}}
r = client.chat.completions.create(model=model, messages=ask, max_tokens=12, temperature=1.5, n=2, seed=7,
                                   extra_body=alone)
again = client.chat.completions.create(model=model, messages=ask, max_tokens=12, temperature=1.5, n=2, seed=7,
                                       extra_body=alone)
assert [c.message.content for c in r.choices] == [c.message.content for c in again.choices], (r, again)
assert r.choices[0].message.content != r.choices[1].message.content, r
print(f"clients: n=2 sampled: {[c.message.content for c in r.choices]}")
# Streamed: each choice's chunks after the one before, with its index, under one id; the usage
# chunk counts both; the same texts as whole.
chunks = list(client.chat.completions.create(model=model, messages=ask, max_tokens=12, temperature=1.5, n=2, seed=7,
                                             extra_body=alone, stream=True, stream_options={"include_usage": True}))
texts = ["", ""]
for c in chunks:
    for ch in c.choices:
        texts[ch.index] += ch.delta.content or ""
order = [ch.index for c in chunks for ch in c.choices]
assert order == sorted(order) and set(order) == {0, 1} and len({c.id for c in chunks}) == 1, (order, chunks[:2])
assert texts == [c.message.content for c in r.choices], (texts, r)
assert chunks[-1].usage.completion_tokens == r.usage.completion_tokens, (chunks[-1].usage, r.usage)
print(f"clients: n=2 streamed: {texts}")

# The Responses API: the same answer as chat completions for the same conversation, whole and
# streamed through the client's event parser; continued by id.
r = client.responses.create(model=model, instructions=ask[0]["content"], input=ask[1]["content"],
                            max_output_tokens=32, temperature=0)
assert r.output_text == text.rstrip() and r.status in ("completed", "incomplete"), r
assert r.usage.input_tokens > 0 and r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens, r.usage
kinds, streamed = [], ""
with client.responses.stream(model=model, instructions=ask[0]["content"], input=ask[1]["content"],
                             max_output_tokens=32, temperature=0) as stream:
    for event in stream:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            streamed += event.delta
    final = stream.get_final_response()
assert streamed.rstrip() == text.rstrip() and final.output_text == text.rstrip(), (streamed, final)
assert kinds[0] == "response.created" and kinds[-1] in ("response.completed", "response.incomplete"), kinds
again = client.responses.create(model=model, input="Say it again.", previous_response_id=r.id, max_output_tokens=16)
assert again.usage.input_tokens > r.usage.input_tokens, again.usage
print(f"openai: responses {r.output_text!r}, streamed the same ({len(kinds)} events), continued by id")
# Its log probabilities (`include` and `top_logprobs`): the chat answer's tokens, whole and streamed.
lp_ask = dict(model=model, instructions=ask[0]["content"], input=ask[1]["content"], max_output_tokens=16,
              temperature=0, top_logprobs=2, include=["message.output_text.logprobs"])
part = client.responses.create(**lp_ask).output[0].content[0]
assert [t.token for t in part.logprobs] == [t for t, _ in drafted], (part.logprobs, drafted)
assert all(abs(t.logprob - lp) < 0.05 for t, (_, lp) in zip(part.logprobs, drafted)), (part.logprobs, drafted)
assert all(len(t.top_logprobs) == 2 and t.top_logprobs[0].logprob >= t.logprob - 1e-4 for t in part.logprobs), part
deltas, done = [], None
with client.responses.stream(**lp_ask) as stream:
    for event in stream:
        if event.type == "response.output_text.delta":
            deltas += event.logprobs
        elif event.type == "response.output_text.done":
            done = event.logprobs
assert [t.token for t in deltas] == [t.token for t in done] == [t for t, _ in drafted], (deltas, done)
assert client.responses.create(model=model, input="hi", max_output_tokens=4).output[0].content[0].logprobs == []
print(f"openai: responses' logprobs {[t.token for t in part.logprobs][:3]}…, whole and streamed")

# Load: CLIENTS concurrent clients, a few requests each; every answer checked, none lost.
before = health()
per_client = 3
def one(i):
    out = []
    for j in range(per_client):
        r = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": f"Give me the number {i * 10 + j} in words."}],
            max_tokens=16, temperature=0,
        )
        assert r.choices[0].message.content and r.usage.completion_tokens > 0, r
        out.append(r.usage.completion_tokens)
    return out
t0 = time.time()
with concurrent.futures.ThreadPoolExecutor(clients) as pool:
    answers = [n for ns in pool.map(one, range(clients)) for n in ns]
elapsed = time.time() - t0
after = health()
assert len(answers) == clients * per_client
served = after["served"] - before["served"]
assert served == clients * per_client, (before, after)
assert after["refused_busy"] == before["refused_busy"], after
growth = (after["engine_rss_bytes"] - before["engine_rss_bytes"]) / 2**20
print(f"load: {clients} clients x {per_client} requests: all {served} answered in {elapsed:.1f} s, "
      f"engine memory {before['engine_rss_bytes'] / 2**20:.0f} -> {after['engine_rss_bytes'] / 2**20:.0f} MiB ({growth:+.0f} MiB)")
assert abs(growth) < 64, f"the engine's memory grew by {growth:.0f} MiB under load"
