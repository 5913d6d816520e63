"""The JSON HTTP API (/api/v1), served by hypercorn inside the runtime's nursery."""
