// Settings: trusted relays (docs/relays.md).
import { can, get, patch } from "../api.js";
import { h } from "../dom.js";
import { fmtTime, form, link, section } from "../ui.js";

export async function settings(view) {
  view.append(h("h1", {}, "Settings"));
  const s = await get("/settings");
  const listed = (relays) => (relays.length ? relays.join(", ") : "none");
  const sec = section("Trusted relays",
    // docs/relays.md: trust goes by the packet's source address, which is usually not giaddr.
    h("p", { "data-testid": "relay-trust" }, "A relayed DHCP packet is served only when its source address ",
      "(the relay's address towards this appliance) is trusted; ",
      "giaddr (the relay's address on the client's segment, often a different one) only picks the subnet. ",
      "An untrusted source is dropped without an answer. ",
      "Such drops are counted by reason on each node's page (", link("#/nodes", "Nodes"), "); see docs/relays.md."),
    h("p", { class: "muted" }, "From the configuration file: ", listed(s.trusted_relays_config)),
    h("p", {}, "Set here: ", listed(s.trusted_relays), s.updated_at ? ` (updated ${fmtTime(s.updated_at)})` : ""));
  if (can("admin")) {
    sec.append(form({
      fields: [{ name: "trusted_relays", label: "Trusted relays (addresses or CIDRs, comma separated)", type: "list",
        help: "The source addresses relays send from, not their giaddr." }],
      initial: { trusted_relays: s.trusted_relays }, submitLabel: "Save relays",
      onSubmit: async (v) => {
        await patch("/settings", { trusted_relays: v.trusted_relays ?? [] });
        window.dispatchEvent(new HashChangeEvent("hashchange"));
      },
    }));
  }
  view.append(sec);
}
