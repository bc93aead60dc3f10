"""Pure analysis over recorded data: the verdict, its parts, the advisor, comparisons. May
import `report`, `timeline` (the step type) and `errors` only (docs/design.md, "Architecture")."""
