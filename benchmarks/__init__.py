"""labrys's benchmark suite: `labrys bench` runs these workloads (see README.md here)."""
from . import ba, gmm, lstm, table1

WORKLOADS = table1.WORKLOADS + gmm.WORKLOADS + ba.WORKLOADS + lstm.WORKLOADS
