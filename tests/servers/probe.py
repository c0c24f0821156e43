"""A stdio server whose tools each try one thing a sandbox should stop, and say what happened:
the walkthroughs' probe server (nbagent/examples/probe_server.py), run as a script.

Every tool answers ``allowed: ...`` or ``blocked: ErrorName: message``, so one test can hold a
whole matrix of probes against each sandbox mode (tests/security/test_sandbox_matrix.py).
"""

from nbagent.examples.probe_server import main

if __name__ == "__main__":
    main()
