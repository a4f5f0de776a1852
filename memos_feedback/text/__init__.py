"""Text rules every layer shares: sanitising untrusted text for a prompt or a
page, and the ``@repair`` block a repair adds to a policy's boundary text.
Pure functions; nothing here touches a database."""
