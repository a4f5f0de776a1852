"""Adapters: wire a ``FeedbackSubscriber`` into an agent runtime.

One module per runtime, each behind its own extra, none imported by
``import memos_feedback`` (nor by importing this package):

* ``memos_feedback.adapters.langchain`` — ``FeedbackMiddleware`` for
  LangChain 1.x ``create_agent``, ``FeedbackCallbackHandler`` for other
  LangChain code (extra ``[langchain]``);
* ``memos_feedback.adapters.openai_agents`` — ``OpenAIAgentsFeedback`` for
  the OpenAI Agents SDK (extra ``[openai-agents]``);
* ``memos_feedback.adapters.claude_agent`` — ``feedback_hooks`` for the
  Claude Agent SDK (extra ``[claude-agent]``).

What they share (step counter, the default tool-call *context*, trace
rows, the per-turn guidance cache, "never raise into the runtime") lives
in ``memos_feedback.adapters.core``. docs/ADAPTERS.md has the details.
"""

from __future__ import annotations

__all__: list[str] = []
