/* engram hub: the brain page. Draws the neuron graph on a canvas (radial layout by type,
   relaxed by a few spring steps), replays a past moment from the time slider, and shows
   activation waves live from the server's event stream. Every text from the ledger is set
   with textContent: agents write it, so it is never parsed as HTML. */
"use strict";
(function () {
  const canvas = document.getElementById("graph");
  const ctx = canvas.getContext("2d");
  const slider = document.getElementById("when");
  const label = document.getElementById("when-label");
  const live = document.getElementById("live");
  const top = document.getElementById("top");
  const counts = document.getElementById("counts");
  const COLORS = { feeds_into: "#6fd08c", inhibits: "#ff6b6b", influences: "#5ec4ff",
    recalls: "#c6a0ff", triggers: "#ffb25e" };
  let nodes = [], edges = [], index = new Map(), span = null, following = true;
  const pulses = new Map();

  function layout(neurons) {
    const types = [...new Set(neurons.map((n) => n.type))].sort();
    const cx = canvas.width / 2, cy = canvas.height / 2;
    const old = index;
    index = new Map();
    nodes = neurons.map((n, i) => {
      const ring = types.indexOf(n.type), peers = neurons.filter((m) => m.type === n.type);
      const k = peers.indexOf(n), angle = (2 * Math.PI * k) / Math.max(peers.length, 1) + ring;
      const r = 60 + (ring + 1) * (Math.min(cx, cy) - 60) / (types.length + 0.5);
      const prev = old.get(n.id);
      const node = { id: n.id, concept: n.concept, type: n.type, salience: n.salience,
        x: prev ? prev.x : cx + r * Math.cos(angle), y: prev ? prev.y : cy + r * Math.sin(angle) };
      index.set(n.id, node);
      return node;
    });
    edges = [];
    for (const n of neurons) for (const c of n.connections) {
      if (index.has(c.target)) edges.push({ s: index.get(n.id), t: index.get(c.target), type: c.type, w: c.weight });
    }
    for (let step = 0; step < 60; step++) relax();
  }

  function relax() {
    for (const e of edges) {
      const dx = e.t.x - e.s.x, dy = e.t.y - e.s.y, d = Math.hypot(dx, dy) || 1;
      const f = (d - 110) * 0.01;
      e.s.x += (dx / d) * f; e.s.y += (dy / d) * f; e.t.x -= (dx / d) * f; e.t.y -= (dy / d) * f;
    }
    for (const a of nodes) for (const b of nodes) {
      if (a === b) continue;
      const dx = a.x - b.x, dy = a.y - b.y, d2 = dx * dx + dy * dy || 1;
      if (d2 < 3600) { a.x += (dx / d2) * 30; a.y += (dy / d2) * 30; }
    }
    for (const n of nodes) {
      n.x = Math.min(canvas.width - 20, Math.max(20, n.x));
      n.y = Math.min(canvas.height - 20, Math.max(20, n.y));
    }
  }

  function radius(n) { return 3 + 14 * Math.sqrt(n.salience / 65535); }

  function draw() {
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    for (const e of edges) {
      ctx.strokeStyle = COLORS[e.type] || "#8a96a3";
      ctx.globalAlpha = 0.25 + 0.6 * (e.w / 65535);
      ctx.lineWidth = 0.5 + 3 * (e.w / 65535);
      ctx.beginPath(); ctx.moveTo(e.s.x, e.s.y); ctx.lineTo(e.t.x, e.t.y); ctx.stroke();
    }
    ctx.globalAlpha = 1;
    const now = performance.now();
    for (const n of nodes) {
      ctx.fillStyle = "#d8dee6";
      ctx.beginPath(); ctx.arc(n.x, n.y, radius(n), 0, 2 * Math.PI); ctx.fill();
      const started = pulses.get(n.id);
      if (started !== undefined) {
        const age = (now - started) / 1500;
        if (age >= 1) { pulses.delete(n.id); continue; }
        ctx.strokeStyle = "#ffd36b"; ctx.globalAlpha = 1 - age; ctx.lineWidth = 3;
        ctx.beginPath(); ctx.arc(n.x, n.y, radius(n) + 4 + 24 * age, 0, 2 * Math.PI); ctx.stroke();
        ctx.globalAlpha = 1;
      }
    }
    ctx.fillStyle = "#8a96a3"; ctx.font = "11px system-ui";
    for (const n of nodes) if (n.salience > 6553 || nodes.length < 40) ctx.fillText(n.concept.slice(0, 40), n.x + radius(n) + 3, n.y + 4);
    requestAnimationFrame(draw);
  }

  function showTop() {
    top.replaceChildren();
    for (const n of [...nodes].sort((a, b) => b.salience - a.salience).slice(0, 10)) {
      const li = document.createElement("li"), a = document.createElement("a");
      a.href = "/ledger?stream=" + encodeURIComponent("neuron:" + n.id);
      a.textContent = n.concept;
      a.title = "why does engram believe this? the events of neuron " + n.id;
      li.append(a, " " + n.salience);
      top.append(li);
    }
  }

  async function load(asOf) {
    const url = "/api/graph" + (asOf ? "?as_of=" + encodeURIComponent(asOf) : "");
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok) { counts.textContent = "could not load the graph: " + (await response.text()); return; }
    const data = await response.json();
    span = data.span;
    layout(data.neurons);
    showTop();
    counts.textContent = data.neurons.length + " neurons, " + edges.length + " connections";
    canvas.dataset.loaded = String(data.metadata.as_of);
  }

  function sliderTime() {
    if (!span || !span.start) return null;
    if (Number(slider.value) === 0) return span.start; // exact: a Date keeps milliseconds only
    const a = Date.parse(span.start), b = Date.parse(span.now);
    return new Date(a + ((b - a) * Number(slider.value)) / 1000).toISOString();
  }

  slider.addEventListener("change", () => {
    following = Number(slider.value) === 1000;
    const when = following ? null : sliderTime();
    label.textContent = when || "now";
    load(when);
  });
  document.getElementById("now").addEventListener("click", () => {
    slider.value = "1000"; following = true; label.textContent = "now"; load(null);
  });

  function arrived(event) {
    const li = document.createElement("li");
    const p = event.payload || {};
    const who = index.get(p.id);
    li.textContent = "#" + event.position + " " + (who ? who.concept : p.id) +
      " · strength " + p.strength + (p.cause ? " · " + p.cause : "");
    li.className = "fresh";
    li.dataset.position = String(event.position);
    live.prepend(li);
    while (live.children.length > 50) live.lastChild.remove();
    if (following) pulses.set(p.id, performance.now());
  }

  const source = new EventSource("/api/events?kinds=neuron.activated,neuron.created,connection.created");
  let reload = null;
  source.addEventListener("hello", () => { canvas.dataset.live = "open"; });
  source.addEventListener("events", (message) => {
    for (const e of JSON.parse(message.data)) if (e.kind === "neuron.activated") arrived(e);
    // Salience and shape changed: redraw from the server, at most every two seconds.
    if (following && reload === null) reload = setTimeout(() => { reload = null; load(null); }, 2000);
  });
  source.addEventListener("overflow", () => { if (following) load(null); });

  load(null);
  requestAnimationFrame(draw);
})();
