"""nbagent as an MCP server: a front end that turns tool calls into Ops and Events into
progress, log and elicitation messages for the calling client. Sits above ``nbagent.core``."""
