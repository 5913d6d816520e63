// The console's shell: sign-in, the bootstrap offer, navigation, hash routes, search.
import { ApiError, call, can, get, session } from "./api.js";
import { clear, h } from "./dom.js";
import { errorBox, form, secretBox } from "./ui.js";
import { routes } from "./routes.js";

const NAV = [
  ["#/", "Dashboard", "viewer"],
  ["#/prefixes", "Prefixes", "viewer"],
  ["#/leases", "Leases", "viewer"],
  ["#/history", "History", "viewer"],
  ["#/dns", "DNS", "viewer"],
  ["#/work", "Work", "viewer"],
  ["#/nodes", "Nodes", "viewer"],
  ["#/alerts", "Alerts", "viewer"],
  ["#/alert-destinations", "Alert destinations", "admin"],
  ["#/webhooks", "Webhooks", "admin"],
  ["#/tokens", "Tokens", "admin"],
  ["#/audit", "Audit", "viewer"],
  ["#/client-classes", "Client classes", "viewer"],
  ["#/shared-networks", "Shared networks", "viewer"],
  ["#/tenants", "Tenants", "viewer"],
  ["#/settings", "Settings", "viewer"],
  ["#/license", "License", "viewer"],
];

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, qs] = raw.split("?");
  return { path, params: new URLSearchParams(qs || "") };
}

// The shell's state (the page's <main>, the navigation, which render is the current one)
// lives in this closure, made once when the console loads.
function consoleApp(app) {
  let mainEl = null;
  let navEl = null;
  let renderSeq = 0;

  function signOut(message) {
    session.token = null;
    session.me = null;
    mainEl = null;
    showSignIn(message);
  }

  function showSignIn(message) {
    clear(app);
    const main = h("main", { id: "main", class: "signin", tabindex: "-1" });
    const box = h("div", { class: "card narrow" },
      h("h1", {}, "ipamd console"),
      message ? errorBox(message) : null,
      form({
        fields: [{ name: "token", label: "API token", type: "text", required: true, placeholder: "service_live_…" }],
        submitLabel: "Sign in",
        onSubmit: async ({ token }) => {
          if (!token) throw new ApiError(422, "validation_error", "token: enter the API token");
          const me = await call("GET", "/whoami", undefined, { token });
          session.token = token;
          session.me = me;
          showShell();
        },
      }),
      h("p", { class: "muted" }, "The token is kept in this tab only (sessionStorage) and sent as a Bearer header."));
    const input = box.querySelector("input");
    input.type = "password";
    main.append(box);
    app.append(main);
    input.focus();
  }

  function showBootstrap() {
    clear(app);
    const main = h("main", { id: "main", class: "signin", tabindex: "-1" });
    const box = h("div", { class: "card narrow" }, h("h1", {}, "Welcome to ipamd"),
      h("p", {}, "No API token exists yet. From the host itself you can create the first admin token now."));
    const made = h("div");
    const create = form({
      fields: [{ name: "name", label: "Token name", type: "text", value: "admin", required: true }],
      submitLabel: "Create the first admin token",
      onSubmit: async ({ name }) => {
        const token = await call("POST", "/tokens", { name: name || "", role: "admin" }, { token: null });
        create.remove();
        clear(made).append(secretBox("Admin token secret", token.token),
          h("button", {
            type: "button", class: "button primary",
            onclick: async () => {
              session.token = token.token;
              session.me = await get("/whoami");
              location.hash = "#/";
              showShell();
            },
          }, "Continue signed in with this token"));
      },
    });
    box.append(create, made);
    main.append(box);
    app.append(main);
  }

  function showShell() {
    clear(app);
    const me = session.me;
    const search = h("input", {
      id: "search", type: "search", name: "q", placeholder: "Search IP, MAC, CIDR, host…  ( / )",
      autocomplete: "off", spellcheck: "false", "aria-label": "Search",
    });
    const searchForm = h("form", { class: "search", role: "search", onsubmit: (e) => {
      e.preventDefault();
      const q = search.value.trim();
      if (q) location.hash = `#/search?q=${encodeURIComponent(q)}`;
    } }, search);
    const header = h("header", { class: "topbar" },
      h("a", { class: "brand", href: "#/" }, "ipamd"),
      searchForm,
      h("div", { class: "who" },
        h("span", { class: "who-name", "data-testid": "who-name" }, me.name || "bootstrap (no token yet)"),
        h("span", { class: `badge role-${me.role}`, "data-testid": "who-role" }, me.role),
        h("button", { type: "button", class: "button small", onclick: () => signOut() }, "Sign out")));
    navEl = h("nav", { class: "sidenav", "aria-label": "Main" },
      h("ul", {}, NAV.filter(([, , role]) => can(role)).map(([href, label]) =>
        h("li", {}, h("a", { href }, label)))));
    mainEl = h("main", { id: "main", tabindex: "-1" });
    app.append(header, h("div", { class: "layout" }, navEl, mainEl));
    render();
  }

  async function render() {
    if (!mainEl) return;
    const { path, params } = parseHash();
    const seq = ++renderSeq;
    for (const a of navEl.querySelectorAll("a")) {
      const target = a.getAttribute("href").slice(1);
      const current = target === "/" ? path === "/" : path === target || path.startsWith(`${target}/`);
      if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
    let page = null;
    let args = [];
    for (const [pattern, fn] of routes) {
      const m = pattern.exec(path);
      if (m) { page = fn; args = m.slice(1); break; }
    }
    const view = h("div", { class: "page" });
    clear(mainEl).append(view);
    if (!page) {
      view.append(h("h1", {}, "Not found"), h("p", {}, `No page at ${path}.`));
      return;
    }
    // A loading line while the page fetches what it shows (shown only if that takes a moment).
    const loading = h("p", { class: "loading-line muted", role: "status", "data-testid": "page-loading", hidden: true },
      "Loading…");
    mainEl.append(loading);
    view.setAttribute("aria-busy", "true");
    const slow = setTimeout(() => { loading.hidden = false; }, 150);
    try {
      await page(view, { params, args, isCurrent: () => seq === renderSeq });
    } catch (error) {
      if (seq === renderSeq) view.append(errorBox(error));
    } finally {
      clearTimeout(slow);
      loading.remove();
      view.removeAttribute("aria-busy");
    }
    if (seq === renderSeq) {
      const title = view.querySelector("h1");
      document.title = title ? `${title.textContent} — ipamd` : "ipamd console";
    }
  }

  async function start() {
    if (session.token) {
      try {
        session.me = await get("/whoami");
        showShell();
        return;
      } catch (error) {
        session.token = null;
        if (error.status !== 401) { showSignIn(error.message); return; }
      }
    }
    try {
      const me = await call("GET", "/whoami", undefined, { token: null });
      if (me.bootstrap) { showBootstrap(); return; }
      showSignIn();
    } catch (error) {
      // 401: tokens exist, sign in. 403: no token yet and this is not the host itself.
      showSignIn(error.status === 401 ? null : error.message);
    }
  }

  return { render, signOut, start };
}

// `/` anywhere but in a field jumps to the search box.
function jumpToSearch(e) {
  if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement) return;
  const box = document.getElementById("search");
  if (box) { e.preventDefault(); box.focus(); box.select(); }
}

const shell = consoleApp(document.getElementById("app"));
window.addEventListener("ipamd:unauthorized", (e) => shell.signOut(e.detail.message));
window.addEventListener("hashchange", () => shell.render());
document.addEventListener("keydown", jumpToSearch);
shell.start();
