"""``python -m nbagent.server ...`` = ``nbagent mcp-server ...``."""

import sys

from nbagent.server.cli import main_mcp_server

sys.exit(main_mcp_server(sys.argv[1:]))
