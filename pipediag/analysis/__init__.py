"""Pure analysis over recorded data: the verdict, its parts, the advisor, comparisons.

May import: `report`, `timeline` (the step type), `errors`. Never TensorFlow, NVML or the
measuring packages: everything here runs on a saved report."""
