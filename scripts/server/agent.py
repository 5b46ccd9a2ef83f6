"""An agent framework from the registries (pydantic-ai, over the OpenAI chat API) driving a
two-step tool task on `draftlab serve` with the Qwen pair: the model looks up an order, then the
shipping status of the tracking number the first tool returned, then gives its answer as a typed
result (pydantic-ai's `final_result` tool: every turn must call a tool, which the server makes
certain with a grammar). Checked: the tools ran in that order, the first result's value passed
on, and the typed answer holds what the tools said.

Usage: agent.py BASE_URL MODEL API_KEY
"""
import sys

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

base, model_name, key = sys.argv[1], sys.argv[2], sys.argv[3]
model = OpenAIChatModel(model_name, provider=OpenAIProvider(base_url=base, api_key=key))


class Where(BaseModel):
    """Where the customer's parcel is."""
    item: str
    city: str
    status: str


agent = Agent(
    model,
    system_prompt="You help customers with their orders. Use the tools to find facts; never guess them.",
    output_type=Where,
    model_settings={"temperature": 0, "max_tokens": 200, "parallel_tool_calls": False},
)
ran = []


@agent.tool_plain
def get_order(order_id: str) -> dict:
    """Looks up an order by its id: what was ordered and its tracking number."""
    ran.append(("get_order", order_id))
    return {"order_id": order_id, "item": "blue kettle", "tracking_number": "TRK-90210"}


@agent.tool_plain
def get_shipping_status(tracking_number: str) -> str:
    """The shipping status of a parcel, by its tracking number."""
    ran.append(("get_shipping_status", tracking_number))
    if tracking_number != "TRK-90210":
        return f"No parcel has the tracking number {tracking_number}."
    return "Out for delivery in Lyon, arriving today before 6 pm."


result = agent.run_sync("Where is my order A-17 right now? First look up the order, then its shipping status.")
usage = result.usage
print(f"agent: tools ran {ran}; answer {result.output!r}; {usage.requests} requests, {usage.output_tokens} output tokens")
assert ran == [("get_order", "A-17"), ("get_shipping_status", "TRK-90210")], ran
assert result.output.city == "Lyon" and "kettle" in result.output.item, result.output
assert usage.requests == 3, usage
