"""DHCPv4 wire codec and server."""
