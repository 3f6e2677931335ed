// Slingshot dashboard: copy buttons, Chart.js charts, the CSV import's
// progress and the link form's UTM builder. Every page works without it
// except the charts.
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

function drawCharts() {
  for (const canvas of document.querySelectorAll("canvas[data-chart]")) {
    const data = JSON.parse(document.getElementById(canvas.dataset.chart).textContent);
    new Chart(canvas, {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: [
          { label: "Clicks", data: data.clicks },
          { label: "Visitors", data: data.visitors },
        ],
      },
      options: {
        maintainAspectRatio: false,
        animation: false,
        scales: { y: { beginAtZero: true, ticks: { precision: 0 } } },
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
}

document.addEventListener("DOMContentLoaded", () => {
  const linkForm = document.getElementById("link-form");
  if (linkForm) buildUtm(linkForm);
  if (window.Chart) drawCharts();
  const form = document.getElementById("import-form");
  if (form) form.addEventListener("submit", (event) => { event.preventDefault(); runImport(form); });
});
