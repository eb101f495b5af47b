"""engram's library: the store and every concept of docs/design.md section 3.

Front ends (the `engram` command, the language server, agent hooks, the MCP server) are thin
layers over this package. It never imports pygls or lsprotocol, and its write path imports
nothing heavier than the standard library, because hooks run it as a cold process on every
agent tool call.
"""

__version__ = "0.1.0"
