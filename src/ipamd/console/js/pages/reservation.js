// A reservation's page: its client, its PXE fields and its options, which beat its classes'
// and its subnet's (docs/api-ipam.md, "Option scopes").
import { get } from "../api.js";
import { h } from "../dom.js";
import { link } from "../ui.js";
import { fieldsCard } from "../scoped.js";
import { optionsSection } from "../subnet_options.js";

const FIELDS = [{ name: "ip", label: "IP" }, { name: "mac", label: "MAC", nullable: true },
  { name: "client_id", label: "Client id", nullable: true }, { name: "hostname", label: "Hostname", nullable: true },
  { name: "next_server", label: "Next server (PXE)", nullable: true },
  { name: "boot_file", label: "Boot file (PXE)", nullable: true }];

export async function reservationPage(view, { args }) {
  const r = await get(`/reservations/${args[0]}`);
  const subnet = await get(`/subnets/${r.subnet_id}`);
  view.append(h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
    link(`#/subnets/${subnet.id}`, subnet.cidr), " / ", r.ip),
  h("h1", {}, `Reservation ${r.ip}`));
  const options = optionsSection(`/reservations/${r.id}/options`, false, "Options for this client");
  view.append(fieldsCard("Reservation", r, FIELDS, `/reservations/${r.id}`), options);
  await options.ready;
}
