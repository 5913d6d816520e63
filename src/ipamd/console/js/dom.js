// Building DOM without HTML strings: every value from the API becomes a text node.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "style") {
      for (const [k, v] of Object.entries(value)) el.style.setProperty(k, v);
    } else if (key === "value" || key === "checked" || key === "selected") {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// An id for a label's `for` or an aria reference: random, so no counter is kept (64 bits:
// a clash among a page's few hundred ids is out of reach).
export function nextId(prefix = "f") {
  const [a, b] = crypto.getRandomValues(new Uint32Array(2));
  return `${prefix}-${a.toString(36)}${b.toString(36)}`;
}
