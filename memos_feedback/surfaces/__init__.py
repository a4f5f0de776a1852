"""Surfaces: plugging the library into agents the user did not write, without code.

* ``claude_code`` — ``memos-feedback hook claude-code``: one Claude Code hook
  event per process (stdin JSON in, the hook answer out), with the rolling
  failure windows kept across processes by ``hook_state``, and the warm
  helper process that answers the events over a Unix socket (``hook_helper``);
* ``hook_install`` — ``memos-feedback hook install|uninstall claude-code``:
  merges the hook entries into a ``settings.json`` and takes out exactly
  those again;
* ``mcp_server`` — ``memos-feedback mcp``: an MCP server (stdio or
  streamable HTTP) on the official ``mcp`` SDK, extra ``[mcp]``.

One layer below the command line, which only parses flags and calls them.
docs/INTEGRATIONS.md has the setup, what each records and what it costs.
"""

from __future__ import annotations

__all__: list[str] = []
