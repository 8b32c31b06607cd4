"""One module per ``trainscale`` command; see :mod:`trainscale.cli`."""
