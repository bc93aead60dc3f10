"""How the parts of a report are named to the user, by every layer that names them.

The advisor writes stage names into suggestion titles and the renderers label stage bars and
rows with them: one function, below both, so a stage reads the same in a fix's title, the
text summary and the PNG (issue 13, item 3). Pure string work over the report model.
"""

from __future__ import annotations

import re

from pipediag.report.model import StageStats


def stage_name(stage: StageStats) -> str:
    """How a stage is named to the user: `map(parse)` when it runs a user function, else its
    kind, with the dataset op when that says more (`source: TFRecord`)."""
    if stage.function:
        return f"{stage.kind}({stage.function})"
    name = re.sub(r"V\d+$", "", stage.name).removesuffix("Dataset")  # BatchDatasetV2 -> Batch
    kind = stage.kind.replace("-", "").lower()
    if not name or name.lower() == kind:
        return stage.kind
    if name.lower().startswith(kind):
        return name
    return f"{stage.kind}: {name}"
