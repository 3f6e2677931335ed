// Slingshot dashboard: copy buttons, Chart.js charts, the CSV import's
// progress, an import job's, the link form's UTM builder, the Import page's
// fields of the chosen source and the focus on a form's errors. Every page
// works without it except the charts.
"use strict";

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const done = () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy"; }, 1500); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(button.dataset.copy).then(done);
  } else {  // plain http: the older way
    const area = document.createElement("textarea");
    area.value = button.dataset.copy;
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
    done();
  }
});

function drawCharts(root = document) {
  for (const canvas of root.querySelectorAll("canvas[data-chart]")) {
    const data = JSON.parse(document.getElementById(canvas.dataset.chart).textContent);
    const datasets = [{ label: "Clicks", data: data.clicks }];
    if (data.visitors) datasets.push({ label: "Visitors", data: data.visitors });
    new Chart(canvas, {
      type: "bar",
      data: { labels: data.labels, datasets },
      options: {
        maintainAspectRatio: false,
        animation: false,
        // Day labels level and thinned out rather than slanted past the
        // left edge; room on the right, so that today's bars are not cut off.
        layout: { padding: { right: 8 } },
        scales: {
          x: { ticks: { maxRotation: 0, autoSkipPadding: 12 } },
          y: { beginAtZero: true, ticks: { precision: 0 } },
        },
      },
    });
  }
}

async function runImport(form) {
  const progress = document.getElementById("import-progress");
  const status = document.getElementById("import-status");
  const button = document.getElementById("import-start");
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    for (;;) {
      const response = await fetch(form.action, {
        method: "POST", body: new FormData(form), headers: { Accept: "application/json" },
      });
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      const state = await response.json();
      progress.value = state.position;
      status.textContent = `${state.position} of ${state.total} rows done, ${state.created} created.`;
      if (state.done) break;
    }
    window.location.reload();
  } catch (error) {
    status.textContent = `Stopped: ${error.message}. Press Continue to go on from where it stopped.`;
    button.textContent = "Continue";
    button.disabled = false;
    button.removeAttribute("aria-busy");
  }
}

// The UTM builder: each utm_* value typed is set in the target URL's query
// as it is typed, as web.forms.with_utm does on the server.
function buildUtm(form) {
  const target = form.querySelector("[name=url]");
  const fields = form.querySelectorAll("[data-utm]");
  const update = () => {
    let url;
    try { url = new URL(target.value); } catch { return; }
    for (const field of fields) {
      if (field.value) url.searchParams.set(field.dataset.utm, field.value);
    }
    target.value = url.toString();
  };
  for (const field of fields) field.addEventListener("change", update);
  // A team's UTM template chosen: its values in the fields, and so in the URL.
  const chooser = form.querySelector("#utm-template");
  const templates = JSON.parse(document.getElementById("utm-template-values")?.textContent || "{}");
  chooser?.addEventListener("change", () => {
    const values = templates[chooser.value];
    if (!values) return;
    for (const field of fields) field.value = values[field.dataset.utm] || "";
    update();
  });
}

// Live: the link page and the overview are told when clicks of theirs are
// stored, as server-sent events (web/live.py; `manage.py serve_live`
// behind the front): an event brings the link's new counts, shown at once,
// and another, at most every few seconds, every part of the page that the
// clicks change (on the link page its header's all-time count with its
// report, read together), made once by serve_live for all the pages that
// show it. A stream that says it brings no parts (a server of the release
// before) has the page fetch them itself, at most every REFRESH_EVERY_MS.
// The part says which version it shows (data-live-version). While no
// stream is open (none served there, or it ended and the page asks for a
// new one) the page asks every few seconds whether the clicks changed, a
// small JSON answer that also brings a fresh events URL.
const LIVE_EVERY_MS = 2000;
const REFRESH_EVERY_MS = 10000;
// ... and after a wait drawn up to this long, so that the pages open on one
// busy link, all told at once, do not all ask in the same moment.
const REFRESH_SPREAD_MS = 2000;

function followLive(region) {
  const shown = () => region.querySelector("[data-live-version]")?.dataset.liveVersion;
  let busy = false;
  let again = false;
  let stream = null;
  let pushed = false; // whether the open stream brings the parts
  let eventsUrl = region.dataset.liveEvents;

  let refreshed = 0;
  let later = null;
  const refreshSoon = () => {
    const wait = Math.max(0, refreshed + REFRESH_EVERY_MS - Date.now()) + Math.random() * REFRESH_SPREAD_MS;
    if (!later) later = setTimeout(() => { later = null; refresh(); }, wait);
  };
  const showCounts = (counts) => {
    const facts = region.querySelector("[data-live-version]");
    const clicks = region.querySelector("#all-time-clicks");
    const human = region.querySelector("#all-time-human");
    if (!facts || !clicks || counts.clicks === undefined) return;
    if (Number(facts.dataset.liveVersion) > counts.clicks) return; // a part made since shows more
    clicks.textContent = counts.clicks;
    if (human) human.textContent = counts.human;
    facts.dataset.liveVersion = counts.clicks;
  };
  const showPart = (html) => {
    region.innerHTML = html;
    if (window.Chart) drawCharts(region);
  };

  const refresh = async () => {
    if (busy) { again = true; return; }
    busy = true;
    refreshed = Date.now();
    try {
      const page = await fetch(region.dataset.reportUrl);
      if (!page.ok) return;
      showPart(await page.text());
    } catch (error) {
      // The next event or tick tries again; the page keeps what it shows.
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  };

  let served = null; // whether events are served here: unknown until a first stream opens or fails
  const listen = () => {
    if (stream || !eventsUrl || !window.EventSource || served === false) return;
    const opened = new EventSource(eventsUrl);
    stream = opened;
    opened.onopen = () => { served = true; };
    opened.addEventListener("hello", (event) => {
      try { pushed = JSON.parse(event.data).parts === true; } catch (error) { pushed = false; }
    });
    opened.addEventListener("clicks", (event) => {
      let counts = {};
      try { counts = JSON.parse(event.data); } catch (error) { /* an older server's "1" */ }
      showCounts(counts);
      if (!pushed && !document.hidden) refreshSoon();
    });
    opened.addEventListener("part", (event) => {
      try { showPart(JSON.parse(event.data).html); } catch (error) { /* the next one */ }
    });
    opened.onerror = () => {
      // Ended (its time is up, or the server went away): the next tick
      // brings a new token. One that never opened means none is served
      // here, and the page polls.
      opened.close();
      if (served === null) served = false;
      stream = null;
      pushed = false;
      eventsUrl = null;
    };
  };

  const tick = async () => {
    if (stream || busy || document.hidden) return;
    try {
      const answer = await fetch(region.dataset.liveUrl, { headers: { Accept: "application/json" } });
      if (!answer.ok) return;
      const live = await answer.json();
      if (live.events) eventsUrl = live.events;
      if (String(live.version) !== shown()) await refresh();
      listen();
    } catch (error) {
      // The next tick tries again.
    }
  };
  listen();
  setInterval(tick, LIVE_EVERY_MS);
}

// An import from another shortener runs in the background: its page asks
// for its status every second and shows it, until it ends.
const IMPORT_EVERY_MS = 1000;

function followImportJob(section) {
  const progress = document.getElementById("source-import-progress");
  const state = document.getElementById("source-import-state");
  const summary = document.getElementById("source-import-summary");
  const timer = setInterval(async () => {
    try {
      const answer = await fetch(section.dataset.statusUrl, { headers: { Accept: "application/json" } });
      if (!answer.ok) return;
      const status = await answer.json();
      if (status.total) { progress.max = status.total; progress.value = status.done; }
      if (status.finished) {
        clearInterval(timer);
        window.location.reload();
        return;
      }
      state.textContent = status.state === "queued"
        ? "Waiting for a worker (manage.py run_imports)."
        : `Running: ${status.phase}, ${status.done}${status.total ? ` of ${status.total}` : ""}.`;
      summary.replaceChildren(...status.lines.map((line) => Object.assign(document.createElement("li"), { textContent: line })));
    } catch (error) {
      // The next tick tries again.
    }
  }, IMPORT_EVERY_MS);
}

// A form sent back with errors: its summary at the top links to each field
// in error, and the page starts on the first of them, with whatever hides
// it (a <details>) opened. A field that a builder shows (static/web/rules.js,
// data-json) is reached through the builder's rows.
function reachable(field) {
  const builder = field.id && document.querySelector(`[data-json="${field.id}"]:not([hidden])`);
  return (builder && (builder.querySelector("[aria-invalid=true]") || builder.querySelector("input, select, button"))) || field;
}

function focusField(field) {
  const target = reachable(field);
  for (let parent = target.parentElement; parent; parent = parent.parentElement) {
    if (parent.tagName === "DETAILS") parent.open = true;
  }
  target.focus();
  target.scrollIntoView({ block: "center" });
}

function showErrors(summary) {
  summary.addEventListener("click", (event) => {
    const link = event.target.closest("a[href^='#']");
    const field = link && document.getElementById(decodeURIComponent(link.hash.slice(1)));
    if (!field) return;
    event.preventDefault();
    focusField(field);
  });
  const first = summary.closest("form")?.querySelector("[aria-invalid=true]");
  if (first) focusField(first);
}

// The links list: on a phone its filters fold unless one is set, so that the
// links come first; the actions on the selected links unfold once one is ticked.
function arrangeLinkList(filters, bulk) {
  if (filters && !filters.hasAttribute("data-filtered") && window.matchMedia("(max-width: 767px)").matches) {
    filters.open = false;
  }
  if (bulk) {
    document.addEventListener("change", (event) => {
      if (event.target.matches("input[name=selected]") && event.target.checked) bulk.open = true;
    });
  }
}

// The Import page: only the chosen source's fields show; the others are
// disabled too, so that what was typed or picked there is not sent. Without
// this, every source's fields show, each under its source's name.
function showChosenSource(form) {
  const choice = form.elements.source;
  const show = () => {
    for (const fields of form.querySelectorAll("fieldset[data-source]")) {
      const chosen = fields.dataset.source === choice.value;
      fields.hidden = !chosen;
      fields.disabled = !chosen;
    }
  };
  choice.addEventListener("change", show);
  show();
}

// A first visit: the browser's zone becomes the person's until they choose one.
async function guessTimeZone(form) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!zone) return;
  form.elements.time_zone.value = zone;
  const answer = await fetch(form.action, { method: "POST", body: new FormData(form), headers: { Accept: "application/json" } });
  const named = (name) => (name === "Etc/UTC" ? "UTC" : name);
  if (answer.ok && named((await answer.json()).time_zone) !== named(form.dataset.shown)) window.location.reload();
}

document.addEventListener("DOMContentLoaded", () => {
  const sourceForm = document.getElementById("source-import-form");
  if (sourceForm) showChosenSource(sourceForm);
  const summary = document.querySelector(".error-summary");
  if (summary) showErrors(summary);
  const linkForm = document.getElementById("link-form");
  if (linkForm) buildUtm(linkForm);
  if (document.getElementById("links")) arrangeLinkList(document.getElementById("filters"), document.getElementById("bulk"));
  if (window.Chart) drawCharts();
  const live = document.querySelector("[data-live-url]");
  if (live) followLive(live);
  const zoneGuess = document.getElementById("zone-guess");
  if (zoneGuess) guessTimeZone(zoneGuess);
  const job = document.getElementById("source-import-job");
  if (job && job.dataset.statusUrl) followImportJob(job);
  const form = document.getElementById("import-form");
  if (form) form.addEventListener("submit", (event) => { event.preventDefault(); runImport(form); });
});
