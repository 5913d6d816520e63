// Every page of the console by its link: one module a page under pages/, each
// (view, {params, args, isCurrent}) => fills `view`.
import { alertDestinations } from "./pages/alert_destinations.js";
import { alertsPage } from "./pages/alerts.js";
import { audit } from "./pages/audit.js";
import { clientClassPage } from "./pages/client_class.js";
import { clientClasses } from "./pages/client_classes.js";
import { dashboard } from "./pages/dashboard.js";
import { dnsPage } from "./pages/dns.js";
import { zonePage } from "./pages/dns_zone.js";
import { history } from "./pages/history.js";
import { leases } from "./pages/leases.js";
import { licensePage } from "./pages/license.js";
import { nodePage, nodes } from "./pages/nodes.js";
import { poolPage } from "./pages/pool.js";
import { prefixes } from "./pages/prefixes.js";
import { reservationPage } from "./pages/reservation.js";
import { search } from "./pages/search.js";
import { settings } from "./pages/settings.js";
import { sharedNetworks } from "./pages/shared_networks.js";
import { subnetPage } from "./pages/subnet.js";
import { tenants } from "./pages/tenants.js";
import { tokensPage } from "./pages/tokens.js";
import { webhooks } from "./pages/webhooks.js";
import { work } from "./pages/work.js";

const ID = "([0-9a-f-]{36})";

export const routes = [
  [new RegExp(`^/pools/${ID}$`), poolPage],
  [/^\/$/, dashboard], // one GET /dashboard a redraw (docs/console.md)
  [/^\/nodes$/, nodes],
  [new RegExp(`^/nodes/${ID}$`), nodePage],
  [/^\/alerts$/, alertsPage],
  [/^\/alert-destinations$/, alertDestinations],
  [/^\/prefixes$/, prefixes],
  [new RegExp(`^/subnets/${ID}$`), subnetPage],
  [/^\/leases$/, leases],
  [/^\/search$/, search],
  [/^\/history$/, history],
  [/^\/work$/, work],
  [/^\/webhooks$/, webhooks],
  [/^\/tokens$/, tokensPage],
  [/^\/audit$/, audit],
  [/^\/client-classes$/, clientClasses],
  [new RegExp(`^/client-classes/${ID}$`), clientClassPage],
  [new RegExp(`^/reservations/${ID}$`), reservationPage],
  [/^\/shared-networks$/, sharedNetworks],
  [/^\/tenants$/, tenants],
  [/^\/settings$/, settings],
  [/^\/license$/, licensePage],
  [/^\/dns$/, dnsPage],
  [new RegExp(`^/dns/zones/${ID}$`), zonePage],
];
