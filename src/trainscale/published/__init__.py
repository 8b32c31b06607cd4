"""Published measurements: :mod:`.measurements` normalises them into configurations and
observations, :mod:`.accuracy` predicts them and reports the error (validation),
:mod:`.holdout` summarises the error on sources left out of the fit, :mod:`.summary` the error
per source (without importing the simulator, so the figures and tables can use it)."""
