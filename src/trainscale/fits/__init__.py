"""Statistics behind the study's figures and tables: power-law, USL and marginal-return fits.

Every function takes a long table (one row per configuration) and the columns that define a
series, and returns a tidy DataFrame whose columns are documented in its docstring and defined,
with dtype, unit and meaning, in :mod:`trainscale.schema` (``LOGLOG_COLUMNS``, ``USL_COLUMNS``,
``MARGINAL_COLUMNS``, ``USL_MARGINAL_COLUMNS``):

- :func:`fit_loglog`: ``log2(y) ~ log2(num_gpus)`` per series (OLS, HC3 errors);
- :func:`fit_usl`, :func:`fit_usl_table`, :func:`usl_curve`: Universal Scalability Law;
- :func:`marginal_returns`, :func:`usl_marginal`: tokens/s bought per added GPU and per kW.
"""

from __future__ import annotations

from trainscale.fits.loglog import fit_loglog
from trainscale.fits.marginal import marginal_returns, usl_marginal
from trainscale.fits.usl_fit import UslFit, fit_usl
from trainscale.fits.usl_law import usl_model
from trainscale.fits.usl_table import fit_usl_table, usl_curve

__all__ = [
    "UslFit",
    "fit_loglog",
    "fit_usl",
    "fit_usl_table",
    "marginal_returns",
    "usl_curve",
    "usl_marginal",
    "usl_model",
]
