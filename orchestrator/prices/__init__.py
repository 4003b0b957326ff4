"""What a model call costs: a model's `Price` (the config's `[prices]`), `find_price` and
`call_cost` (`cost`), falling back on the prices of known models (`known`, from the table
generated from genai-prices: `_table`, `make prices`) when the config names none."""

__all__: list[str] = []
