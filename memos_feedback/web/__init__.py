"""``memos-feedback serve``: a small web UI over the store (extra ``[ui]``).

Nothing here is imported by ``import memos_feedback``; Starlette and
uvicorn are imported only when the server starts. See docs/OPERATIONS.md.
"""
