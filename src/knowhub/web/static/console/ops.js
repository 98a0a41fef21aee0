// Operations view: who the console acts as, server readiness, tree health and, for an
// operator, each engine's check, the snapshots and the context outbox (with requeue).
import { api, empty, fill, guard, h, pretty, state, t, toast, when } from "./core.js";

export function render(root) {
  const me = h("section", { class: "card", "data-testid": "ops-me" });
  const ready = h("section", { class: "card", "data-testid": "ops-ready" });
  const metrics = h("section", { class: "card", "data-testid": "ops-metrics" });
  const admin = h("section", { class: "card", "data-testid": "ops-admin" });
  fill(root, h("div", { class: "grid" }, admin, h("div", { class: "stack" }, ready, metrics), me));
  if (state.me) {
    const m = state.me;
    fill(me, h("h2", {}, t("ops.me")), h("dl", { class: "facts" },
      h("dt", {}, t("ops.principal")), h("dd", { class: "mono" }, m.principal),
      h("dt", {}, t("ops.memberships")), h("dd", {}, m.memberships.join(", ") || "—"),
      h("dt", {}, t("ops.adminOf")), h("dd", {}, m.admin_of.join(", ") || "—"),
      h("dt", {}, t("ops.publish")), h("dd", {}, m.publish.join(", ") || "—"),
      h("dt", {}, t("ops.treeWrite")), h("dd", {}, m.tree_write ? t("common.yes") : t("common.no")),
      h("dt", {}, t("ops.spaces")), h("dd", { class: "mono small" }, m.context.spaces.join("\n")),
      h("dt", {}, t("ops.auth")), h("dd", {}, m.keys_configured ? t("ops.keyed") : t("ops.keyless"))));
  }
  guard(async () => {
    const answer = await api("GET", "/ready");
    fill(ready, h("h2", {}, t("ops.ready")), h("p", {}, h("span", { class: "status matched" }, answer.status), " v", answer.version),
      h("p", {}, t("ops.engines"), ": ", answer.engines.join(", ")));
  }, ready);
  guard(async () => {
    const m = await api("GET", "/api/tree/metrics");
    const keys = ["nodes", "infos", "links", "leaves", "orphan_count", "max_depth", "mean_branching", "missing_description_rate"];
    fill(metrics, h("h2", {}, t("ops.treeMetrics")),
      h("dl", { class: "facts" }, keys.filter((k) => k in m).map((k) => [h("dt", { class: "mono" }, k), h("dd", {}, String(m[k]))])),
      h("details", {}, h("summary", {}, t("ops.fullReport")), pretty(m)));
  }, metrics);
  adminPanel(admin);
}

async function adminPanel(box) {
  fill(box, h("h2", {}, t("ops.admin")), h("p", { class: "muted" }, t("common.loading")));
  try {
    const [check, snapshots, outbox] = await Promise.all([
      api("GET", "/api/admin/check"), api("GET", "/api/admin/snapshots"), api("GET", "/api/admin/outbox"),
    ]);
    fill(box, h("h2", {}, t("ops.admin")),
      h("h3", {}, t("ops.check")),
      h("div", { class: "row", "data-testid": "ops-check" }, ["tree", "knowledge", "context"].filter((n) => check[n]).map((name) =>
        h("span", { class: `status ${check[name].ok ? "matched" : "not_found"}` }, `${t(`engine.${name}`)}: ${check[name].ok ? "OK" : t("ops.problems")}`))),
      h("details", {}, h("summary", {}, t("ops.fullReport")), pretty(check)),
      h("h3", {}, t("ops.snapshots")),
      snapshots.results.length ? h("ul", { class: "plain", "data-testid": "ops-snapshots" },
        snapshots.results.map((s) => h("li", { class: "mono small" }, s.name, " · ", when(s.created_at)))) : empty(t("ops.noSnapshots")),
      h("h3", {}, t("ops.outbox")),
      h("p", { "data-testid": "ops-outbox" }, ["pending", "processing", "failed", "done", "dead"].map((k) =>
        h("span", { class: "chip" }, `${k}: ${outbox.stats[k] ?? 0}`))),
      outbox.dead.length ? [
        h("table", { class: "table" }, h("tbody", {}, outbox.dead.map((e) => h("tr", {},
          h("td", { class: "mono small" }, e.event_id), h("td", { class: "small" }, e.kind || e.event_type || ""),
          h("td", { class: "mono small" }, e.uri || ""), h("td", { class: "small error" }, e.last_error || ""))))),
        h("button", { type: "button", "data-testid": "ops-requeue", onclick: () => guard(async () => {
          const done = await api("POST", "/api/admin/outbox/requeue", { body: {} });
          toast(t("ops.requeued", { n: done.requeued }));
          adminPanel(box);
        }) }, t("ops.requeue")),
      ] : empty(t("ops.noDead")));
  } catch (exc) {
    fill(box, h("h2", {}, t("ops.admin")), h("p", { class: exc.status === 403 ? "muted" : "error" },
      exc.status === 403 ? t("ops.notAdmin") : exc.message));
  }
}
