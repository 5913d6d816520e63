// A client class's page: its match, priority and PXE fields, and its options, which beat
// the subnet's for the clients it matches (docs/api-ipam.md, "Option scopes").
import { get } from "../api.js";
import { h } from "../dom.js";
import { link } from "../ui.js";
import { CLASS_FIELDS } from "./client_classes.js";
import { fieldsCard } from "../scoped.js";
import { optionsSection } from "../subnet_options.js";

export async function clientClassPage(view, { args }) {
  const c = await get(`/client-classes/${args[0]}`);
  view.append(h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
    link("#/client-classes", "Client classes"), " / ", c.name),
  h("h1", {}, `Client class ${c.name}`),
  h("p", { class: "muted" }, "A client matching several classes gets the options of the lowest "
    + "priority number first; a reservation's options beat every class's."));
  const options = optionsSection(`/client-classes/${c.id}/options`, false, "Options for its clients");
  view.append(fieldsCard("Class", c, CLASS_FIELDS, `/client-classes/${c.id}`), options);
  await options.ready;
}
