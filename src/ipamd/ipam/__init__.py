"""Domain rules per resource; asyncio-side units of work called through the db bridge."""
