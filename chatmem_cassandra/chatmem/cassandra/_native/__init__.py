"""Parts only the Cassandra store has: the driver bridges (``_aio`` for the async twin,
``_blocking`` for the generated sync one: the same names over the driver's two APIs) and the
retry policy for lightweight transactions; ``window``, the windows ``add_and_get`` answers
from without a read."""
