// The console's one script: it draws the statechart with mermaid and keeps an execution's page
// live. The server sends the execution's version as a server-sent event whenever it changes;
// the page then fetches its new state as HTML and swaps it in, and draws the chart again.
"use strict";
(function () {
  // The path the console is mounted under (console.Config.Prefix), "" at the root.
  const base = document.body.dataset.base || "";
  let drawn = 0;

  async function drawChart() {
    const src = document.getElementById("chart-src");
    const box = document.getElementById("chart");
    if (!src || !box || typeof mermaid === "undefined") return;
    drawn++;
    try {
      const { svg } = await mermaid.render("chart-svg-" + drawn, src.textContent);
      box.innerHTML = svg;
      box.dataset.drawn = String(drawn);
      const detail = document.getElementById("detail");
      const state = document.getElementById("state");
      if (detail && state) detail.dataset.chartVersion = state.dataset.version;
    } catch (e) {
      box.textContent = "the chart could not be drawn: " + e;
    }
  }

  async function refresh(id) {
    const res = await fetch(base + "/execution?fragment=1&id=" + encodeURIComponent(id), { credentials: "same-origin" });
    if (!res.ok) return;
    const detail = document.getElementById("detail");
    detail.innerHTML = await res.text();
    const state = document.getElementById("state");
    if (state) detail.dataset.version = state.dataset.version;
    setLive("live", true);
    await drawChart();
  }

  function setLive(text, on) {
    const el = document.getElementById("live");
    if (!el) return;
    el.textContent = text;
    el.classList.toggle("on", on);
  }

  function follow(detail) {
    const id = detail.dataset.id;
    const es = new EventSource(base + "/events?id=" + encodeURIComponent(id));
    let busy = Promise.resolve();
    es.addEventListener("open", () => setLive("live", true));
    es.addEventListener("version", (ev) => {
      const v = Number(ev.data);
      busy = busy.then(() => (v !== Number(detail.dataset.version) ? refresh(id) : null));
    });
    es.addEventListener("gone", () => {
      setLive("purged", false);
      es.close();
    });
    es.addEventListener("error", () => setLive("reconnecting…", false));
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (typeof mermaid !== "undefined") {
      mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "default" });
    }
    drawChart();
    const detail = document.getElementById("detail");
    if (detail && detail.dataset.id) follow(detail);
  });
})();
