// Context view: a ctx:// browser over the caller's spaces, a node with L0/L1/L2 tabs and
// relations, search (query plan, seed hits, blocks), the commit audit and committing a chat.
import { api, chips, empty, field, fill, guard, h, pretty, state, t, tabs, toast, when } from "./core.js";

const expanded = new Set();
let panes = null;
let rootEl = null;
let tab = "browse";
let current = null;
let level = "L1";

export function render(root) {
  rootEl = root;
  panes = { body: h("div", { class: "stack" }), node: h("section", { class: "card", "data-testid": "context-node" }) };
  fill(root, h("div", { class: "split wide" },
    h("div", { class: "stack" },
      tabs([["browse", t("ctx.browse")], ["search", t("common.search")], ["commit", t("ctx.commit")], ["audit", t("ctx.audit")]],
        tab, (id) => { tab = id; render(root); }, "context-tabs"),
      panes.body),
    panes.node));
  if (current) showNode(current); else fill(panes.node, empty(t("ctx.pickNode")));
  ({ browse: browseView, search: searchView, commit: commitView, audit: auditView })[tab]();
}

function spaces() { return state.me ? state.me.context.spaces : []; }

function browseView() {
  if (!expanded.size && spaces().length) expanded.add(spaces()[0]);
  const tree = h("div", { class: "tree", "data-testid": "ctx-tree" });
  fill(panes.body, h("section", { class: "card" }, h("h2", {}, t("ctx.spaces")),
    h("p", { class: "muted small" }, t("ctx.spacesHelp")), tree));
  const draw = async () => fill(tree, await Promise.all(spaces().map((uri) => dirEntry({ uri, name: uri, is_dir: true, has_children: true }, draw))));
  guard(draw, tree);
}

async function dirEntry(entry, redraw) {
  const isOpen = expanded.has(entry.uri);
  const row = h("div", { class: entry.uri === current ? "node selected" : "node" },
    h("button", { type: "button", class: "toggle", disabled: !entry.has_children, "data-testid": "ctx-toggle",
      onclick: () => { if (isOpen) expanded.delete(entry.uri); else expanded.add(entry.uri); redraw(); } },
    entry.has_children ? (isOpen ? "▾" : "▸") : "·"),
    entry.is_node || !entry.is_dir
      ? h("button", { type: "button", class: "name", "data-uri": entry.uri, "data-testid": "ctx-node-link", onclick: () => { showNode(entry.uri); redraw(); } }, entry.name)
      : h("span", { class: "name dir" }, entry.name),
    entry.category ? h("span", { class: "muted small" }, entry.category) : null);
  let kids = null;
  if (isOpen && entry.has_children) {
    try {
      const found = await api("GET", "/api/context/children", { query: { uri: entry.uri } });
      kids = h("div", { class: "kids" }, found.results.length
        ? await Promise.all(found.results.map((child) => dirEntry(child, redraw))) : empty(t("ctx.emptyDir")));
    } catch (exc) {
      kids = h("div", { class: "kids" }, exc.status === 404 ? empty(t("ctx.emptyDir")) : h("p", { class: "error" }, exc.message));
    }
  }
  return h("div", { class: "branch" }, row, kids);
}

async function showNode(uri, wanted) {
  current = uri;
  if (wanted) level = wanted;
  await guard(async () => {
    const read = await api("GET", "/api/context/read", { query: { uri, level, expand_relations: true, max_relations: 50 } });
    const text = level === "L0" ? read.abstract : level === "L1" ? read.overview : read.content_excerpt;
    fill(panes.node,
      h("div", { class: "head" }, h("h2", {}, uri.split("/").pop()), read.category ? h("span", { class: "chip" }, read.category) : null),
      h("p", { class: "mono small muted", "data-testid": "ctx-uri" }, uri),
      tabs([["L0", t("ctx.L0")], ["L1", t("ctx.L1")], ["L2", t("ctx.L2")]], level, (id) => showNode(uri, id), "level-tabs"),
      h("div", { class: "level", "data-testid": "ctx-level", "data-level": read.level_hit }, text || empty(t("ctx.noText"))),
      h("h3", {}, t("ctx.relations")),
      read.relations.length ? h("ul", { class: "plain", "data-testid": "ctx-relations" }, read.relations.map((rel) => h("li", {},
        h("span", { class: "chip" }, rel.relation_type), " ",
        h("button", { type: "button", class: "link mono small", onclick: () => showNode(rel.to_uri === uri ? rel.from_uri : rel.to_uri) },
          rel.to_uri === uri ? rel.from_uri : rel.to_uri),
        rel.reason ? h("span", { class: "muted small" }, " — ", rel.reason) : null))) : empty(t("ctx.noRelations")),
      h("details", {}, h("summary", {}, t("ctx.metadata")), pretty(read.metadata)),
      await editor(uri));
  }, panes.node);
}

/** Edit form (L0/L1/L2, with the node's version as the expected one) and the delete button. */
async function editor(uri) {
  let node;
  try {
    node = await api("GET", "/api/context/node", { query: { uri } });
  } catch (exc) {
    return null; // a directory or a space root: nothing to edit
  }
  const abstract = h("input", { value: node.abstract, maxlength: 2000, "data-testid": "ctx-edit-abstract" });
  const overview = h("textarea", { rows: 4, "data-testid": "ctx-edit-overview" });
  overview.value = node.overview;
  const content = h("textarea", { rows: 8, "data-testid": "ctx-edit-content" });
  content.value = node.content;
  const out = h("div", {});
  return h("div", { class: "stack" },
    h("details", { "data-testid": "ctx-edit" }, h("summary", {}, t("common.edit")),
      h("p", { class: "muted small" }, t("ctx.editHelp")),
      h("form", { class: "form", onsubmit: (e) => { e.preventDefault(); guard(async () => {
        const saved = await api("PATCH", "/api/context/node", { body: { uri, abstract: abstract.value, overview: overview.value,
          content: content.value, expected_version: node.version } });
        toast(t("ctx.edited", { version: saved.version }));
        showNode(uri);
      }, out); } },
        field(t("ctx.L0"), abstract), field(t("ctx.L1"), overview), field(t("ctx.L2"), content),
        h("button", { type: "submit", "data-testid": "ctx-edit-save" }, t("common.save"))), out),
    h("div", { class: "row" }, h("button", { type: "button", class: "danger", "data-testid": "ctx-delete", onclick: () => guard(async () => {
      if (!window.confirm(t("ctx.confirmDelete"))) return;
      await api("DELETE", "/api/context/node", { query: { uri, recursive: true } });
      toast(t("ctx.deleted"));
      current = null;
      render(rootEl);
    }, out) }, t("common.delete"))));
}

function searchView() {
  const query = h("input", { type: "search", required: true, "data-testid": "ctx-search-input" });
  const topK = h("input", { type: "number", min: 1, max: 100, value: 10 });
  const out = h("div", { "data-testid": "ctx-search-result" });
  fill(panes.body, h("section", { class: "card" },
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); guard(async () => {
      const result = await api("GET", "/api/context/search", { query: { q: query.value, top_k: topK.value } });
      fill(out,
        h("h3", {}, t("ctx.plan")),
        h("ol", { class: "plain", "data-testid": "ctx-plan" }, result.query_plan.map((q) => h("li", {},
          h("b", {}, q.text), " ", chips([q.hints && q.hints.intent, q.context_type, ...(q.categories || [])].filter(Boolean)),
          q.target_uri ? h("span", { class: "mono small" }, " ", q.target_uri) : null))),
        h("h3", {}, t("ctx.seeds")),
        result.seed_hits.length ? h("table", { class: "table", "data-testid": "ctx-seeds" },
          h("thead", {}, h("tr", {}, [t("ctx.score"), "URI", t("ctx.abstract")].map((c) => h("th", {}, c)))),
          h("tbody", {}, result.seed_hits.map((hit) => h("tr", {}, h("td", { class: "num" }, hit.score.toFixed(3)),
            h("td", { class: "mono small" }, hit.uri), h("td", { class: "small" }, hit.abstract))))) : empty(t("ctx.noSeeds")),
        h("h3", {}, t("ctx.blocks")),
        result.blocks.length ? h("ol", { class: "plain", "data-testid": "ctx-blocks" }, result.blocks.map((block) => h("li", { class: "block" },
          h("div", { class: "head" }, h("button", { type: "button", class: "link mono small", onclick: () => showNode(block.uri) }, block.uri),
            h("span", { class: "muted small" }, `${block.score.toFixed(3)} · ${block.match_reason} · ${block.level_hit}`)),
          h("p", {}, block.abstract)))) : empty(t("ctx.noBlocks")));
    }, out); } },
      field(t("common.query"), query), field("top_k", topK),
      h("button", { type: "submit", "data-testid": "ctx-search-button" }, t("common.search"))), out));
}

/** Messages from pasted text: a JSON array of {role, content}, or "role: text" lines. */
export function parseChat(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) return JSON.parse(trimmed);
  const messages = [];
  for (const line of trimmed.split(/\n/)) {
    const match = line.match(/^\s*(user|assistant|system|tool|用户|助手)\s*[:：]\s*(.*)$/i);
    if (match) {
      const role = { 用户: "user", 助手: "assistant" }[match[1]] || match[1].toLowerCase();
      messages.push({ role, content: match[2] });
    } else if (messages.length && line.trim()) {
      messages[messages.length - 1].content += `\n${line}`;
    } else if (line.trim()) {
      messages.push({ role: "user", content: line });
    }
  }
  return messages;
}

function commitView() {
  const chat = h("textarea", { rows: 10, "data-testid": "commit-chat", placeholder: "user: 我下周去上海出差\nassistant: 好的,需要我帮你订酒店吗?" });
  const session = h("input", { placeholder: t("ctx.sessionOptional") });
  const out = h("div", { "data-testid": "commit-result" });
  fill(panes.body, h("section", { class: "card" }, h("h2", {}, t("ctx.commit")), h("p", { class: "muted small" }, t("ctx.commitHelp")),
    h("form", { class: "form", onsubmit: (e) => { e.preventDefault(); guard(async () => {
      const messages = parseChat(chat.value);
      if (!messages.length) throw new Error(t("ctx.noMessages"));
      const result = await api("POST", "/api/context/commit", { body: { messages, session_id: session.value.trim() || undefined } });
      toast(t("ctx.committed", { status: result.status }));
      fill(out, commitReport(result));
    }, out); } },
      field(t("ctx.chat"), chat), field(t("ctx.session"), session),
      h("button", { type: "submit", "data-testid": "commit-submit" }, t("ctx.commit"))), out));
}

/** One commit's audit: archive, WritePlans (policy, action, reason) and write results. */
export function commitReport(result) {
  return [
    h("p", {}, h("span", { class: `status ${result.status}` }, result.status), " ", h("span", { class: "mono small" }, result.commit_id)),
    result.archive ? h("p", {}, t("ctx.archive"), ": ", h("button", { type: "button", class: "link mono small",
      onclick: () => showNode(result.archive.archive_uri) }, result.archive.archive_uri)) : null,
    h("h3", {}, t("ctx.plans")),
    result.plans.length ? h("table", { class: "table", "data-testid": "write-plans" },
      h("thead", {}, h("tr", {}, [t("ctx.action"), t("ctx.policy"), t("ctx.target"), t("tree.reason")].map((c) => h("th", {}, c)))),
      h("tbody", {}, result.plans.map((plan) => h("tr", {}, h("td", {}, h("span", { class: "chip" }, plan.action)),
        h("td", { class: "small" }, plan.policy), h("td", {}, h("button", { type: "button", class: "link mono small",
          onclick: () => showNode(plan.target_uri) }, plan.target_uri)), h("td", { class: "small" }, plan.reason)))))
      : empty(t("ctx.noPlans")),
    h("details", {}, h("summary", {}, t("ctx.stats")), pretty(result.stats)),
  ];
}

function auditView() {
  const out = h("div", { "data-testid": "ctx-audit" });
  fill(panes.body, h("section", { class: "card" }, h("h2", {}, t("ctx.audit")), h("p", { class: "muted small" }, t("ctx.auditHelp")), out));
  guard(async () => {
    const found = await api("GET", "/api/context/commits", { query: { limit: 50 } });
    fill(out, found.results.length ? found.results.map((commit) => h("details", { class: "card inner", "data-testid": "audit-commit" },
      h("summary", {}, h("span", { class: `status ${commit.status}` }, commit.status), " ",
        when(commit.committed_at), " · ", commit.archive ? commit.archive.archive_uri.split("/").pop() : "",
        " · ", t("ctx.planCount", { n: commit.plans.length })),
      commitReport(commit))) : empty(t("ctx.noCommits")));
  }, out);
}
