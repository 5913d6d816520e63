// The one way the console talks to the appliance: /api/v1 with the token as Bearer.
const BASE = "/api/v1";
const KEY = "ipamd.token";
const ME_KEY = "ipamd.whoami";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
  // "name: required; cidr: not a network" → {name: "required", cidr: "not a network"}
  fields() {
    const out = {};
    if (this.status !== 422) return out;
    for (const part of this.message.split("; ")) {
      const m = /^([A-Za-z_][\w.[\]]*): (.*)$/s.exec(part);
      if (m) {
        const name = m[1].split(/[.[]/)[0];
        out[name] = out[name] ? `${out[name]}; ${m[2]}` : m[2];
      }
    }
    return out;
  }
}

// The signed-in token and who it is (GET /whoami), both kept in the tab's sessionStorage:
// the module itself holds no state.
export const session = {
  get token() { return sessionStorage.getItem(KEY); },
  set token(value) {
    if (value) {
      sessionStorage.setItem(KEY, value);
    } else { // no token, no identity
      sessionStorage.removeItem(KEY);
      sessionStorage.removeItem(ME_KEY);
    }
  },
  get me() {
    const text = sessionStorage.getItem(ME_KEY);
    return text ? JSON.parse(text) : null;
  },
  set me(value) {
    if (value) sessionStorage.setItem(ME_KEY, JSON.stringify(value));
    else sessionStorage.removeItem(ME_KEY);
  },
};

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

export async function call(method, path, body, { raw = false, token } = {}) {
  const headers = { Accept: raw ? "*/*" : "application/json" };
  const secret = token === undefined ? session.token : token;
  if (secret) headers.Authorization = `Bearer ${secret}`;
  const init = { method, headers, credentials: "omit", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(BASE + path, init);
  } catch (error) {
    throw new ApiError(0, "network", `the appliance did not answer (${error.message})`);
  }
  if (!response.ok) {
    let code = "error";
    let message = `${response.status} ${response.statusText}`;
    try {
      const data = await response.json();
      if (data && data.error) ({ code, message } = data.error);
    } catch { /* not JSON: keep the status line */ }
    const error = new ApiError(response.status, code, message);
    if (response.status === 401 && session.token && secret === session.token) {
      window.dispatchEvent(new CustomEvent("ipamd:unauthorized", { detail: error }));
    }
    throw error;
  }
  if (raw) return response;
  if (response.status === 204) return null;
  return response.json();
}

export const get = (path, params) => call("GET", path + query(params));
export const post = (path, body) => call("POST", path, body ?? {});
export const patch = (path, body) => call("PATCH", path, body);
export const del = (path) => call("DELETE", path);

const RANK = { viewer: 0, operator: 1, admin: 2 };
export function can(role) {
  return !!session.me && RANK[session.me.role] >= RANK[role];
}
