"""ipamd: IP address management and a DHCP server in one appliance."""

__version__ = "0.1.0"
