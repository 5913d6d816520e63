// Shared networks: several IPv4 subnets on one link (Kea's shared-networks, ISC dhcpd's
// shared-network). A subnet joins one from its own form; the list shows each group's members
// in the order the DHCP server tries their pools after the relay's subnet (docs/api-ipam.md).
import { h } from "../dom.js";
import { link } from "../ui.js";
import { crudSection } from "../crud.js";
import { dash, restOf, tenantField } from "../lists.js";

const FIELDS = [{ name: "name", label: "Name", required: true },
  { name: "description", label: "Description" }];

// The members, each linked to its subnet's page (where it joins or leaves the group).
function members(n) {
  if (!n.subnets.length) return "—";
  return h("span", { "data-testid": "members" }, n.subnets.flatMap((s, k) => [
    k ? ", " : "", link(`#/subnets/${s.id}`, s.name ? `${s.cidr} (${s.name})` : s.cidr)]));
}

export async function sharedNetworks(view) {
  view.append(h("h1", {}, "Shared networks"));
  view.append(h("p", { class: "muted" }, "Subnets of one link: a relay's address in any member "
    + "selects the group, and a new address comes from the relay's subnet first, then from the "
    + "others in the order shown. A group with members cannot be deleted: take each subnet out "
    + "first (its Shared network field)."));
  const tenant = await tenantField();
  const sec = crudSection({
    title: "Shared networks", noun: "shared network", fields: [...FIELDS, tenant], editFields: FIELDS,
    columns: [{ label: "Name", value: (n) => n.name },
      { label: "Subnets (in the order tried)", value: members },
      { label: "Description", value: (n) => dash(n.description) }],
    ...restOf("/shared-networks"),
  });
  view.append(sec);
  await sec.ready;
}
