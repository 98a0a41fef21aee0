// Knowledge view: list and filter, search with relevance / quality / why, an item's detail
// with feedback and version history (undo), create, slim (plan then apply) and resources.
import { api, chips, csv, empty, field, fill, guard, h, pretty, state, t, tabs, toast, when } from "./core.js";

let panes = null;
let tab = "items";
const filters = { types: "", scopes: "", owner: "" };

export function render(root) {
  panes = { body: h("div", { class: "stack" }), detail: h("section", { class: "card", "data-testid": "knowledge-detail" }) };
  fill(root, h("div", { class: "split wide" },
    h("div", { class: "stack" },
      tabs([["items", t("kn.items")], ["search", t("common.search")], ["create", t("kn.create")],
        ["slim", t("kn.slim")], ["resources", t("kn.resources")]], tab, (id) => { tab = id; render(root); }, "knowledge-tabs"),
      panes.body),
    panes.detail));
  fill(panes.detail, empty(t("kn.pickItem")));
  ({ items: listView, search: searchView, create: createView, slim: slimView, resources: resourcesView })[tab]();
}

function listView() {
  const types = h("input", { value: filters.types, placeholder: "strategy, tool" });
  const scopes = h("input", { value: filters.scopes, placeholder: "public, team:x" });
  const owner = h("input", { value: filters.owner, placeholder: "user:alice" });
  const out = h("div", { "data-testid": "knowledge-list" });
  const load = () => guard(async () => {
    Object.assign(filters, { types: types.value, scopes: scopes.value, owner: owner.value.trim() });
    const found = await api("GET", "/api/knowledge", { query: { limit: 200, types: filters.types, scopes: filters.scopes } });
    const rows = found.results.filter((item) => !filters.owner || item.owner === filters.owner);
    fill(out, rows.length ? itemTable(rows, false) : empty(t("kn.none")));
  }, out);
  fill(panes.body, h("section", { class: "card" },
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); load(); } },
      field(t("kn.types"), types), field(t("kn.scopes"), scopes), field(t("kn.owner"), owner),
      h("button", { type: "submit" }, t("common.filter"))),
    h("p", { class: "muted small" }, t("kn.ownerNote")), out));
  load();
}

function itemTable(rows, isSearch) {
  const head = isSearch ? [t("kn.rank"), t("kn.task"), t("kn.relevance"), t("kn.quality"), t("kn.why")]
    : [t("kn.task"), t("kn.types"), t("kn.scopes"), t("kn.owner"), t("kn.score"), t("common.updated")];
  return h("table", { class: "table clickable" },
    h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.map((item, index) => h("tr", { "data-id": item.id, "data-testid": isSearch ? "search-hit" : "knowledge-row",
      onclick: () => showItem(item.id) },
    isSearch ? [
      h("td", {}, String(index + 1)), h("td", {}, h("b", {}, item.task), h("div", { class: "small muted clip" }, item.content)),
      h("td", { class: "num", "data-testid": "hit-relevance" }, item.relevance.toFixed(3)),
      h("td", { class: "num", "data-testid": "hit-quality" }, String(item.quality_score)),
      h("td", { class: "small", "data-testid": "hit-why" }, why(item)),
    ] : [
      h("td", {}, h("b", {}, item.task), h("div", { class: "small muted clip" }, item.content)),
      h("td", {}, chips(item.types)), h("td", {}, chips(item.scopes, "chip scope")),
      h("td", { class: "mono small nowrap" }, item.owner), h("td", { class: "num" }, String(item.eval.score)),
      h("td", { class: "nowrap small" }, when(item.updated_at)),
    ]))));
}

/** The ranking stage's reasons for one hit, in the order they were applied. */
function why(hit) {
  const w = hit.why;
  if (!w) return "—";
  const q = w.quality;
  return h("span", {},
    w.relevance_tier !== undefined ? t("kn.whyTier", { n: w.relevance_tier }) + "; " : "",
    t("kn.whyQuality", { q: w.quality_score, score: q.score, helpful: q.helpful, harmful: q.harmful }), "; ",
    t("kn.whyScope", { scope: w.scope || "—" }), "; ",
    w.user_profile_first ? t("kn.whyProfile") + "; " : "",
    t("kn.whyRoute", { n: w.route_rank + 1 }));
}

function searchView() {
  const query = h("input", { type: "search", required: true, "data-testid": "knowledge-search-input" });
  const minScore = h("input", { type: "number", min: 0, max: 5, value: 0 });
  const topK = h("input", { type: "number", min: 1, max: 100, value: 10 });
  const types = h("input", { placeholder: "strategy, tool" });
  const out = h("div", { "data-testid": "knowledge-search-result" });
  fill(panes.body, h("section", { class: "card" },
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); guard(async () => {
      const found = await api("GET", "/api/knowledge/search", { query: {
        q: query.value, min_score: minScore.value, top_k: topK.value, types: types.value } });
      fill(out, found.results.length ? [h("p", { class: "muted small" }, t("kn.rankingRule")), itemTable(found.results, true)]
        : empty(t("kn.noHits")));
    }, out); } },
      field(t("common.query"), query), field(t("kn.minScore"), minScore), field("top_k", topK), field(t("kn.types"), types),
      h("button", { type: "submit", "data-testid": "knowledge-search-button" }, t("common.search"))), out));
}

function createView() {
  const task = h("input", { required: true, "data-testid": "kn-task" });
  const content = h("textarea", { rows: 4, required: true, "data-testid": "kn-content" });
  const types = h("input", { value: "strategy", "data-testid": "kn-types" });
  const scopes = h("input", { value: state.me ? state.me.principal : "", "data-testid": "kn-scopes" });
  const score = h("input", { type: "number", min: 1, max: 5, value: 4 });
  fill(panes.body, h("section", { class: "card" }, h("h2", {}, t("kn.create")),
    h("form", { class: "form", onsubmit: (e) => { e.preventDefault(); guard(async () => {
      const item = await api("POST", "/api/knowledge", { body: { task: task.value, content: content.value,
        types: csv(types.value), scopes: csv(scopes.value), score: Number(score.value) } });
      toast(t("kn.created", { id: item.id }));
      showItem(item.id);
    }); } },
      field(t("kn.task"), task), field(t("kn.content"), content), field(t("kn.types"), types),
      field(t("kn.scopes"), scopes), field(t("kn.score"), score),
      h("button", { type: "submit", "data-testid": "kn-create-submit" }, t("common.create")))));
}

async function showItem(id) {
  await guard(async () => {
    const [item, history] = await Promise.all([
      api("GET", `/api/knowledge/${encodeURIComponent(id)}`),
      api("GET", `/api/knowledge/${encodeURIComponent(id)}/history`),
    ]);
    const note = h("input", { placeholder: t("kn.caseNote"), "data-testid": "feedback-note" });
    const feedback = (helpful) => guard(async () => {
      const key = helpful ? "add_helpful_case" : "add_harmful_case";
      await api("PUT", `/api/knowledge/${encodeURIComponent(id)}`, { body: { [key]: { note: note.value || (helpful ? "helpful" : "harmful") } } });
      toast(t(helpful ? "kn.markedHelpful" : "kn.markedHarmful"));
      await showItem(id);
    });
    const cases = [...item.eval.helpful_history.map((c) => ["+", c]), ...item.eval.harmful_history.map((c) => ["−", c])]
      .sort((a, b) => String(b[1].timestamp).localeCompare(String(a[1].timestamp)));
    fill(panes.detail,
      h("div", { class: "head" }, h("h2", { "data-testid": "item-task" }, item.task), h("span", { class: "mono small muted" }, item.id, " · v", item.version)),
      h("p", { class: "content" }, item.content),
      h("dl", { class: "facts" },
        h("dt", {}, t("kn.types")), h("dd", {}, chips(item.types)),
        h("dt", {}, t("kn.scopes")), h("dd", {}, chips(item.scopes, "chip scope")),
        h("dt", {}, t("kn.owner")), h("dd", { class: "mono" }, item.owner),
        h("dt", {}, t("kn.eval")), h("dd", { "data-testid": "item-eval" },
          t("kn.evalLine", { score: item.eval.score, helpful: item.eval.helpful, harmful: item.eval.harmful })),
        h("dt", {}, t("kn.tags")), h("dd", {}, Object.entries(item.tags || {}).map(([k, v]) => h("span", { class: "chip" }, `${k}: ${v}`))),
        item.resource_ids.length ? [h("dt", {}, t("kn.resources")), h("dd", {}, chips(item.resource_ids))] : null),
      h("div", { class: "row" }, note,
        h("button", { type: "button", "data-testid": "feedback-helpful", onclick: () => feedback(true) }, "+ ", t("kn.helpful")),
        h("button", { type: "button", class: "danger", "data-testid": "feedback-harmful", onclick: () => feedback(false) }, "− ", t("kn.harmful"))),
      h("h3", {}, t("kn.feedbackHistory")),
      cases.length ? h("ul", { class: "plain", "data-testid": "feedback-history" }, cases.map(([sign, c]) =>
        h("li", {}, h("b", { class: sign === "+" ? "good" : "bad" }, sign), " ", when(c.timestamp), " ",
          JSON.stringify(Object.fromEntries(Object.entries(c).filter(([k]) => k !== "timestamp"))))))
        : empty(t("kn.noFeedback")),
      h("h3", {}, t("kn.versions")),
      history.results.length ? h("table", { class: "table", "data-testid": "version-history" },
        h("thead", {}, h("tr", {}, [t("kn.version"), t("kn.kind"), t("common.time"), t("kn.by"), ""].map((c) => h("th", {}, c)))),
        h("tbody", {}, history.results.map((change) => h("tr", {},
          h("td", {}, `v${change.version}`), h("td", {}, change.kind), h("td", { class: "nowrap small" }, when(change.timestamp)),
          h("td", { class: "mono small" }, change.principal),
          h("td", {}, h("button", { type: "button", class: "secondary", "data-testid": "knowledge-undo",
            onclick: () => guard(async () => {
              await api("POST", "/api/knowledge/undo", { body: { change_id: change.change_id } });
              toast(t("kn.undone", { v: change.version }));
              await showItem(id);
            }) }, t("kn.restore", { v: change.version }))))))) : empty(t("kn.noVersions")),
      h("div", { class: "actions" }, h("button", { type: "button", class: "danger", onclick: () => guard(async () => {
        if (!window.confirm(t("kn.confirmDelete"))) return;
        await api("DELETE", `/api/knowledge/${encodeURIComponent(id)}`);
        toast(t("kn.deleted"));
        fill(panes.detail, empty(t("kn.pickItem")));
      }) }, t("common.delete"))));
  }, panes.detail);
}

function slimView() {
  const out = h("div", { "data-testid": "slim-result" });
  const plan = () => guard(async () => {
    const result = await api("POST", "/api/knowledge/slim", { body: { apply: false } });
    fill(out, h("p", {}, t("kn.slimScanned", { n: result.scanned, clusters: result.clusters.length })),
      result.clusters.length ? [
        h("ol", { class: "plain" }, result.clusters.map((cluster) => h("li", { class: "card inner" }, pretty(cluster)))),
        h("button", { type: "button", "data-testid": "slim-apply", onclick: () => guard(async () => {
          const applied = await api("POST", "/api/knowledge/slim", { body: { apply: true, plan_id: result.plan_id } });
          toast(t("kn.slimApplied", { n: applied.merged_away }));
          fill(out, h("p", {}, t("kn.slimApplied", { n: applied.merged_away })), pretty(applied));
        }) }, t("kn.slimApply")),
      ] : empty(t("kn.slimNothing")));
  }, out);
  fill(panes.body, h("section", { class: "card" }, h("h2", {}, t("kn.slim")), h("p", { class: "muted" }, t("kn.slimHelp")),
    h("button", { type: "button", "data-testid": "slim-plan", onclick: plan }, t("kn.slimPlan")), out));
}

function resourcesView() {
  const out = h("div", { "data-testid": "resource-list" });
  fill(panes.body, h("section", { class: "card" }, h("h2", {}, t("kn.resources")), out));
  guard(async () => {
    const found = await api("GET", "/api/resource", { query: { limit: 200 } });
    fill(out, found.results.length ? h("table", { class: "table clickable" },
      h("thead", {}, h("tr", {}, [t("kn.resourceId"), t("kn.title"), t("kn.scopes"), t("kn.owner")].map((c) => h("th", {}, c)))),
      h("tbody", {}, found.results.map((res) => h("tr", { onclick: () => showResource(res.id), "data-testid": "resource-row" },
        h("td", { class: "mono" }, res.id), h("td", {}, res.title), h("td", {}, chips(res.scopes, "chip scope")),
        h("td", { class: "mono small" }, res.owner))))) : empty(t("kn.noResources")));
  }, out);
}

async function showResource(id) {
  const path = `/api/resource/${id.split("/").map(encodeURIComponent).join("/")}`;
  await guard(async () => {
    const res = await api("GET", path);
    const secret = h("div", { class: "row" }, h("span", { class: "masked", "data-testid": "secure-body-masked" }, "••••••••"),
      h("button", { type: "button", "data-testid": "reveal-secret", onclick: async () => {
        try {
          const full = await api("GET", path, { query: { include_secure: true } });
          fill(secret, h("pre", { class: "json secret", "data-testid": "secure-body" }, full.secure_body ?? "—"));
        } catch (exc) {
          secret.append(h("p", { class: "error", "data-testid": "reveal-denied" }, t("kn.revealDenied", { message: exc.message })));
        }
      } }, t("kn.reveal")));
    fill(panes.detail,
      h("div", { class: "head" }, h("h2", {}, res.title || res.id), h("span", { class: "mono small muted" }, res.id)),
      h("dl", { class: "facts" },
        h("dt", {}, t("kn.contentType")), h("dd", {}, res.content_type || "—"),
        h("dt", {}, t("kn.scopes")), h("dd", {}, chips(res.scopes, "chip scope")),
        h("dt", {}, t("kn.owner")), h("dd", { class: "mono" }, res.owner)),
      h("h3", {}, t("kn.body")), h("pre", { class: "json" }, res.body || "—"),
      h("h3", {}, t("kn.secureBody")), secret);
  }, panes.detail);
}
