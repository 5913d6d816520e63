"""`ipamd-import`: Kea and ISC dhcpd configurations mapped onto the API (spec §1).

A leaf room: it imports nothing else of ipamd and speaks to the appliance only through the
HTTP API with a token, so it runs on a laptop as well as on the appliance (docs/migrating.md).
"""
