"""Which records count, said once: the predicates every derivation filters its rows by.

A record is `MEASURED` when our harness ran it (not a claim, an import or a retraction), and `STANDING` when it is
measured and no later record retracts it. What else a figure needs (a finished status, a steady-state interval, a
verified loss) each derivation adds beside these, and says why.
"""

import polars as pl

MEASURED = pl.col("origin") == "measured"
"""A run of our harness: its record's origin is "measured" (claims, imports and retractions are not runs)."""
STANDING = MEASURED & pl.col("retracted_by").is_null()
"""A measured run that no retraction names."""
