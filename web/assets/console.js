// The staff console: the review and hand-off queues, an item view with claim, release, decision, reply
// and close, and the desk's figures as charts. Every text from the API is set as text, never as markup.
import { beginSignIn, currentToken, finishSignIn, signOut } from "/assets/auth.js";
import { ApiError, request } from "/assets/api.js";
import { agreementChart, decisionsChart } from "/assets/charts.js";

const $ = (id) => document.getElementById(id);
const TABS = {
  held: { title: "Held replies", path: "/staff/reviews", query: "held=true&review=pending&order=oldest&limit=100" },
  awaiting: {
    title: "Replies awaiting a check",
    path: "/staff/reviews",
    query: "held=false&review=pending&order=oldest&limit=100",
  },
  handoffs: { title: "Hand-offs", path: "/staff/handoffs", query: "status=open&order=oldest&limit=100" },
};
// `opened` counts the tabs opened, so a slow start does not reopen a tab over one the person chose since.
const state = { config: null, token: null, desk: null, tab: "held", item: null, opened: 0 };

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined) continue;
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

function say(text) {
  $("status").textContent = text;
}

function problem(error) {
  const box = $("problem");
  box.textContent = error instanceof Error ? error.message : String(error);
  box.hidden = false;
}

function clearProblem() {
  $("problem").hidden = true;
  $("problem").textContent = "";
}

async function api(method, path, body) {
  try {
    return await request(method, path, { body, token: state.token });
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      state.token = null;
      showSignedOut("Your sign-in has ended; sign in again.");
    }
    throw error;
  }
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

// Slots and screens as the desk's pack and the screens' table (both from /staff/desk) name them.
function slotsText(slots) {
  return Object.entries(slots).map(([name, value]) => {
    const slot = state.desk.slots.find((known) => known.name === name);
    const shown = slot?.values.find((known) => known.value === value);
    return `${slot ? slot.label : name}: ${shown ? shown.label : value}`;
  }).join(", ");
}

function screenLabel(name) {
  const screen = state.desk.screens.find((known) => known.name === name);
  return screen ? screen.label : name;
}

// --- signing in -------------------------------------------------------------------------------------

function showSignedOut(message) {
  $("signed-in").hidden = true;
  $("signed-out").hidden = false;
  $("who").textContent = "Not signed in.";
  if (message) say(message);
}

async function showSignedIn() {
  state.desk = await api("GET", "/staff/desk");
  $("desk-title").textContent = `${state.desk.desk}: staff console`;
  document.title = `${state.desk.desk} - staff console`;
  const name = state.desk.staff.name || state.desk.staff.subject;
  $("who").textContent = `Signed in as ${name}.`;
  $("signed-out").hidden = true;
  $("signed-in").hidden = false;
  const opened = state.opened;
  await refreshCounts();
  if (state.opened === opened) await openTab(state.tab);
}

// --- queues -----------------------------------------------------------------------------------------

async function listOf(tab) {
  const { path, query } = TABS[tab];
  return api("GET", `${path}?${query}`);
}

async function refreshCounts() {
  for (const tab of Object.keys(TABS)) {
    const page = await listOf(tab);
    $(`count-${tab}`).textContent = `${page.items.length}${page.next_cursor ? "+" : ""}`;
  }
}

function markTab(tab) {
  for (const button of document.querySelectorAll("[data-tab]")) {
    if (button.dataset.tab === tab) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
}

async function openTab(tab) {
  clearProblem();
  state.opened += 1;
  state.tab = tab;
  markTab(tab);
  $("item-panel").hidden = true;
  if (tab === "figures") {
    $("queue-panel").hidden = true;
    $("figures-panel").hidden = false;
    await showFigures();
    return;
  }
  $("figures-panel").hidden = true;
  $("queue-panel").hidden = false;
  await renderQueue(tab);
}

async function renderQueue(tab) {
  $("queue-panel").setAttribute("aria-busy", "true");
  $("queue-heading").textContent = TABS[tab].title;
  // Another tab chosen while this one loaded draws itself, and says when it is done.
  const page = await listOf(tab).finally(() => {
    if (state.tab === tab) $("queue-panel").setAttribute("aria-busy", "false");
  });
  if (state.tab !== tab) return;
  const list = $("queue");
  list.replaceChildren();
  for (const item of page.items) {
    const label = `Turn ${item.turn_id}, ${item.action}`;
    const claim = item.claim ? (item.claim.mine ? "claimed by you" : "claimed by someone else") : "unclaimed";
    list.append(
      el(
        "li",
        {},
        el("span", {}, el("strong", { text: label }), el("span", { class: "meta", text: ` queued ${when(item.queued_at)}, ${claim}` })),
        el("button", {
          type: "button",
          class: "secondary",
          text: "Open",
          "aria-label": `Open ${label} of conversation ${item.conversation_id.slice(0, 8)}`,
          onclick: () => openItem(tab, item.conversation_id, item.turn_id),
        }),
      ),
    );
  }
  $("queue-empty").hidden = page.items.length > 0;
}

// --- an item ----------------------------------------------------------------------------------------

function itemPath(tab, conversationId, turnId) {
  const queue = tab === "handoffs" ? "handoffs" : "reviews";
  return `/staff/${queue}/${conversationId}/${turnId}`;
}

async function openItem(tab, conversationId, turnId) {
  clearProblem();
  const path = itemPath(tab, conversationId, turnId);
  const item = await api("GET", path);
  state.item = { tab, path, item };
  renderItem();
  $("item-panel").hidden = false;
  $("item-panel").focus();
}

function facts(rows) {
  return el("dl", {}, ...rows.flatMap(([term, value]) => [el("dt", { text: term }), el("dd", { text: String(value) })]));
}

function claimControls() {
  const { item, path } = state.item;
  const mine = item.claim && item.claim.mine;
  const busy = item.claim && !item.claim.mine;
  return el(
    "div",
    { class: "actions" },
    el("button", { type: "button", text: mine ? "Renew claim" : "Claim", disabled: busy ? "" : null, onclick: () => act("POST", `${path}/claim`, undefined, "Claimed: it is yours until the claim expires.") }),
    mine ? el("button", { type: "button", class: "secondary", text: "Release", onclick: () => act("POST", `${path}/release`, undefined, "Released.") }) : null,
  );
}

function reviewView(item) {
  const claim = item.claim ? (item.claim.mine ? `yours until ${when(item.claim.expires_at)}` : "someone else's") : "none";
  const passages = item.passages.length
    ? el("ul", {}, ...item.passages.map((p) => el("li", {}, el("strong", { text: `${p.passage_id}: ` }), document.createTextNode(p.text))))
    : el("p", { text: "None: this action uses no handbook row." });
  const fired = item.screens_fired.length
    ? el("ul", {}, ...item.screens_fired.map((name) => el("li", { text: screenLabel(name) })))
    : el("p", { text: "None fired." });
  const parts = [
    el("h2", { id: "item-heading", text: `Reply to turn ${item.turn_id} (${item.action})` }),
    facts([
      ["Conversation", item.conversation_id],
      ["Action", item.action],
      ["Slots", slotsText(item.slots)],
      ["Queued", when(item.queued_at)],
      ["Review", item.human_review],
      ["Claim", claim],
    ]),
    el("h3", { text: "Handbook rows the prompt used" }),
    passages,
    el("h3", { text: "Draft" }),
    el("blockquote", { text: item.draft ?? "(no draft)" }),
    facts([
      ["Output tokens", item.output_tokens ?? "unknown"],
      ["Ended by EOS", item.ended_by_eos ? "yes" : "no"],
      ["Hit the token cap", item.hit_token_cap ? "yes" : "no"],
    ]),
    el("h3", { text: "Screens fired" }),
    fired,
    el("h3", { text: "Reply shown" }),
    el("blockquote", { text: item.reply_shown ?? "(no longer kept)" }),
  ];
  if (item.human_review === "pending") parts.push(claimControls(), decisionForm(item));
  return parts;
}

function decisionForm(item) {
  const mine = item.claim && item.claim.mine;
  const reasons = el("select", { id: "reason", name: "reason" }, ...state.desk.reason_codes.map((code) => el("option", { value: code, text: code.replaceAll("_", " ") })));
  const correction = el("textarea", { id: "correction", name: "correction", rows: "3", maxlength: String(state.desk.max_message_chars) });
  const approve = el("input", { type: "radio", name: "decision", id: "decision-approve", value: "approve" });
  const reject = el("input", { type: "radio", name: "decision", id: "decision-reject", value: "reject" });
  approve.checked = true;
  const form = el(
    "form",
    { onsubmit: (event) => { event.preventDefault(); decide(form); } },
    el(
      "fieldset",
      {},
      el("legend", { text: "Decision" }),
      el("div", {}, approve, el("label", { for: "decision-approve", text: " Approve" })),
      el("div", {}, reject, el("label", { for: "decision-reject", text: " Reject" })),
      el("label", { for: "reason", text: "Reason (for a rejection)" }),
      reasons,
      el("label", { for: "correction", text: "Correction (optional; sent to the resident as a staff message)" }),
      correction,
      el("div", { class: "actions" }, el("button", { type: "submit", text: "Record decision", disabled: mine ? null : "" })),
      mine ? null : el("p", { class: "notice status", text: "Claim the reply to decide on it." }),
    ),
  );
  return form;
}

function handoffView(item) {
  const claim = item.claim ? (item.claim.mine ? `yours until ${when(item.claim.expires_at)}` : "someone else's") : "none";
  const parts = [
    el("h2", { id: "item-heading", text: `Hand-off, turn ${item.turn_id} (${item.action})` }),
    facts([
      ["Conversation", item.conversation_id],
      ["Action", item.action],
      ["Intent", item.intent],
      ["Handbook topic", item.topic || "none"],
      ["Slots", slotsText(item.slots)],
      ["Injection-like", item.injection_screen ? "yes" : "no"],
      ["Staff-only request", item.privileged_request ? "yes" : "no"],
      ["Status", item.handoff_status],
      ["Queued", when(item.queued_at)],
      ["Claim", claim],
    ]),
  ];
  if (item.handoff_status === "open") {
    const mine = item.claim && item.claim.mine;
    const text = el("textarea", { id: "reply-text", name: "text", rows: "3", maxlength: String(state.desk.max_message_chars) });
    parts.push(
      claimControls(),
      el(
        "form",
        { onsubmit: (event) => { event.preventDefault(); replyTo(text); } },
        el("label", { for: "reply-text", text: "Reply to the resident" }),
        text,
        el(
          "div",
          { class: "actions" },
          el("button", { type: "submit", text: "Send reply", disabled: mine ? null : "" }),
          el("button", { type: "button", class: "secondary", text: "Close hand-off", disabled: mine ? null : "", onclick: () => act("POST", `${state.item.path}/close`, undefined, "Hand-off closed.") }),
        ),
      ),
    );
  }
  return parts;
}

function renderItem() {
  const { tab, item } = state.item;
  $("item-panel").replaceChildren(...(tab === "handoffs" ? handoffView(item) : reviewView(item)));
}

// The item view is drawn again after every action, so its outcome is announced only once the new view
// is in place: a person (or a test) who acts on the announcement never types into a form about to go.
async function act(method, path, body, done) {
  clearProblem();
  let succeeded = false;
  try {
    await api(method, path, body);
    succeeded = true;
  } catch (error) {
    problem(error);
  }
  await reloadItem();
  if (succeeded) say(done);
}

async function reloadItem() {
  try {
    state.item.item = await api("GET", state.item.path);
    renderItem();
  } catch (error) {
    problem(error);
  }
  await refreshCounts().catch(problem);
  if (state.tab in TABS) await renderQueue(state.tab).catch(problem);
}

async function decide(form) {
  const decision = form.querySelector("input[name=decision]:checked").value;
  const body = { decision };
  if (decision === "reject") {
    body.reason = form.querySelector("#reason").value;
    const correction = form.querySelector("#correction").value.trim();
    if (correction) body.correction = correction;
  }
  await act("POST", `${state.item.path}/decision`, body, decision === "approve" ? "Approved." : "Rejected.");
}

async function replyTo(textarea) {
  const text = textarea.value.trim();
  if (!text) {
    problem(new Error("Write a reply first."));
    return;
  }
  await act("POST", `${state.item.path}/reply`, { text }, "Reply sent to the resident.");
}

// --- figures ----------------------------------------------------------------------------------------

async function showFigures() {
  const stats = await api("GET", "/staff/stats");
  $("charts").replaceChildren(decisionsChart(stats.decisions_per_day), agreementChart(stats.screens_overall, stats.screens));
  const share = (value) => (value === null ? "none yet" : `${Math.round(value * 100)}%`);
  const seconds = (value) => (value === null ? "none yet" : `${Math.round(value)} s`);
  const rows = [
    ["Replies awaiting a check", stats.reviews.pending],
    ["Approved", stats.reviews.approved],
    ["Rejected", stats.reviews.rejected],
    ["Corrected", stats.reviews.corrected],
    ["Open hand-offs", stats.handoffs.open],
    ["Closed hand-offs", stats.handoffs.closed],
    ["Median time to a decision", seconds(stats.seconds_to_decision_median)],
    ["90th percentile time to a decision", seconds(stats.seconds_to_decision_p90)],
    ["Shown as the model drafted them", share(stats.shown_as_drafted_share)],
  ];
  $("figure-table").replaceChildren(
    el(
      "table",
      { class: "figures" },
      el("caption", { text: "The desk's figures" }),
      el("tbody", {}, ...rows.map(([name, value]) => el("tr", {}, el("th", { scope: "row", text: name }), el("td", { text: String(value) })))),
    ),
  );
}

// --- start ------------------------------------------------------------------------------------------

async function start() {
  state.config = await (await fetch("/config.json")).json();
  $("local-notice").hidden = !state.config.local;
  for (const button of document.querySelectorAll("[data-tab]")) {
    button.addEventListener("click", () => openTab(button.dataset.tab).catch(problem));
  }
  $("sign-in").addEventListener("click", () => beginSignIn(state.config).catch(problem));
  $("sign-out").addEventListener("click", () => signOut(state.config));
  try {
    state.token = (await finishSignIn(state.config)) || currentToken();
  } catch (error) {
    problem(error);
  }
  if (!state.token) {
    showSignedOut();
    return;
  }
  await showSignedIn();
}

start().catch(problem);
