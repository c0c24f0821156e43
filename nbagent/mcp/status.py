"""What ``McpConnectionManager.status()`` reports per server (for ``%agent mcp`` and the CLI):
the protocol's ``ServerStatus``, which ``mcp_list_tools_response`` carries too."""

from nbagent.protocol import ServerStatus

__all__ = ["ServerStatus"]
