// Keyword tree view: browse (expand/collapse), a keyword's details and infos, search with
// the agent's trajectory, create/edit/move/merge/delete, and undo from the history.
import { api, chips, empty, field, fill, guard, h, t, toast, when } from "./core.js";

const open = new Set(["root"]);
let selected = null;
let panes = null;

export function render(root) {
  panes = {
    tree: h("div", { class: "tree", "data-testid": "tree" }),
    detail: h("section", { class: "card", "data-testid": "keyword-detail" }),
    search: h("section", { class: "card", "data-testid": "tree-search-result" }),
    history: h("section", { class: "card", "data-testid": "tree-history" }),
  };
  const query = h("input", { type: "search", placeholder: t("tree.searchPlaceholder"), "data-testid": "tree-search-input" });
  const agent = h("input", { type: "checkbox", checked: true });
  const searchForm = h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); search(query.value, agent.checked); } },
    query, h("label", { class: "inline" }, agent, t("tree.useAgent")),
    h("button", { type: "submit", "data-testid": "tree-search-button" }, t("common.search")));
  fill(root, h("div", { class: "split" },
    h("aside", { class: "card side" }, h("h2", {}, t("tree.title")), searchForm, panes.tree,
      h("button", { type: "button", class: "secondary", onclick: () => showCreate("root") }, t("tree.newTop"))),
    h("div", { class: "stack" }, panes.search, panes.detail, panes.history)));
  panes.search.hidden = true;
  fill(panes.detail, empty(t("tree.pickKeyword")));
  refreshTree();
  loadHistory();
  if (selected) showKeyword(selected);
}

async function refreshTree() {
  await guard(async () => {
    const rootNode = await api("GET", "/api/tree/keywords/root");
    fill(panes.tree, await branch(rootNode, 0));
  }, panes.tree);
}

async function branch(node, depth) {
  const hasChildren = (node.children || []).length > 0;
  const isOpen = open.has(node.id);
  const label = node.id === "root" ? t("tree.root") : node.name;
  const row = h("div", { class: node.id === selected ? "node selected" : "node", "data-id": node.id },
    h("button", { type: "button", class: "toggle", "aria-label": isOpen ? t("tree.collapse") : t("tree.expand"),
      disabled: !hasChildren, "data-testid": "toggle",
      onclick: () => { if (isOpen) open.delete(node.id); else open.add(node.id); refreshTree(); } },
      hasChildren ? (isOpen ? "▾" : "▸") : "·"),
    h("button", { type: "button", class: "name", "data-testid": "keyword-link",
      onclick: () => showKeyword(node.id) }, label),
    node.aliases && node.aliases.length ? h("span", { class: "muted small" }, node.aliases.slice(0, 2).join(" · ")) : null);
  const kids = [];
  if (hasChildren && isOpen) {
    const children = await api("GET", `/api/tree/keywords/${encodeURIComponent(node.id)}/children`);
    for (const child of children.results) kids.push(await branch(child, depth + 1));
  }
  return h("div", { class: "branch" }, row, kids.length ? h("div", { class: "kids" }, kids) : null);
}

async function showKeyword(id, relation = "") {
  selected = id;
  await guard(async () => {
    const [node, path, infos] = await Promise.all([
      api("GET", `/api/tree/keywords/${encodeURIComponent(id)}`),
      api("GET", `/api/tree/keywords/${encodeURIComponent(id)}/path`),
      api("GET", `/api/tree/keywords/${encodeURIComponent(id)}/infos`, { query: { relation, size: 50 } }),
    ]);
    const relationSelect = h("select", { "data-testid": "relation-filter",
      onchange: (e) => showKeyword(id, e.target.value) },
      ["", "PRIMARY", "RELATED", "EXAMPLE", "SOURCE"].map((r) =>
        h("option", { value: r, selected: r === relation }, r ? t(`relation.${r}`) : t("tree.allRelations"))));
    fill(panes.detail,
      h("div", { class: "head" }, h("h2", { "data-testid": "keyword-name" }, id === "root" ? t("tree.root") : node.name),
        h("span", { class: "muted small mono" }, node.id, " · v", node.version)),
      h("p", { class: "crumbs" }, path.results.map((p) => p.id === "root" ? t("tree.root") : p.name).join(" › ")),
      h("dl", { class: "facts" },
        h("dt", {}, t("tree.aliases")), h("dd", {}, node.aliases.length ? chips(node.aliases) : "—"),
        h("dt", {}, t("tree.description")), h("dd", {}, node.description || "—"),
        h("dt", {}, t("tree.children")), h("dd", {}, String(node.children.length))),
      id === "root" ? null : actions(node),
      h("h3", {}, t("tree.infos"), " ", relationSelect),
      infos.results.length ? h("ul", { class: "infos", "data-testid": "infos" },
        infos.results.map((info) => h("li", {}, h("p", {}, info.content),
          h("span", { class: "muted small" }, info.source || "", " · ", when(info.created_at)))))
        : empty(t("tree.noInfos")));
  }, panes.detail);
  refreshTree();
}

function actions(node) {
  const box = h("div", { class: "form-area" });
  const bar = h("div", { class: "actions" },
    h("button", { type: "button", onclick: () => editForm(node, box), "data-testid": "kw-edit" }, t("common.edit")),
    h("button", { type: "button", onclick: () => showCreate(node.id, box), "data-testid": "kw-add-child" }, t("tree.addChild")),
    h("button", { type: "button", onclick: () => targetForm(node, box, "move"), "data-testid": "kw-move" }, t("tree.move")),
    h("button", { type: "button", onclick: () => targetForm(node, box, "merge"), "data-testid": "kw-merge" }, t("tree.merge")),
    h("button", { type: "button", class: "danger", onclick: () => remove(node), "data-testid": "kw-delete" }, t("common.delete")));
  return [bar, box];
}

function editForm(node, box) {
  const name = h("input", { value: node.name, required: true });
  const aliases = h("input", { value: node.aliases.join(", ") });
  const description = h("textarea", { rows: 3 }, node.description);
  fill(box, h("form", { class: "form", onsubmit: (e) => { e.preventDefault(); guard(async () => {
    const answer = await api("PATCH", `/api/tree/keywords/${encodeURIComponent(node.id)}`, { body: {
      version: node.version, name: name.value.trim(), description: description.value,
      aliases: aliases.value.split(/[,，]/).map((s) => s.trim()).filter(Boolean) } });
    toast(t("tree.saved", { op: answer.operation_id }));
    await afterWrite(node.id);
  }); } },
    field(t("tree.name"), name), field(t("tree.aliases"), aliases), field(t("tree.description"), description),
    h("button", { type: "submit" }, t("common.save"))));
}

function showCreate(parentId, box) {
  const where = box || panes.detail;
  const name = h("input", { required: true, "data-testid": "new-keyword-name" });
  const aliases = h("input", {});
  const description = h("textarea", { rows: 2 });
  fill(where, h("form", { class: "form", "data-testid": "new-keyword-form", onsubmit: (e) => { e.preventDefault(); guard(async () => {
    const node = await api("POST", "/api/tree/keywords", { body: {
      name: name.value.trim(), parent_id: parentId, description: description.value, auto_place: false,
      aliases: aliases.value.split(/[,，]/).map((s) => s.trim()).filter(Boolean) } });
    open.add(parentId);
    toast(t("tree.created", { name: node.name }));
    await afterWrite(node.id);
  }); } },
    h("h3", {}, t("tree.newUnder", { parent: parentId === "root" ? t("tree.root") : parentId })),
    field(t("tree.name"), name), field(t("tree.aliases"), aliases), field(t("tree.description"), description),
    h("button", { type: "submit", "data-testid": "new-keyword-submit" }, t("common.create"))));
}

function targetForm(node, box, kind) {
  const target = h("input", { required: true, placeholder: t("tree.targetPlaceholder") });
  fill(box, h("form", { class: "form row", onsubmit: (e) => { e.preventDefault(); guard(async () => {
    const id = await resolveKeyword(target.value.trim());
    const path = `/api/tree/keywords/${encodeURIComponent(node.id)}/${kind}`;
    const body = kind === "move" ? { new_parent_id: id, version: node.version } : { into: id };
    const answer = await api("POST", path, { body });
    toast(t(kind === "move" ? "tree.moved" : "tree.merged", { op: answer.operation_id }));
    open.add(id);
    await afterWrite(kind === "move" ? node.id : id);
  }); } },
    field(t(kind === "move" ? "tree.newParent" : "tree.mergeInto"), target),
    h("button", { type: "submit" }, t(kind === "move" ? "tree.move" : "tree.merge"))));
}

/** An id typed as is ("root", "sample-004") or the one keyword with that name or alias. */
async function resolveKeyword(text) {
  const found = await api("GET", "/api/tree/keywords", { query: { name: text } });
  if (found.results.length === 1) return found.results[0].id;
  if (found.results.length > 1) throw new Error(t("tree.nameAmbiguous", { name: text }));
  return text;
}

async function remove(node) {
  if (!window.confirm(t("tree.confirmDelete", { name: node.name }))) return;
  await guard(async () => {
    const answer = await api("DELETE", `/api/tree/keywords/${encodeURIComponent(node.id)}`, { query: { cascade: true } });
    toast(t("tree.deleted", { op: answer.operation_id }));
    selected = null;
    fill(panes.detail, empty(t("tree.pickKeyword")));
    await afterWrite(null);
  });
}

async function afterWrite(id) {
  await loadHistory();
  if (id) await showKeyword(id); else await refreshTree();
}

async function loadHistory() {
  await guard(async () => {
    const history = await api("GET", "/api/tree/history", { query: { limit: 15 } });
    fill(panes.history, h("h2", {}, t("tree.history")),
      history.results.length ? h("table", { class: "table" },
        h("thead", {}, h("tr", {}, [t("common.time"), t("tree.op"), t("tree.summary"), ""].map((c) => h("th", {}, c)))),
        h("tbody", {}, history.results.map((op) => h("tr", { "data-op": op.operation_id },
          h("td", { class: "nowrap" }, when(op.timestamp)), h("td", { class: "mono" }, op.op),
          h("td", {}, op.summary, op.undo_of ? h("span", { class: "muted small" }, ` (${t("tree.undoOf")} ${op.undo_of.slice(0, 8)})`) : null,
            op.principal ? h("span", { class: "muted small", "data-testid": "tree-history-by" }, ` — ${op.principal}`) : null),
          h("td", {}, op.undoable === false ? null : h("button", { type: "button", class: "secondary", "data-testid": "tree-undo",
            onclick: () => guard(async () => {
              await api("POST", "/api/tree/undo", { body: { operation_id: op.operation_id } });
              toast(t("tree.undone", { op: op.summary }));
              await afterWrite(selected);
            }) }, t("common.undo")))))))
        : empty(t("tree.noHistory")));
  }, panes.history);
}

async function search(query, useAgent) {
  if (!query.trim()) return;
  panes.search.hidden = false;
  fill(panes.search, h("p", { class: "muted" }, t("common.loading")));
  await guard(async () => {
    const result = await api("GET", "/api/tree/search", { query: { q: query, use_agent: useAgent } });
    const names = (nodes) => nodes.map((n) => n.id === "root" ? t("tree.root") : n.name).join(" › ");
    fill(panes.search,
      h("div", { class: "head" }, h("h2", {}, t("tree.searchResult")),
        h("span", { class: `status ${result.status}`, "data-testid": "tree-search-status" }, t(`status.${result.status}`))),
      h("p", {}, h("b", {}, t("tree.reason"), ": "), result.reason || "—"),
      result.node ? h("p", { "data-testid": "tree-search-hit" }, h("b", {}, t("tree.hit"), ": "),
        h("button", { type: "button", class: "link", onclick: () => { result.path.forEach((p) => open.add(p.id)); showKeyword(result.node.id); } },
          names(result.path))) : null,
      result.candidates.length ? h("p", {}, h("b", {}, t("tree.candidates"), ": "), chips(result.candidates.map((c) => c.name))) : null,
      result.suggested_name ? h("p", {}, t("tree.suggested", { name: result.suggested_name, parent: result.suggested_parent_id })) : null,
      trajectory(result.trajectory || [], result.reason));
    loadHistory();  // the agent's decisions show there as search_decision records (our own only)
  }, panes.search);
}

function trajectory(rounds, reason) {
  if (!rounds.length) {
    return h("p", { class: "muted", "data-testid": "trajectory-empty" },
      reason === "descend_cache" ? t("tree.trajectoryCached") : t("tree.noTrajectory"));
  }
  return h("ol", { class: "trajectory", "data-testid": "trajectory" }, rounds.map((round) => {
    const chosen = new Set((round.targets || []).map(String));
    return h("li", { class: "round", "data-testid": "trajectory-round" },
      h("div", { class: "head" }, h("b", {}, t("tree.round", { n: round.round })),
        h("span", { class: "mono small" }, round.task),
        round.path.length ? h("span", { class: "muted small" }, t("tree.at"), " ", round.path.join(" › ")) : null,
        round.cached ? h("span", { class: "chip" }, t("tree.cached")) : null),
      h("div", { class: "cands" }, round.candidates.map((c) => h("span", {
        class: chosen.has(String(c.idx)) ? "cand chosen" : "cand", title: (c.path || "") + (c.description ? ` — ${c.description}` : ""),
      }, `${c.idx}. ${c.name}`, c.has_children ? " ▸" : ""))),
      h("p", {}, h("b", {}, t("tree.decision"), ": "), h("span", { class: "mono", "data-testid": "trajectory-action" }, round.action || round.error || "—"),
        round.targets.length ? ` → ${round.targets.join(", ")}` : ""),
      round.reason ? h("p", { class: "small" }, h("b", {}, t("tree.reason"), ": "), round.reason) : null,
      round.error ? h("p", { class: "error small" }, round.error) : null);
  }));
}
