"""Research tools: one module per tool; `registry.build_tools` builds the enabled ones."""
