"""The prices of known models (`known`), from the table generated from genai-prices
(`_table`, `make prices`): what `usage.price_for` falls back on when the config's
`[prices]` names none."""

__all__: list[str] = []
