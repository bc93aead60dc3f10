"""Pure analysis over recorded data: statistics, step labels, input cost and its parts, the
verdict and its phases, GPU idle causes, host contention, the advisor's rules, the noise of a
run's figures, two runs compared, a history's trend.

May import: `report`, `timeline` (the step type), `errors`. Never TensorFlow, NVML or the
measuring packages: everything here runs on a saved report.
"""
