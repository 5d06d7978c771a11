"""The one tool the local-model tests offer the model: `Lookup`, in the OpenAI tool format the
local model is handed."""

from __future__ import annotations

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field


class Lookup(BaseModel):
    """Look a query up."""

    query: str = Field(description="What to look up.")


TOOLS = [convert_to_openai_tool(Lookup)]
