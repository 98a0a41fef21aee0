// Console entry: header, login, language switch and the hash router (#/tree, #/knowledge,
// #/context, #/ops). Each view module exports render(root) and calls only the public API.
import { api, apiKey, fill, h, onUnauthorized, setApiKey, setLang, state, t } from "./core.js";
import * as context from "./context.js";
import * as knowledge from "./knowledge.js";
import * as ops from "./ops.js";
import * as tree from "./tree.js";

const VIEWS = { tree, knowledge, context, ops };

function currentView() {
  const name = (window.location.hash.match(/^#\/(\w+)/) || [])[1];
  return name in VIEWS ? name : "tree";
}

function drawChrome() {
  document.documentElement.lang = state.lang === "zh" ? "zh-CN" : "en";
  document.title = t("app.title");
  fill(document.getElementById("nav"), Object.keys(VIEWS).map((name) =>
    h("a", { href: `#/${name}`, class: name === currentView() ? "active" : "", "data-testid": `nav-${name}` }, t(`nav.${name}`))));
  document.getElementById("principal").textContent = state.me ? state.me.principal : "";
  const keyButton = document.getElementById("key-button");
  keyButton.textContent = apiKey() ? t("login.signOut") : t("login.enterKey");
  keyButton.hidden = !(state.me && state.me.keys_configured) && !apiKey();
  document.getElementById("lang-button").textContent = state.lang === "zh" ? "English" : "中文";
  document.getElementById("login-title").textContent = t("login.title");
  document.getElementById("login-hint").textContent = t("login.hint");
  document.getElementById("login-submit").textContent = t("login.submit");
}

function route() {
  drawChrome();
  const root = document.getElementById("view");
  if (!state.me) { fill(root); return; }
  VIEWS[currentView()].render(root);
}

function showLogin(message) {
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = message || "";
  document.getElementById("login-key").focus();
}

async function signIn() {
  try {
    state.me = await api("GET", "/api/me");
    document.getElementById("login").hidden = true;
    route();
  } catch (exc) {
    if (exc.status !== 401) fill(document.getElementById("view"), h("p", { class: "error" }, exc.message));
  }
}

onUnauthorized.push(() => {
  const hadKey = apiKey() !== null;
  state.me = null;
  setApiKey(null);
  drawChrome();
  showLogin(hadKey ? t("login.invalid") : t("login.required"));
});

document.getElementById("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("login-key");
  setApiKey(input.value.trim());
  input.value = "";
  signIn();
});
document.getElementById("lang-button").addEventListener("click", () => { setLang(state.lang === "zh" ? "en" : "zh"); route(); });
document.getElementById("key-button").addEventListener("click", () => {
  if (apiKey()) { setApiKey(null); state.me = null; route(); showLogin(""); } else showLogin("");
});
window.addEventListener("hashchange", route);
drawChrome();
signIn();
