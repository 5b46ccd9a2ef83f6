"""The openai Python client against `draftlab serve` running a drafter file (an EAGLE-3 head): the
head drafts when a request asks for its strategy, at a fixed length and adaptive, and the text is
the target alone's at temperature 0.

Usage: head.py BASE_URL MODEL
"""
import sys

import openai

base, model = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key="none", max_retries=0, timeout=300)
prompt = "Write a Python function that returns the n-th Fibonacci number."


def complete(spec):
    c = client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0, extra_body={"draftlab": spec})
    return c.choices[0].text, c.usage.model_extra["draftlab"]


alone, used = complete({"strategy": "none"})
assert used["strategy"] == "none" and used["drafted"] == 0, used
head, used = complete({"strategy": "eagle3", "n_draft": 3, "p_min": 0})
assert used["strategy"] == "eagle3", used
assert used["drafted"] > 0 and used["accepted"] > 0, used
assert head == alone, (head, alone)
print(f"head: eagle3 drafted {used['drafted']}, {used['accepted']} accepted; the target alone's text")
adaptive, used = complete({"strategy": "eagle3", "n_draft": "adaptive"})
assert used["strategy"] == "eagle3" and adaptive == alone, (used, adaptive, alone)
print(f"head: eagle3 adaptive drafted {used['drafted']} (as the schedule judged it pays); the same text")
