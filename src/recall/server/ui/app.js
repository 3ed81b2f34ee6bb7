// recall inspector: pages built from the REST API. Stored text only ever becomes DOM text
// (el() turns strings into text nodes), never HTML, so nothing stored can inject markup.
"use strict";

const KEY = "recall-api-key";
const SECTION_COLORS = {
  system_prompt: "#7a8699", memory: "#2f6fd6", long_term: "#7b5cd6", recalled: "#b35cd6",
  observations: "#d6a12f", summary: "#8a8a2f", history: "#1f8a4c", incoming: "#d65c2f",
};

// -- DOM and API helpers ------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    // Styles through the CSSOM: the page's Content-Security-Policy forbids inline style text.
    else if (name === "style") Object.assign(node.style, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const main = () => document.getElementById("main");
const enc = encodeURIComponent;

class ApiError extends Error {}

async function api(method, path, body) {
  const headers = { "content-type": "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.authorization = `Bearer ${key}`;
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 401) {
    showLogin(key ? "That key was refused." : "This server needs an API key.");
    throw new ApiError("authentication required");
  }
  const data = response.headers.get("content-type")?.includes("json") ? await response.json() : {};
  if (!response.ok) throw new ApiError(data?.error?.message || data?.detail || `HTTP ${response.status}`);
  return data;
}

function showLogin(why) {
  const form = el("form", { class: "card", id: "login", onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, form.elements.key.value.trim());
    location.reload();
  } },
    el("h1", {}, "API key"),
    el("p", { class: "muted" }, why, " It is kept for this browser session only."),
    el("div", { class: "inline" }, el("input", { name: "key", type: "password", placeholder: "key", size: 40, autofocus: true }),
       " ", el("button", { type: "submit" }, "Use key")));
  main().replaceChildren(form);
}

function crumbs(...parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.flatMap((p, i) => [i ? " / " : "", p.href ? el("a", { href: p.href }, p.text) : el("span", {}, p.text)]));
}

function fail(error) {
  if (error instanceof ApiError && error.message === "authentication required") return;
  main().append(el("p", { class: "error", role: "alert" }, String(error.message || error)));
}

function when(iso) {
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

function badge(kind) { return el("span", { class: `badge ${kind}` }, kind); }

function highlighted(text, query) {
  // <mark> around every query word, built as DOM nodes (the text stays text).
  const words = (query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) || []).filter((w) => w.length > 1);
  if (!words.length) return [text];
  const pattern = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`, "giu");
  return text.split(pattern).map((part, i) => (i % 2 ? el("mark", {}, part) : part));
}

// -- pages ----------------------------------------------------------------------------------

async function worldsPage() {
  crumbs({ text: "worlds" });
  const [{ worlds }, scopes] = await Promise.all([api("GET", "/v1/worlds"), api("GET", "/v1/scopes").catch(() => ({ scopes: [] }))]);
  main().replaceChildren(
    el("h1", {}, "Worlds"),
    worlds.length
      ? el("ul", { class: "plain card", id: "worlds" }, worlds.map((w) =>
          el("li", {}, el("a", { href: `/ui/worlds/${enc(w.id)}` }, w.name || w.id), " ", el("span", { class: "muted" }, w.id))))
      : el("p", { class: "muted" }, "No worlds yet."),
    el("h2", {}, "Facts by scope"),
    el("ul", { class: "plain card", id: "scopes" }, (scopes.scopes || []).map((s) => {
      const scope = typeof s === "string" ? s : s.scope;
      return el("li", {}, el("a", { href: `/ui/scopes/${enc(scope)}` }, scope), typeof s === "string" ? "" : el("span", { class: "muted" }, ` ${s.facts} facts`));
    })),
  );
}

function messageRow(m) {
  const delivered = m.delivered_to || [];
  const responders = new Set(m.would_respond || []);
  return el("div", { class: "msg", dataset: { id: m.id } },
    el("div", { class: "meta" }, `#${m.id} `, el("strong", {}, m.sender), badge(m.sender_type),
       m.chat_id ? ` · chat ${m.chat_id}` : "", " · ", when(m.created_at),
       m.parent_id ? ` · reply to #${m.parent_id}` : ""),
    el("div", { class: "content" }, m.content || (m.metadata?.tool_calls ? "(tool calls)" : "")),
    el("div", { class: "meta" },
       m.mentions?.length ? `mentions: ${m.mentions.map((x) => "@" + x).join(" ")} · ` : "",
       "delivered to: ", delivered.length ? delivered.map((a, i) => [i ? ", " : "",
         responders.has(a) ? el("span", { class: "responds", title: "would respond" }, `${a} ✓`) : a]) : "nobody"));
}

async function worldPage(worldId) {
  const world = await api("GET", `/v1/worlds/${enc(worldId)}`);
  crumbs({ text: "worlds", href: "/ui/" }, { text: world.id });
  const agents = world.agents || [];
  const humans = world.humans || [];
  const timeline = el("div", { class: "card", id: "timeline" });
  const senders = el("select", { name: "sender" }, [...humans.map((h) => h.id ?? h), "world", "system"].map((s) => el("option", { value: s }, s)));
  const status = el("span", { class: "muted", role: "status" });
  const form = el("form", { class: "card", id: "post-form", onsubmit: async (e) => {
    e.preventDefault();
    const body = { sender: senders.value, content: form.elements.content.value };
    if (form.elements.chat.value.trim()) body.chat_id = form.elements.chat.value.trim();
    try {
      await api("POST", `/v1/worlds/${enc(world.id)}/messages`, body);
      form.elements.content.value = "";
      status.textContent = "posted";
      await poll();
    } catch (error) { status.textContent = String(error.message); }
  } },
    el("div", { class: "inline" }, "as ", senders, " in chat ", el("input", { name: "chat", placeholder: "(default)", size: 12 })),
    el("textarea", { name: "content", required: true, placeholder: "Message (@agent to address one)" }),
    el("div", { class: "inline" }, el("button", { type: "submit" }, "Post"), status));
  main().replaceChildren(
    el("h1", {}, world.name || world.id),
    el("div", { class: "cols" },
      el("div", {},
        el("div", { class: "card" }, el("h2", {}, "Agents"), el("ul", { class: "plain", id: "agents" }, agents.map((a) => {
          const id = a.id ?? a;
          return el("li", {}, el("a", { href: `/ui/worlds/${enc(world.id)}/agents/${enc(id)}` }, id),
                    " · ", el("a", { href: `/ui/scopes/${enc(`agent:${world.id}/${id}`)}`, class: "muted" }, "facts"));
        })),
          el("h2", {}, "Humans"), el("ul", { class: "plain" }, humans.map((h) => {
            const id = h.id ?? h;
            return el("li", {}, id, " · ", el("a", { href: `/ui/scopes/${enc(`user:${id}`)}`, class: "muted" }, "facts"));
          })),
          el("h2", {}, "Chats"), el("ul", { class: "plain" }, (world.chats || []).map((c) =>
            el("li", {}, c.id ?? "(default)", el("span", { class: "muted" }, ` ${c.messages} messages`)))),
          el("p", {}, el("a", { href: `/ui/worlds/${enc(world.id)}/search` }, "Search this world"))),
      ),
      el("div", {}, form, el("h2", {}, "Timeline ", el("span", { class: "muted" }, "(live)")), timeline)));
  let after = 0;
  async function poll() {
    for (;;) {
      const page = await api("GET", `/v1/worlds/${enc(world.id)}/messages?all_chats=true&detail=true&limit=500&after=${after}`);
      for (const m of page.messages) { timeline.append(messageRow(m)); after = m.id; }
      if (!page.next_after) break;
    }
  }
  await poll();
  setInterval(() => poll().catch(() => {}), 1000);
}

async function agentPage(worldId, agentId) {
  const world = await api("GET", `/v1/worlds/${enc(worldId)}`);
  crumbs({ text: "worlds", href: "/ui/" }, { text: world.id, href: `/ui/worlds/${enc(world.id)}` }, { text: agentId });
  // ?depth=&budget=&chat= preset the view, so a view can be shared as a link.
  const params = new URLSearchParams(location.search);
  const chosen = Number(params.get("depth")) || 25;
  const depth = el("select", { name: "depth", id: "depth" }, [10, 25, 50, 100].map((n) => el("option", { value: n, selected: n === chosen }, n)));
  const budget = el("input", { name: "budget", id: "budget", type: "number", min: 1, placeholder: "model default", size: 10, value: params.get("budget") });
  const chatIds = (world.chats || []).map((c) => c.id);
  if (!chatIds.includes(null)) chatIds.unshift(null);
  const chat = el("select", { name: "chat", id: "chat" }, chatIds.map((c) => el("option", { value: c ?? "", selected: (c ?? "") === (params.get("chat") || "") }, c ?? "(default)")));
  const view = el("div", { id: "context" });
  const controls = el("form", { class: "card inline", id: "controls", onsubmit: (e) => { e.preventDefault(); render(); } },
    "Memory Depth ", depth, " Budget ", budget, " Chat ", chat, el("button", { type: "submit" }, "Rebuild"));
  depth.addEventListener("change", () => render());
  chat.addEventListener("change", () => render());
  const inbox = el("div", { class: "card", id: "inbox" });
  const callsLink = el("p", {}, el("a", { href: `/ui/worlds/${enc(world.id)}/agents/${enc(agentId)}/calls`, id: "calls-link" },
    "Model calls: what this agent's model was sent"));
  main().replaceChildren(el("h1", {}, `What ${agentId}'s model gets`), callsLink, controls, view,
                         el("h2", {}, "Inbox"), inbox);

  async function render() {
    const body = { history_limit: Number(depth.value), format: "openai" };
    if (budget.value) body.max_tokens = Number(budget.value);
    if (chat.value) body.chat_id = chat.value;
    let ctx;
    try {
      ctx = await api("POST", `/v1/worlds/${enc(world.id)}/agents/${enc(agentId)}/context`, body);
    } catch (error) {
      view.replaceChildren(el("p", { class: "error", role: "alert" }, String(error.message)));
      return;
    }
    const all = await api("GET", `/v1/worlds/${enc(world.id)}/messages?all_chats=true&limit=1000`);
    const byId = new Map(all.messages.map((m) => [m.id, m]));
    view.replaceChildren(budgetBar(ctx.report), contextCard(ctx), recalledCard(ctx.report, byId), await factsCard(ctx.report),
      candidatesCard(ctx.report, byId));
  }

  async function renderInbox() {
    const data = await api("GET", `/v1/worlds/${enc(world.id)}/agents/${enc(agentId)}/deliveries?limit=500`);
    const unread = data.messages.filter((m) => !m.read);
    const read = data.messages.filter((m) => m.read);
    inbox.replaceChildren(
      el("div", { class: "section-label" }, `unread (${unread.length})`),
      ...unread.map((m) => el("div", { class: "msg unread" }, el("span", { class: "meta" }, `#${m.id} ${m.sender}: `), m.content)),
      el("div", { class: "section-label" }, `read (${read.length})`),
      ...read.slice(-50).map((m) => el("div", { class: "msg excluded" }, el("span", { class: "meta" }, `#${m.id} ${m.sender}: `), m.content)));
  }

  await Promise.all([render(), renderInbox()]);
}

function budgetBar(report) {
  const total = Math.max(report.budget, 1);
  const bar = el("div", { class: "bar", title: `${report.total_tokens} of ${report.budget} tokens` },
    Object.entries(report.sections).filter(([, n]) => n > 0).map(([section, n]) =>
      el("span", { style: { width: `${Math.min(100, (100 * n) / total)}%`, background: SECTION_COLORS[section] || "#999" }, title: `${section}: ${n}` })));
  return el("div", { class: "card", id: "budget-card" },
    el("div", {}, el("strong", { id: "total-tokens" }, `${report.total_tokens}`),
       ` of ${report.budget} tokens (${((100 * report.total_tokens) / total).toFixed(1)} % of the budget, ${report.encoding}) · history limit ${report.history_limit} · filter ${report.context_filter}`),
    bar,
    el("table", { id: "sections" }, el("tr", {}, el("th", {}, "section"), el("th", { class: "num" }, "tokens")),
      Object.entries(report.sections).map(([section, n]) => el("tr", {}, el("td", {}, section), el("td", { class: "num" }, n)))),
    report.notes.map((note) => el("p", { class: "muted" }, "note: ", note)));
}

function sectionOfEach(ctx) {
  // The builder's output order: the system prompt, one message per non-empty block, the
  // summary, the history, the incoming messages; the report says how many of each.
  const { sections, items, incoming_count: incoming } = ctx.report;
  const labels = ["system_prompt"];
  for (const section of ["memory", "long_term", "recalled", "observations", "summary"]) {
    if (sections[section] > 0) labels.push(section);
  }
  const history = items.filter((i) => i.kind === "message" && i.included && i.section === "history").length;
  labels.push(...Array(history).fill("history"), ...Array(incoming).fill("incoming"));
  return labels;
}

function contextCard(ctx) {
  const labels = sectionOfEach(ctx);
  return el("div", { class: "card", id: "model-input" }, el("h2", {}, `Model input (${ctx.messages.length} messages)`),
    ctx.messages.map((m, i) => el("div", { class: "msg", dataset: { role: m.role, section: labels[i] || "" } },
      el("span", { class: "section-label", style: { color: SECTION_COLORS[labels[i]] || "inherit" } }, labels[i] || ""), " ",
      el("span", { class: "role" }, m.role), m.name ? el("span", { class: "muted" }, ` (${m.name})`) : "",
      el("pre", { class: "block" }, typeof m.content === "string" ? m.content : JSON.stringify(m.content)))));
}

async function factsCard(report) {
  const facts = report.items.filter((i) => i.kind === "fact");
  if (!facts.length) return el("div", { class: "card", id: "facts" }, el("h2", {}, "Facts"), el("p", { class: "muted" }, "No facts for this conversation."));
  const scopes = [...new Set(facts.map((f) => f.scope))];
  const lists = await Promise.all(scopes.map((s) => api("GET", `/v1/scopes/${enc(s)}/facts`).catch(() => ({ facts: [] }))));
  const content = new Map(lists.flatMap((l) => l.facts).map((f) => [f.id, f]));
  return el("div", { class: "card", id: "facts" }, el("h2", {}, "Facts, ranked"),
    el("table", {}, el("tr", {}, ["fact", "scope", "score", "similarity", "confidence", ""].map((h) => el("th", {}, h))),
      facts.map((f) => el("tr", { class: f.included ? "" : "excluded" },
        el("td", {}, content.get(f.id)?.content ?? `#${f.id}`), el("td", {}, el("a", { href: `/ui/scopes/${enc(f.scope)}` }, f.scope)),
        el("td", { class: "num" }, f.score), el("td", { class: "num" }, f.similarity ?? "–"), el("td", { class: "num" }, f.confidence),
        el("td", {}, f.included ? "in the block" : el("span", { class: "reason" }, "did not fit"))))));
}


// An included message in the report: its section and tokens, and why it is there (the recent
// window, or its rank in the pool) and whether it is shown as an excerpt.
function included(i) {
  const why = [i.section];
  if (i.reason) why.push(i.reason);
  if (i.rank !== undefined) why.push(`rank ${i.rank}`);
  if (i.excerpt) why.push("excerpt");
  return `${why.join(" · ")} · ${i.tokens} tok`;
}

function recalledCard(report, byId) {
  // The recalled past: each passage with its rank and the search's scores, the turn a short
  // passage brought along, and each candidate left out with its reason.
  const items = report.items.filter((i) => i.kind === "message" && i.section === "recalled");
  const card = el("div", { class: "card", id: "recalled" }, el("h2", {}, `Recalled past (${report.sections.recalled || 0} tokens)`));
  if (!items.length) return el("div", { class: "card", id: "recalled" }, el("h2", {}, "Recalled past"), el("p", { class: "muted" }, "Nothing recalled for this context."));
  const shown = (value) => (value === undefined || value === null ? "–" : String(value));
  const status = (i) => {
    if (!i.included) return el("span", { class: "reason" }, i.reason);
    if (i.neighbour_of) return `in, the turn before #${i.neighbour_of}`;
    return i.excerpt ? "in (excerpt)" : "in";
  };
  card.append(el("table", { id: "recalled-table" },
    el("tr", {}, ["rank", "passage", "message", "chat", "score", "keyword", "similarity", "time", "tokens", ""].map((h) => el("th", {}, h))),
    items.map((i) => el("tr", { class: i.included ? "" : "excluded", dataset: { id: i.id, reason: i.reason || "" } },
      el("td", { class: "num" }, shown(i.rank)), el("td", { class: "num" }, shown(i.passage)),
      el("td", { class: "content" }, el("strong", {}, i.sender || ""), ": ", byId.get(i.id)?.content ?? `#${i.id}`),
      el("td", {}, i.chat_id ?? "(default)"),
      ["score", "keyword", "similarity", "time"].map((name) => el("td", { class: "num" }, shown(i[name]))),
      el("td", { class: "num" }, i.included ? i.tokens : "–"), el("td", {}, status(i))))));
  return card;
}

function candidatesCard(report, byId) {
  const items = report.items.filter((i) => i.kind === "message" && i.section !== "recalled");
  const history = items.filter((i) => i.included && i.section === "history").length;
  const excluded = Object.entries(report.excluded).map(([reason, n]) => `${reason} ${n}`).join(", ");
  return el("div", { class: "card", id: "candidates" },
    el("h2", {}, "Conversation as this agent heard it"),
    el("p", { class: "muted", id: "history-count" }, `${history} history messages, ${report.incoming_count} incoming; excluded: ${excluded || "none"}`),
    items.map((i) => {
      const m = byId.get(i.id);
      return el("div", { class: `msg ${i.included ? "included" : "excluded"}`, dataset: { id: i.id, section: i.section || "", reason: i.reason || "" } },
        el("div", { class: "meta" }, `#${i.id} `, el("strong", {}, i.sender || m?.sender || ""),
           i.included ? el("span", { class: "badge" }, included(i)) : el("span", { class: "reason" }, i.reason)),
        el("div", { class: "content" }, m ? m.content : ""));
    }));
}

async function scopePage(scope) {
  crumbs({ text: "worlds", href: "/ui/" }, { text: `facts of ${scope}` });
  const data = await api("GET", `/v1/scopes/${enc(scope)}/facts`);
  const filter = el("input", { id: "fact-filter", type: "search", placeholder: "search facts", size: 30 });
  const table = el("table", { id: "facts-table" });
  const categories = ["preference", "knowledge", "context", "behavior", "goal", "correction"];
  const path = (id) => `/v1/scopes/${enc(data.scope)}/facts${id ? "/" + id : ""}`;

  function row(f) {
    const tr = el("tr", { dataset: { id: f.id } },
      el("td", { class: "content" }, f.content), el("td", {}, f.category), el("td", { class: "num" }, f.confidence.toFixed(2)),
      el("td", { class: "muted" }, when(f.updated_at || f.created_at)),
      el("td", {}, el("button", { type: "button", class: "secondary", onclick: () => tr.replaceWith(editor(f)) }, "Edit"), " ",
         el("button", { type: "button", class: "secondary", onclick: async () => {
           if (!confirm(`Delete "${f.content}"?`)) return;
           await api("DELETE", path(f.id)); tr.remove();
         } }, "Delete")));
    return tr;
  }

  function editor(f) {
    const content = el("input", { name: "content", value: f.content, size: 50 });
    const category = el("select", { name: "category" }, categories.map((c) => el("option", { value: c, selected: c === f.category }, c)));
    const confidence = el("input", { name: "confidence", type: "number", min: 0, max: 1, step: 0.05, value: f.confidence });
    const message = el("span", { class: "error" });
    const tr = el("tr", { class: "editing", dataset: { id: f.id } },
      el("td", {}, content), el("td", {}, category), el("td", {}, confidence), el("td", {}),
      el("td", {}, el("button", { type: "button", onclick: async () => {
        try {
          const updated = await api("PATCH", path(f.id), { content: content.value, category: category.value, confidence: Number(confidence.value) });
          tr.replaceWith(row(updated));
        } catch (error) { message.textContent = String(error.message); }
      } }, "Save"), " ", el("button", { type: "button", class: "secondary", onclick: () => tr.replaceWith(row(f)) }, "Cancel"), message));
    return tr;
  }

  table.append(el("tr", {}, ["fact", "category", "confidence", "updated", ""].map((h) => el("th", {}, h))), ...data.facts.map(row));
  filter.addEventListener("input", () => {
    const q = filter.value.toLowerCase();
    for (const tr of table.querySelectorAll("tr[data-id]")) tr.hidden = q && !tr.textContent.toLowerCase().includes(q);
  });
  const add = el("form", { class: "inline", id: "add-fact", onsubmit: async (e) => {
    e.preventDefault();
    const created = await api("POST", path(), { content: add.elements.content.value, category: add.elements.category.value, confidence: Number(add.elements.confidence.value) });
    table.append(row(created)); add.reset();
  } }, el("input", { name: "content", placeholder: "new fact", size: 40, required: true }),
     el("select", { name: "category" }, categories.map((c) => el("option", { value: c }, c))),
     el("input", { name: "confidence", type: "number", min: 0, max: 1, step: 0.05, value: 0.9 }), el("button", { type: "submit" }, "Add"));
  main().replaceChildren(el("h1", {}, `Facts of ${data.scope}`),
    Object.keys(data.sections || {}).length
      ? el("div", { class: "card" }, Object.entries(data.sections).map(([name, text]) => el("div", {}, el("div", { class: "section-label" }, name), el("p", {}, text))))
      : "",
    el("div", { class: "card" }, el("div", { class: "inline" }, filter), table), el("div", { class: "card" }, add));
}

// Why a hit ranks where it does: its place in each method's list, its similarity, what ran.
function whyFound(r) {
  const parts = [`${r.method}`];
  parts.push(r.keyword_rank == null ? "keywords: –" : `keywords #${r.keyword_rank}`);
  parts.push(r.vector_rank == null ? "vector: –" : `vector #${r.vector_rank}`);
  if (r.similarity != null) parts.push(`similarity ${Number(r.similarity).toFixed(3)}`);
  return parts.join(" · ");
}

async function searchPage(worldId) {
  crumbs({ text: "worlds", href: "/ui/" }, { text: worldId, href: `/ui/worlds/${enc(worldId)}` }, { text: "search" });
  const params = new URLSearchParams(location.search);
  const input = el("input", { name: "q", type: "search", value: params.get("q") || "", size: 50, placeholder: "search messages, memories and facts" });
  const method = el("select", { name: "method" }, ["hybrid", "bm25", "vector"].map((m) => el("option", { value: m, selected: m === (params.get("method") || "hybrid") }, m)));
  const results = el("div", { id: "results" });
  main().replaceChildren(el("h1", {}, `Search ${worldId}`),
    el("form", { class: "card inline", method: "get" }, input, method, el("button", { type: "submit" }, "Search")), results);
  const query = input.value.trim();
  if (!query) return;
  const data = await api("POST", `/v1/worlds/${enc(worldId)}/search`, { query, k: 20, method: method.value });
  results.replaceChildren(el("div", { class: "card" }, data.results.length ? data.results.map((r) =>
    el("div", { class: "msg hit" },
      el("div", { class: "meta" }, badge(r.kind), ` score ${Number(r.score).toFixed(4)} · `, r.sender ? `${r.sender} · ` : "", when(r.created_at)),
      el("div", { class: "meta why" }, whyFound(r)),
      el("div", { class: "content" }, highlighted(r.text, query)))) : el("p", { class: "muted" }, "Nothing found.")));
}

// -- recorded model calls -----------------------------------------------------------------

function outcome(call) {
  // What its caller reported: an outage stands out in the timeline, the world never hears it.
  if (call.outcome === "failed") return el("span", { class: "reason outcome-failed", title: call.error ?? "" }, `model failed: ${call.error ?? ""}`);
  return call.outcome ?? "–";
}

async function callsPage(worldId, agentId) {
  // The agent's model calls, newest first: open one, or tick two and compare them.
  const base = `/v1/worlds/${enc(worldId)}/agents/${enc(agentId)}`;
  const page = `/ui/worlds/${enc(worldId)}/agents/${enc(agentId)}/calls`;
  crumbs({ text: "worlds", href: "/ui/" }, { text: worldId, href: `/ui/worlds/${enc(worldId)}` },
         { text: agentId, href: `/ui/worlds/${enc(worldId)}/agents/${enc(agentId)}` }, { text: "calls" });
  const { calls } = await api("GET", `${base}/calls?limit=200`);
  const compare = el("button", { type: "submit", id: "compare", disabled: true }, "Compare the two ticked");
  const form = el("form", { id: "calls-form", onsubmit: (e) => {
    e.preventDefault();
    const [a, b] = [...form.querySelectorAll("input:checked")].map((box) => box.value);
    location.href = `${page}/${enc(b)}?with=${enc(a)}`;  // the older one first
  } });
  const rows = calls.map((c) => {
    return el("tr", { dataset: { id: c.id } },
      el("td", {}, el("input", { type: "checkbox", value: c.id, "aria-label": `pick ${c.id}`, onchange: () => {
        compare.disabled = form.querySelectorAll("input:checked").length !== 2;
      } })),
      el("td", {}, el("a", { href: `${page}/${enc(c.id)}` }, when(c.at))), el("td", {}, c.source),
      el("td", {}, c.chat_id ?? "(default)"), el("td", { class: "num" }, c.trigger_id ?? "–"),
      el("td", { class: "num" }, c.total_tokens), el("td", {}, `${c.counts.included} in, ${c.counts.left_out} out`),
      el("td", { class: "outcome" }, outcome(c)),
      el("td", {}, c.erased ? el("span", { class: "reason" }, `${c.erased} erased`) : ""));
  });
  form.append(el("table", { id: "calls-table" },
    el("tr", {}, ["", "when", "source", "chat", "trigger", "tokens", "items", "outcome", ""].map((h) => el("th", {}, h))), rows), compare);
  main().replaceChildren(el("h1", {}, `${agentId}'s model calls`),
    el("p", { class: "muted" }, "Each call records what its context held (ids, versions, scores, reasons), not the text: opening one rebuilds it from the store and says whether the model would get the same bytes today."),
    calls.length ? el("div", { class: "card" }, form) : el("p", { class: "muted", id: "no-calls" }, "No recorded calls yet."));
}

async function callPage(worldId, agentId, callId) {
  const base = `/v1/worlds/${enc(worldId)}/agents/${enc(agentId)}`;
  const params = new URLSearchParams(location.search);
  const other = params.get("with");
  crumbs({ text: "worlds", href: "/ui/" }, { text: worldId, href: `/ui/worlds/${enc(worldId)}` },
         { text: agentId, href: `/ui/worlds/${enc(worldId)}/agents/${enc(agentId)}` },
         { text: "calls", href: `/ui/worlds/${enc(worldId)}/agents/${enc(agentId)}/calls` }, { text: callId });
  const result = other
    ? await api("POST", `${base}/calls/${enc(callId)}/compare`, { other })
    : await api("GET", `${base}/calls/${enc(callId)}/replay`);
  const call = result.call;
  const verdict = result.diff === null ? "cannot be rebuilt"
    : result.diff.identical ? "the same bytes" : "not the same bytes";
  const heading = other ? `Call ${callId} beside the later ${other}` : `Call ${callId}, replayed from the store`;
  const summary = el("div", { class: "card", id: "verdict", dataset: { identical: String(!!result.diff?.identical) } },
    el("strong", {}, verdict), ` · ${call.source} · ${when(call.at)} · chat ${call.chat_id ?? "(default)"} · trigger #${call.trigger_id ?? "–"} · ${call.total_tokens} tokens · `,
    el("span", { id: "outcome" }, outcome(call)),
    result.notes.map((n) => el("p", { class: "muted" }, n)));
  const parts = [el("h1", {}, heading), summary];
  if (result.diff) parts.push(diffCard(result.diff));
  parts.push(itemsCard(call));
  const messagesCard = (id, title, messages) => el("div", { class: "card", id }, el("h2", {}, title),
    messages.map((m) => el("div", { class: "msg", dataset: { role: m.role } }, el("span", { class: "role" }, m.role),
      m.name ? el("span", { class: "muted" }, ` (${m.name})`) : "",
      el("pre", { class: "block" }, typeof m.content === "string" ? m.content : JSON.stringify(m.content)))));
  // What the model was sent: a full copy when the store keeps one, else the rebuilt context
  // when its bytes hash the same as the call's.
  if (call.messages) parts.push(messagesCard("sent", "The context as sent (a full copy)", call.messages));
  if (!other && result.messages) {
    const title = result.diff?.identical ? "The context as sent (rebuilt from the store: the same bytes)"
      : "The context rebuilt now (not what was sent: see what differs)";
    parts.push(messagesCard("replayed", title, result.messages));
  }
  main().replaceChildren(...parts);
}

function diffCard(diff) {
  const side = (i) => (i === null ? "–" : i.included ? `in ${i.section}, rank ${i.rank}` : `out (${i.reason})`);
  const count = diff.items.length === 1 ? "1 item" : `${diff.items.length} items`;
  return el("div", { class: "card", id: "diff" }, el("h2", {}, `What differs (${count})`),
    el("p", { class: "muted" }, `tokens ${diff.tokens.a} → ${diff.tokens.b}`),
    Object.entries(diff.settings).filter(([name]) => name !== "explicit").map(([name, v]) =>
      el("p", { class: "setting" }, `setting ${name}: ${JSON.stringify(v.a)} → ${JSON.stringify(v.b)}`)),
    diff.items.length ? el("table", { id: "diff-table" },
      el("tr", {}, ["change", "item", "before", "after", "why"].map((h) => el("th", {}, h))),
      diff.items.map((c) => el("tr", { dataset: { change: c.change, id: c.id } }, el("td", {}, c.change), el("td", {}, `${c.kind} ${c.id}`),
        el("td", {}, side(c.a)), el("td", {}, side(c.b)), el("td", {}, c.why ?? "")))) : "",
    diff.notes.map((n) => el("p", { class: "muted" }, n)));
}

function itemsCard(call) {
  const shown = (value) => (value === undefined || value === null ? "–" : String(value));
  return el("div", { class: "card", id: "call-items" }, el("h2", {}, "What the context held"),
    el("table", {}, el("tr", {}, ["section", "item", "rank", "tokens", "score", "version", "in or why not"].map((h) => el("th", {}, h))),
      call.items.map((i) => el("tr", { class: i.included ? "" : "excluded" }, el("td", {}, i.section), el("td", {}, `${i.kind} ${i.id}`),
        el("td", { class: "num" }, i.rank), el("td", { class: "num" }, i.included ? i.tokens : "–"), el("td", { class: "num" }, shown(i.score)),
        el("td", {}, shown(i.version)), el("td", {}, i.included ? "in" : el("span", { class: "reason" }, i.reason))))));
}

// -- routing --------------------------------------------------------------------------------

async function route() {
  const logout = document.getElementById("logout");
  logout.hidden = !sessionStorage.getItem(KEY);
  logout.addEventListener("click", () => { sessionStorage.removeItem(KEY); location.href = "/ui/"; });
  const parts = location.pathname.replace(/^\/ui\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  try {
    if (!parts.length) return await worldsPage();
    if (parts[0] === "scopes" && parts.length >= 2) return await scopePage(parts.slice(1).join("/"));
    if (parts[0] === "worlds" && parts.length === 2) return await worldPage(parts[1]);
    if (parts[0] === "worlds" && parts[2] === "agents" && parts.length === 4) return await agentPage(parts[1], parts[3]);
    if (parts[0] === "worlds" && parts[2] === "agents" && parts[4] === "calls" && parts.length === 5) return await callsPage(parts[1], parts[3]);
    if (parts[0] === "worlds" && parts[2] === "agents" && parts[4] === "calls" && parts.length === 6) return await callPage(parts[1], parts[3], parts[5]);
    if (parts[0] === "worlds" && parts[2] === "search") return await searchPage(parts[1]);
    main().replaceChildren(el("p", { class: "error" }, "No such page."), el("a", { href: "/ui/" }, "All worlds"));
  } catch (error) { fail(error); }
}

document.addEventListener("DOMContentLoaded", route);
