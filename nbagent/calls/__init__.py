"""What every tool call obeys, whatever tool source serves it (an MCP server, the notebook's
own function tools): arguments that can be sent on as JSON (``arguments.py``) and one trace per
turn (``trace.py``). Below both core/ and mcp/, so each applies the same rule."""
