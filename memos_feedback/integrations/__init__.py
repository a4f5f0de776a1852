"""Optional integrations with monitoring systems, each behind its extra and
imported only when used."""
