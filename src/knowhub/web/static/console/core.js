// Shared helpers of the console: the API client, DOM building, i18n lookup, toasts.
// The console is a plain client of knowhub's public HTTP API: every call goes through
// api() below, to the same origin, with the API key kept in sessionStorage (if any).
import { MESSAGES } from "./i18n.js";

const KEY_STORE = "knowhub.apiKey";
const LANG_STORE = "knowhub.lang";

function initialLang() {
  const saved = localStorage.getItem(LANG_STORE);
  if (saved === "zh" || saved === "en") return saved;
  return (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
}

export const state = { lang: initialLang(), me: null };

/** Switch the UI language and remember the choice in this browser. */
export function setLang(lang) {
  state.lang = lang;
  localStorage.setItem(LANG_STORE, lang);
}

/** The UI text of `key` in the current language, with {name} placeholders filled. */
export function t(key, vars = {}) {
  const text = (MESSAGES[state.lang] && MESSAGES[state.lang][key]) ?? MESSAGES.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
}

export function apiKey() { return sessionStorage.getItem(KEY_STORE); }
export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_STORE, key); else sessionStorage.removeItem(KEY_STORE);
}

export class ApiError extends Error {
  constructor(status, code, message, detail) {
    super(message);
    this.status = status; this.code = code; this.detail = detail;
  }
}

/** Listeners told when the server answers 401 (the login dialog opens). */
export const onUnauthorized = [];

/** Call the HTTP API: `path` is same-origin ("/api/..."), `query` an object, `body` JSON. */
export async function api(method, path, { query, body } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, String(value));
  }
  const headers = { Accept: "application/json" };
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (exc) {
    throw new ApiError(0, "network", t("error.network"), {});
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    if (response.status === 401) onUnauthorized.forEach((listener) => listener(data.message));
    throw new ApiError(response.status, data.error || "http_error", data.message || response.statusText, data.detail || {});
  }
  return data;
}

/** Build an element: h("div", {class: "x", onclick: fn}, child, "text", [more]). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.className = value;
    else if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "value") el.value = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function toast(message, kind = "ok") {
  const box = document.getElementById("toast");
  box.textContent = message;
  box.className = `toast ${kind}`;
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, 4000);
}

/** Run an async action; an API error becomes a red toast (and, if given, text in `where`). */
export async function guard(action, where) {
  try {
    return await action();
  } catch (exc) {
    const message = exc instanceof ApiError ? `${exc.status ? exc.status + " " : ""}${exc.message}` : String(exc);
    toast(message, "error");
    if (where) fill(where, h("p", { class: "error", role: "alert" }, message));
    return undefined;
  }
}

export function empty(text) { return h("p", { class: "empty" }, text); }

export function when(value) {
  if (value === undefined || value === null || value === "") return "";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString(state.lang === "zh" ? "zh-CN" : "en-GB");
}

export function pretty(value) { return h("pre", { class: "json" }, JSON.stringify(value, null, 2)); }

/** A labelled form field; `input` is the control. */
export function field(label, input) { return h("label", { class: "field" }, h("span", {}, label), input); }

export function csv(text) { return (text || "").split(/[,，]/).map((s) => s.trim()).filter(Boolean); }

export function chips(values, cls = "chip") {
  return (values || []).map((value) => h("span", { class: cls }, value));
}

/** A small tab strip: tabs = [[id, label]], onpick(id). */
export function tabs(items, current, onpick, testid) {
  return h("div", { class: "tabs", role: "tablist", "data-testid": testid },
    items.map(([id, label]) => h("button", {
      type: "button", role: "tab", class: id === current ? "tab active" : "tab",
      "aria-selected": id === current ? "true" : "false", "data-tab": id,
      onclick: () => onpick(id),
    }, label)));
}
