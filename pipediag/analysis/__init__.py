"""Pure analysis over recorded data: statistics, step labels, the verdict."""
