"""What several front ends offer alike, below them all (DESIGN §2): the notebook, the CLI and the
MCP server import this and the core, never each other."""
