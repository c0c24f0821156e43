"""Resolve/Elicit elicitation: works on both protocol generations (push or multi round-trip)."""

from __future__ import annotations

from typing import Annotated

import anyio
from _record import record
from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel, Field

mcp = MCPServer("elicit-resolve", instructions="Resolve/Elicit test server.")


class Booking(BaseModel):
    date: str = Field(description="Date, YYYY-MM-DD")
    seats: int = Field(default=1, ge=1, le=10)
    confirm: bool = False


def ask_booking() -> Elicit[Booking]:
    return Elicit("Which date, how many seats?", Booking)


@mcp.tool()
async def book(
    restaurant: str, answer: Annotated[ElicitationResult[Booking], Resolve(ask_booking)], ctx: Context
) -> str:
    """Book a table; asks the user for the details."""
    if isinstance(answer, AcceptedElicitation):
        data = answer.data.model_dump()
        record("book", restaurant=restaurant, action="accept", content=data)
        return f"booked {restaurant} on {data['date']} for {data['seats']}"
    record("book", restaurant=restaurant, action=answer.action)
    return f"not booked: {answer.action}"


@mcp.tool()
async def slow_book(
    seconds: float, answer: Annotated[ElicitationResult[Booking], Resolve(ask_booking)], ctx: Context
) -> str:
    """Work, then answer: the tool body runs after the elicitation round."""
    await anyio.sleep(seconds)
    record("slow_book", action=answer.action)
    return f"slow:{answer.action}"


if __name__ == "__main__":
    anyio.run(mcp.run_stdio_async)
