// A subnet's form fields, by family, with its DDNS server and zones offered from the lists.
import { pickerOf } from "./lists.js";

const ADAPTERS = ["none", "ad_gsstsig", "bind_tsig", "powerdns_http", "embedded"];
const subnetFields = [
  { name: "cidr", label: "CIDR", required: true, placeholder: "10.1.2.0/24" },
  { name: "name", label: "Name" },
  { name: "description", label: "Description" },
  { name: "gateway", label: "Gateway", nullable: true, v4: true },
  { name: "lease_time_seconds", label: "Lease time (seconds)", type: "number" },
  // A client's requested lease time (option 51) is honoured between these (docs/api-ipam.md).
  { name: "min_lease_time_seconds", label: "Shortest lease a client may ask for (seconds)", type: "number",
    nullable: true, v4: true },
  { name: "max_lease_time_seconds", label: "Longest lease a client may ask for (seconds)", type: "number",
    nullable: true, v4: true },
  { name: "dhcp_enabled", label: "DHCP enabled", type: "checkbox", default: true },
  // An ICMP echo to an address before it is offered (docs/api-ipam.md, "Ping check").
  { name: "ping_check", label: "Ping an address before offering it", type: "checkbox", default: false, v4: true },
  { name: "ping_timeout_ms", label: "Ping check wait (ms, 100 to 5000)", type: "number", placeholder: "500", v4: true },
  { name: "next_server", label: "PXE next server", nullable: true, v4: true },
  { name: "boot_file", label: "PXE boot file", nullable: true, v4: true },
  { name: "ntp_servers", label: "NTP servers (comma separated)", type: "list" },
  { name: "ddns_adapter", label: "DDNS adapter", type: "select", options: ADAPTERS, default: "none" },
  { name: "ddns_zone", label: "DDNS forward zone", nullable: true },
  { name: "ddns_reverse_zone", label: "DDNS reverse zone", nullable: true },
  { name: "ddns_ttl", label: "DDNS TTL", type: "number", nullable: true },
  { name: "ddns_server_id", label: "DDNS server", nullable: true },
  // Several IPv4 subnets on one link (docs/api-ipam.md, "Shared networks").
  { name: "shared_network_id", label: "Shared network", nullable: true, v4: true },
];

// An IPv6 subnet has no gateway and no PXE fields (docs/api-ipam.md, "IPv6"): the API refuses them.
export const isV6 = (cidr) => String(cidr || "").includes(":");
export const familyFields = (v6) => subnetFields.filter((f) => !(v6 && f.v4));
export const V6_NOTE = "IPv6: no gateway — hosts learn their default routers from Router Advertisements "
  + "(RFC 4861); no PXE next server or boot file — give the boot file URL as DHCPv6 option 59 (RFC 5970) "
  + "under Options; no bounds on a client's requested lease time — the valid lifetime is the lease time; "
  + "no ping check — a client's duplicate address detection declines an address in use.";

// The DDNS server and the shared network as pickers and the zones with the known zones
// offered (a zone of an external server need not be one of the appliance's: the field stays
// free text). `servers` and `groups` are the pickers (null when the list cannot be read);
// `byField` what replaces or extends each field.
export async function loadDdnsPickers() {
  const [servers, zones, groups] = await Promise.all([
    pickerOf("/dns-servers", "ddns_server_id", "DDNS server", "none", (x) => `${x.name} (${x.adapter})`),
    pickerOf("/dns-zones", "ddns_zone", "", "", (z) => z.name),
    pickerOf("/shared-networks", "shared_network_id", "Shared network", "none (alone on its link)", (n) => n.name),
  ]);
  const names = (kind) => (zones?.items || []).filter((z) => z.kind === kind).map((z) => z.name);
  const byField = {
    ddns_server_id: servers,
    ddns_zone: { suggestions: names("forward") },
    ddns_reverse_zone: { suggestions: names("reverse") },
    shared_network_id: groups,
  };
  return { servers, groups, byField };
}

// The form's fields for a subnet of the family, with what `ddns` (loadDdnsPickers) offers.
export function subnetFormFields(v6, ddns) {
  return familyFields(v6).map((f) => {
    const offered = ddns?.byField[f.name];
    if (!offered) return f;
    return offered.type === "select" ? offered : { ...f, ...offered };
  });
}
