"use strict";
// sunkcheck's page: draws a `check -o json` document. The same code paints the embedded document and each one a
// live page polls. Cluster strings only ever become text nodes or attribute values (never HTML).
(function () {
  const config = JSON.parse(document.getElementById("sunkcheck-config").textContent);
  const ESCAPES = new RegExp(config.escapes, "g");
  const CONTROLS = new RegExp(config.controls, "g");
  const VERDICTS = new Map(config.verdicts.map((v) => [v.key, v]));
  const OTHER = { key: "other", label: "not feasible", glyph: "?" };
  const DENSE = 400; // a pool past this many Nodes gets smaller cells: its grid stays a few screens tall
  const app = document.getElementById("app");
  const view = { raw: null, etag: null, selected: new Map(), open: new Set() }; // kept across updates

  // text.safe: terminal escapes dropped, control and Bidi characters shown as "?"
  const clean = (s) => String(s ?? "").replace(ESCAPES, "").replace(CONTROLS, "?");

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (typeof v === "function") e.addEventListener(k, v);
      else if (k === "class") e.className = v;
      else if (k === "focus") e.dataset.focus = v;
      else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? "" : clean(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : clean(c));
    }
    return e;
  }

  const known = (status) => Object.hasOwn(config.ranks, status);
  const badge = (status) => el("span", { class: "badge s-" + (known(status) ? status : "unknown") },
    String(status).toUpperCase());
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  const rank = (status) => known(status) ? config.ranks[status] : 0;
  const where = (r) => (r.namespace ? r.namespace + "/" : "") + r.name;
  const keyOf = (r) => [r.kind, r.context || "", r.namespace, r.name].join("\u0000");
  const plural = (n, noun) => n.toLocaleString("en") + " " + noun + (n === 1 ? "" : "s");

  // render/order.py's worst_first and by_severity
  const worstFirst = (results) => [...results].sort((a, b) => rank(b.status) - rank(a.status)
    || cmp(a.context || "", b.context || "") || cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
  const bySeverity = (symptoms) => [...symptoms].sort((a, b) => (a.suppressed - b.suppressed)
    || rank(b.severity) - rank(a.severity));

  const verdictOf = (node) => node.feasible ? VERDICTS.get("feasible")
    : VERDICTS.get(firstReason(node)) || OTHER;
  function firstReason(node) { // the legend's order decides which failing check colours the Node
    const checks = new Set(node.reasons.map((x) => x.check));
    return config.verdicts.map((v) => v.key).find((k) => checks.has(k));
  }

  function header(doc) {
    const results = doc.results || [];
    const counts = new Map();
    for (const r of worstFirst(results)) counts.set(r.status, (counts.get(r.status) || 0) + 1);
    const active = results.reduce((n, r) => n + r.symptoms.filter((s) => !s.suppressed).length, 0);
    const sources = (doc.sources || []).map((s) => s.type === "live"
      ? `live, context ${s.context || "-"}, API server ${s.server || "-"}`
      : `snapshot ${s.path}` + (s.recorded ? ` recorded ${s.recorded}` : ""));
    const title = results.length ? `${plural(results.length, "target")}: ` + [...counts].map(([s, n]) => `${n} ${s}`)
      .join(", ") + `; ${plural(active, "symptom")}` : "no target checked";
    document.title = `sunkcheck ${String(doc.status).toUpperCase()}: ${clean(title)}`;
    return el("header", { class: "top" },
      el("h1", {}, badge(doc.status), el("span", { class: "wrap" }, "sunkcheck: " + title)),
      el("p", { class: "muted wrap" }, `source: ${sources.join("; ") || "-"}; checked `,
        el("span", { class: "checked-at" }, doc.checked_at || "-"), `; sunkcheck ${doc.sunkcheck || "-"}`),
      live,
      doc.prediction ? el("p", { class: "banner" }, "PREDICTION: the NodeSets of --values "
        + (doc.predicted_from || []).join(", ") + ", not deployed ones") : null,
      doc.never_converged ? el("p", { class: "banner" }, `${config.not_converged}: ${doc.never_converged}`) : null,
      doc.errors && doc.errors.length ? el("div", { class: "banner error" }, el("strong", {}, "could not check:"),
        el("ul", {}, doc.errors.map((e) => el("li", { class: "wrap" }, e)))) : null,
      results.length > 1 ? el("nav", { class: "targets", "aria-label": "Targets, worst first" },
        el("ol", {}, worstFirst(results).map((r, i) => el("li", {}, badge(r.status), " ",
          el("a", { href: "#t" + i, focus: "nav\u0000" + keyOf(r) }, `${r.kind} ${where(r)}`
            + (r.context ? ` (${r.context})` : "")), " ",
          el("span", { class: "muted" }, r.symptoms.filter((s) => !s.suppressed).map((s) => s.id).join(", ")))))) : null,
      legend());
  }

  function legend() {
    return [el("p", { class: "legend-title", id: "legend" }, "Nodes, by verdict (colour and letter):"),
      el("ul", { class: "legend", "aria-labelledby": "legend" },
      config.verdicts.map((v) => el("li", {}, el("span", { class: "node v-" + v.key, "aria-hidden": "true" }, v.glyph),
        v.label)),
      el("li", {}, el("span", { class: "node placed v-feasible", "aria-hidden": "true" }, VERDICTS.get("feasible").glyph),
        "corner dot: runs this target's Pod"))];
  }

  function target(r, i) {
    const key = keyOf(r);
    const steps = r.steps.length ? [el("h3", {}, "Runbook steps"), el("table", { class: "steps" }, el("tbody", {},
      r.steps.map((s) => el("tr", {}, el("td", {}, s.name), el("td", {}, badge(s.status)), el("td", {}, s.summary)))))] : null;
    return el("section", { class: "target", id: "t" + i, "aria-labelledby": "h" + i },
      el("h2", { id: "h" + i }, badge(r.status), el("span", {}, `${r.kind} ${where(r)}`),
        r.context ? el("span", { class: "muted" }, `context ${r.context}`) : null),
      r.steps.length ? el("p", { class: "muted wrap" },
        `Node Pool(s): ${r.pools.join(", ") || "-"} (${r.pool_source || "-"})`) : null,
      r.never_converged ? el("p", { class: "banner" }, `${config.not_converged}: ${r.never_converged}`) : null,
      symptoms(r, key), notes(r), steps, nodes(r, key));
  }

  // after the symptoms, as in the text outputs: worth knowing, never a problem (no status badge of its own)
  const notes = (r) => (r.notes || []).map((n) => el("aside", { class: "note" },
    el("h4", {}, el("span", { class: "badge s-info" }, "NOTE"), el("code", {}, n.id), el("span", {}, "(not a symptom)")),
    el("p", { class: "wrap" }, n.text),
    n.hint ? el("pre", { class: "fix" }, n.hint.split("\n").map((line) => el("span", {}, line + "\n"))) : null));

  function nodes(r, key) {
    if (!r.nodes.length) return r.steps.length ? el("p", { class: "muted" }, "No Node verdicts: no Node to judge.") : null;
    const pools = new Map(r.pools.map((p) => [p, []]));
    for (const n of r.nodes) {
      const pool = n.pool ?? "";
      if (!pools.has(pool)) pools.set(pool, []);
      pools.get(pool).push(n);
    }
    const detail = el("div", { class: "detail", "aria-live": "polite" });
    const chosen = view.selected.get(key);
    const grids = [...pools].filter(([, members]) => members.length).map(([pool, members]) => {
      const feasible = members.filter((n) => n.feasible).length;
      const name = pool ? `pool ${pool}` : "no pool label";
      const current = members.some((n) => n.name === chosen) ? chosen : members[0].name;
      const grid = el("div", { class: "grid" + (members.length > DENSE ? " dense" : ""), role: "group", "aria-label": `Nodes, ${name}` }, members.map((n) => {
        const v = verdictOf(n);
        const why = n.feasible ? v.label : n.reasons.map((x) => (VERDICTS.get(x.check) || OTHER).label)
          .filter((l, j, all) => all.indexOf(l) === j).join(", ");
        return el("button", {
          type: "button", class: `node v-${v.key}` + (n.placed ? " placed" : ""), focus: `node\u0000${key}\u0000${n.name}`,
          "aria-label": `Node ${n.name}: ${why}` + (n.placed ? "; runs this target's Pod" : ""), title: `${n.name}: ${why}`,
          "aria-pressed": n.name === chosen ? "true" : "false", tabindex: n.name === current ? "0" : "-1",
          click: () => select(r, key, n, detail), keydown: move,
        }, v.glyph);
      }));
      return [el("h3", {}, `${name}: ${feasible.toLocaleString("en")} of ${plural(members.length, "Node")} feasible`), grid];
    });
    const picked = r.nodes.find((n) => n.name === chosen);
    if (picked) show(detail, picked); else detail.append(el("p", { class: "muted" },
      "Select a Node (click, or Tab to the grid, arrow keys, Enter) to see why it is or is not feasible."));
    return [grids, detail];
  }

  function select(r, key, n, detail) {
    view.selected.set(key, n.name);
    const section = detail.parentElement;
    for (const b of section.querySelectorAll("button.node")) {
      const mine = b.dataset.focus === `node\u0000${key}\u0000${n.name}`;
      b.setAttribute("aria-pressed", mine ? "true" : "false");
    }
    show(detail, n);
  }

  function show(detail, n) {
    const v = verdictOf(n);
    detail.replaceChildren(
      el("h4", { class: "wrap" }, `Node ${n.name}`, el("span", { class: "muted" }, ` (${n.pool ? "pool " + n.pool : "no pool label"})`)),
      el("p", {}, el("span", { class: "node v-" + v.key, "aria-hidden": "true" }, v.glyph), " ",
        n.feasible ? "feasible" : "not feasible", n.placed ? "; runs this target's Pod" : "; runs no Pod of this target"),
      n.reasons.length ? el("ul", {}, n.reasons.map((x) => el("li", { class: "wrap" },
        el("strong", {}, (VERDICTS.get(x.check) || OTHER).label), ` (${x.check}): `, x.detail))) : null);
  }

  function move(event) { // arrow keys walk a grid; only one of its Nodes is a Tab stop
    const buttons = [...event.currentTarget.parentElement.children];
    const at = buttons.indexOf(event.currentTarget);
    const columns = Math.max(1, buttons.filter((b) => b.offsetTop === buttons[0].offsetTop).length);
    const to = { ArrowLeft: at - 1, ArrowRight: at + 1, ArrowUp: at - columns, ArrowDown: at + columns,
      Home: 0, End: buttons.length - 1 }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    const next = buttons[Math.min(buttons.length - 1, Math.max(0, to))];
    for (const b of buttons) b.tabIndex = b === next ? 0 : -1;
    next.focus();
  }

  function symptoms(r, key) {
    return bySeverity(r.symptoms).map((s) => {
      const shown = config.evidence_shown;
      const evidence = s.evidence.length > shown
        ? [s.evidence.slice(0, shown - 1).map(item), el("li", {}, expander(`ev\u0000${key}\u0000${s.id}`,
          `${s.evidence.length - shown + 1} more lines of evidence`, el("ul", { class: "evidence" },
            s.evidence.slice(shown - 1).map(item))))]
        : s.evidence.map(item);
      const status = el("span", { class: "copied", role: "status" });
      return el("article", { class: "symptom" + (s.suppressed ? " suppressed" : "") },
        el("h4", {}, badge(s.severity), s.suppressed ? el("span", { class: "muted" }, "(suppressed)") : null,
          el("code", {}, s.id), el("span", {}, s.title)),
        el("p", { class: "wrap" }, el("strong", {}, "Cause: "), s.cause),
        el("div", { class: "fixbar" }, el("strong", {}, "Fix:"), status),
        el("div", { class: "fix" }, fixSteps(s, key, status)),
        s.evidence.length ? [el("strong", {}, "Evidence:"), el("ul", { class: "evidence" }, evidence)] : null);
    });
  }

  // A fix as its steps (`fix_steps`, cut by the fix writers): words as text, each command and each YAML snippet a
  // block with its own copy button. One copy is one command or one snippet, never the whole fix: a fix may hold two
  // alternatives, or a command to run only once an earlier one says so.
  const NOUNS = { command: "command", yaml: "snippet" };

  function fixSteps(s, key, status) {
    const parts = s.fix_steps || [{ kind: "prose", text: s.fix }]; // a document without steps: read, never copied
    const counts = { command: 0, yaml: 0 };
    return parts.map((part) => {
      const lines = part.text.split("\n").map((line) => el("span", {}, line + "\n"));
      if (!Object.hasOwn(NOUNS, part.kind)) return el("p", { class: "step prose wrap" }, lines);
      const n = ++counts[part.kind];
      return el("div", { class: "step " + part.kind },
        el("pre", { class: "fix" }, el("code", {}, lines)),
        el("button", {
          type: "button", class: "copy", focus: `copy\u0000${key}\u0000${s.id}\u0000${part.kind}\u0000${n}`,
          "aria-label": `Copy ${NOUNS[part.kind]} ${n} of the fix of ${s.id}`,
          click: (e) => copy(part.text, status, e.currentTarget),
        }, "Copy"));
    });
  }

  const item = (line) => el("li", {}, line);

  function expander(id, label, body) {
    const d = el("details", { toggle: () => d.open ? view.open.add(id) : view.open.delete(id) },
      el("summary", { focus: "sum\u0000" + id }, label), body);
    d.open = view.open.has(id);
    return d;
  }

  async function copy(text, status, button) {
    let done = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        done = true;
      }
    } catch (e) { /* refused (no permission, no focus): the selection fallback below */ }
    if (!done) {
      const area = el("textarea", { class: "offscreen", readonly: true, "aria-hidden": "true" });
      area.value = text;
      document.body.append(area);
      area.select();
      try { done = document.execCommand("copy"); } catch (e) { done = false; }
      area.remove();
      button.focus();
    }
    status.textContent = done ? "Copied" : "Copy failed: select the text below";
  }

  // a live page: the status of the last poll, outside what each update redraws
  const live = el("p", { class: "live", role: "status" });

  function render(doc) {
    const focused = document.activeElement && document.activeElement.dataset
      ? document.activeElement.dataset.focus : undefined;
    const y = window.scrollY;
    const results = worstFirst(doc.results || []);
    app.replaceChildren(header(doc), el("main", {}, results.map(target)));
    if (focused !== undefined) {
      const again = [...app.querySelectorAll("[data-focus]")].find((e) => e.dataset.focus === focused);
      if (again) again.focus({ preventScroll: true });
    }
    window.scrollTo(0, y);
  }

  async function poll() {
    try {
      // the validator of the document drawn last: while nothing changed, serve answers 304 and sends no document
      const headers = { Accept: "application/json", ...(view.etag ? { "If-None-Match": view.etag } : {}) };
      const answer = await fetch(config.live_url, { cache: "no-store", headers });
      if (!answer.ok && answer.status !== 304) throw new Error(`HTTP ${answer.status}`);
      const raw = answer.status === 304 ? view.raw : await answer.text();
      // the verdict's time moves on while nothing changes (a quiet cluster): said beside a 304 too
      const checkedAt = answer.headers.get("Sunkcheck-Checked-At");
      if (raw !== view.raw) {
        const doc = JSON.parse(raw);
        if (!doc || typeof doc.schema !== "string" || !doc.schema.startsWith("sunkcheck/") || !Array.isArray(doc.results)) {
          throw new Error("not a sunkcheck check document");
        }
        render(doc); // throws on a document it cannot draw: the last one stays, and the next poll tries again
        view.raw = raw;
        view.etag = answer.headers.get("ETag");
        tell("live", `updated ${utcClock()}`);
      } else if (live.classList.contains("stale")) {
        tell("live", `answering again since ${utcClock()}`);
      }
      const shown = app.querySelector(".checked-at");
      if (checkedAt && shown) shown.textContent = clean(checkedAt);
    } catch (e) {
      if (!live.classList.contains("stale")) {
        tell("live stale", `STALE since ${utcClock()}: ${e.message}; showing the last answer, retrying`);
      }
    }
    setTimeout(poll, config.poll_ms);
  }

  // the time in UTC, said so: the browser's own zone is not the cluster's nor the on-call's colleague's, and the
  // document's checked_at is UTC too
  function utcClock() { return new Date().toISOString().slice(11, 19) + " UTC"; }

  function tell(state, text) { // said only when it changes: a screen reader hears news, not every poll
    live.className = state;
    live.textContent = clean(`live: reads ${config.live_url} every ${config.poll_ms / 1000} s; ${text}`);
  }

  render(JSON.parse(document.getElementById("sunkcheck-report").textContent));
  if (config.live_url) {
    tell("live", "drawn from the page itself until the first answer");
    setTimeout(poll, config.poll_ms);
  }
})();
