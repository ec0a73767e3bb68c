"""Discovery-driven synthesis, the general path for web sandboxes: find where the live app keeps its
state, use it as a person would (fill every field by its type and constraints, press Enter in lone
fields, tick boxes, press buttons on records, drag cards between lists, log in), turn every transition
that changed state into a parameterised task family, vary and chain them, and verify from the observed
state diff. Reading the source only adds to this path; nothing here names an app."""
