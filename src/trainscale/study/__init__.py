"""A study (one sweep) file to a configuration table: :mod:`.sweep` reads, checks, expands,
derives, filters and chunks it; :mod:`.report` decides what its per-study outputs show."""
