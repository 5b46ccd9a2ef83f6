"""Tool calls through `draftlab serve` with the openai Python client: a call required and made,
its result fed back, the answer written (a full call → result → answer loop), streamed and not,
the same call with and without speculation.

Usage: tools.py BASE_URL MODEL API_KEY
"""
import json
import sys

import openai

base, model, key = sys.argv[1], sys.argv[2], sys.argv[3]
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=600)
weather = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40}},
                   "required": ["city"], "additionalProperties": False}}}
clock = {"type": "function", "function": {
    "name": "get_time", "description": "The local time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40}}, "required": ["city"]}}}
ask = [{"role": "user", "content": "What is the weather like in Paris right now?"}]

# The call, required: made certain by the grammar, in the family's format.
calls = {}
for spec in ({}, {"strategy": "none"}):
    r = client.chat.completions.create(model=model, messages=ask, tools=[weather, clock], tool_choice="required",
                                       max_tokens=96, temperature=0, extra_body={"draftlab": spec} if spec else None)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name in ("get_weather", "get_time"), call
    assert isinstance(json.loads(call.function.arguments)["city"], str), call
    calls[json.dumps(spec)] = (call.function.name, call.function.arguments)
    print(f"tools: required ({spec or 'defaults'}): {call.function.name}({call.function.arguments}), "
          f"forced tokens {r.usage.model_extra['draftlab']['forced_accepted']}")
assert len(set(calls.values())) == 1, calls

# A named function, streamed: the call arrives as tool_calls deltas.
stream = client.chat.completions.create(model=model, messages=ask, tools=[weather, clock],
                                        tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                        max_tokens=96, temperature=0, stream=True)
# The name comes first, with the call's id, then the arguments in pieces as the model writes them.
name, args, finish, pieces, ids = None, "", None, 0, set()
for chunk in stream:
    if not chunk.choices:
        continue
    for d in chunk.choices[0].delta.tool_calls or []:
        assert d.index == 0, d
        if d.id:
            ids.add(d.id)
        if d.function.name:
            assert name is None and pieces == 0, ("the name comes once, first", d)
            name = d.function.name
        if d.function.arguments:
            assert name, ("arguments before the name", d)
            pieces += 1
            args += d.function.arguments
    finish = chunk.choices[0].finish_reason or finish
assert name == "get_weather" and finish == "tool_calls" and len(ids) == 1, (name, finish, ids)
assert json.loads(args)["city"], args
assert pieces >= 3, f"the arguments came in {pieces} pieces"
print(f"tools: named and streamed: {name}({args}) in {pieces} pieces")

# The Responses API, streamed: a function_call item, its arguments in
# function_call_arguments.delta events, then .done with all of them.
kinds, deltas = [], ""
with client.responses.stream(model=model, input=ask[0]["content"], max_output_tokens=96, temperature=0,
                             tools=[{"type": "function", **weather["function"]}],
                             tool_choice={"type": "function", "name": "get_weather"}) as rs:
    for event in rs:
        kinds.append(event.type)
        if event.type == "response.function_call_arguments.delta":
            deltas += event.delta
    final = rs.get_final_response()
call = next(o for o in final.output if o.type == "function_call")
assert call.name == "get_weather" and json.loads(call.arguments) == json.loads(deltas), (call, deltas)
assert kinds.count("response.function_call_arguments.delta") >= 3, kinds
assert kinds.index("response.output_item.added") < kinds.index("response.function_call_arguments.delta"), kinds
print(f"tools: responses streamed: {call.name}({call.arguments}) in "
      f"{kinds.count('response.function_call_arguments.delta')} pieces")

# Left to the model (auto): the call is read from what it writes (this model writes it in a json
# fence rather than <tool_call>, as many small models do).
r = client.chat.completions.create(model=model, messages=ask, tools=[weather, clock], max_tokens=96, temperature=0)
m = r.choices[0].message
assert r.choices[0].finish_reason == "tool_calls" and m.tool_calls[0].function.name == "get_weather", r
print(f"tools: auto: {m.tool_calls[0].function.name}({m.tool_calls[0].function.arguments}), content {m.content!r}")

# The result fed back; the model answers from it (tool_choice none: an answer, not another call).
call_id = m.tool_calls[0].id
followup = ask + [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": args}}]},
    {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"temperature_c": 18, "sky": "sunny"})},
]
r = client.chat.completions.create(model=model, messages=followup, tools=[weather, clock], tool_choice="none",
                                   max_tokens=96, temperature=0)
m = r.choices[0].message
assert not m.tool_calls and m.content and "18" in m.content and r.choices[0].finish_reason == "stop", r
print(f"tools: answer from the result: {m.content!r}")

# Errors in the API's shape: a call cut off by max_tokens, a tool_choice naming no tool, a tool
# message without its call's id.
for kwargs, code in [
    ({"tools": [weather], "tool_choice": "required", "max_tokens": 4}, "tool_call_cut_off"),
    ({"tools": [weather], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, None),
    ({"messages": ask + [{"role": "tool", "content": "x"}]}, None),
]:
    try:
        client.chat.completions.create(**{"model": model, "messages": ask, "temperature": 0, **kwargs})
        raise AssertionError(f"no error for {kwargs}")
    except openai.BadRequestError as e:
        assert code is None or e.code == code, (e.code, code)
print("tools: passed")
