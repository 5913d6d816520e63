// DHCPv4 option names beside their codes (IANA "BOOTP Vendor Extensions and DHCP Options";
// RFC 2132 unless noted). A code not listed here is shown as its number only.
const NAMES = {
  1: "subnet mask", 2: "time offset", 3: "routers", 4: "time servers", 5: "name servers (IEN 116)",
  6: "DNS servers", 7: "log servers", 8: "cookie servers", 9: "LPR servers", 10: "impress servers",
  11: "resource location servers", 12: "host name", 13: "boot file size", 14: "merit dump file",
  15: "domain name", 16: "swap server", 17: "root path", 18: "extensions path", 19: "IP forwarding",
  20: "non-local source routing", 21: "policy filter", 22: "max datagram reassembly size",
  23: "default IP TTL", 24: "path MTU aging timeout", 25: "path MTU plateau table",
  26: "interface MTU", 27: "all subnets are local", 28: "broadcast address",
  29: "perform mask discovery", 30: "mask supplier", 31: "perform router discovery",
  32: "router solicitation address", 33: "static routes", 34: "trailer encapsulation",
  35: "ARP cache timeout", 36: "Ethernet encapsulation", 37: "TCP default TTL",
  38: "TCP keepalive interval", 39: "TCP keepalive garbage", 40: "NIS domain", 41: "NIS servers",
  42: "NTP servers", 43: "vendor specific", 44: "NetBIOS name servers",
  45: "NetBIOS datagram distribution servers", 46: "NetBIOS node type", 47: "NetBIOS scope",
  48: "X Window font servers", 49: "X Window display managers", 50: "requested address",
  51: "lease time", 52: "option overload", 53: "message type", 54: "server identifier",
  55: "parameter request list", 56: "message", 57: "max message size", 58: "renewal time (T1)",
  59: "rebinding time (T2)", 60: "vendor class identifier", 61: "client identifier",
  64: "NIS+ domain", 65: "NIS+ servers", 66: "TFTP server name", 67: "boot file name",
  68: "mobile IP home agents", 69: "SMTP servers", 70: "POP3 servers", 71: "NNTP servers",
  72: "WWW servers", 73: "finger servers", 74: "IRC servers", 75: "StreetTalk servers",
  76: "StreetTalk directory assistance servers", 77: "user class (RFC 3004)",
  81: "client FQDN (RFC 4702)", 82: "relay agent information (RFC 3046)",
  100: "POSIX time zone (RFC 4833)", 101: "tz database time zone (RFC 4833)",
  114: "captive portal URI (RFC 8910)", 118: "subnet selection (RFC 3011)",
  119: "domain search (RFC 3397)", 121: "classless static routes (RFC 3442)",
  150: "TFTP server addresses (RFC 5859)", 252: "WPAD URL",
};

export function optionName(code) {
  return NAMES[Number(code)] || null;
}

// "6 — DNS servers", or "224" for a code without a known name.
export function optionLabel(code) {
  const name = optionName(code);
  return name ? `${code} — ${name}` : String(code);
}

// DHCPv6 option names (RFC 8415 numbers; other meanings than DHCPv4's: 23 is the IP TTL there).
const NAMES6 = {
  17: "vendor-specific information", 23: "DNS recursive name servers (RFC 3646)",
  24: "domain search list (RFC 3646)", 56: "NTP server (RFC 5908)", 59: "boot file URL (RFC 5970)",
};

// "23 — DNS recursive name servers (RFC 3646)" for a DHCPv6 option.
export function optionLabel6(code) {
  const name = NAMES6[Number(code)];
  return name ? `${code} — ${name}` : String(code);
}
