"""core/v1's pod templates (printers.go's printPodTemplate): no Age column."""

from __future__ import annotations

from pinnace.api.tables.columns import Column, Object, Printer, Row, name_column, name_of, section
from pinnace.api.tables.formats import container_cells, format_labels


def _pod_template_row(template: Object, now: float) -> Row:
    names, images = container_cells(section(template, "template", "spec"))
    labels = section(template, "template", "metadata").get("labels")
    return Row([name_of(template), names, images, format_labels(labels)])


POD_TEMPLATES = Printer(
    (
        name_column(),
        Column("Containers", "string", "Names of each container in the template."),
        Column("Images", "string", "Images referenced by each container in the template."),
        Column("Pod Labels", "string", "The labels for the pod template."),
    ),
    _pod_template_row,
)
