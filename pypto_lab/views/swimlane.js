// pypto_lab swimlane renderer: one canvas, typed columns, no dependencies.
// Used as an anywidget module (renderWidget) and inlined in Timeline._repr_html_ (mountStatic).
// The wheel scrolls the lanes (and the page once the lanes are at an end, as Perfetto and Nsight
// do), Ctrl/Meta+wheel zooms around the pointer, shift+wheel pans, drag pans, a double click
// resets, a click on a bar selects it (details, its start reason, dependency arrows). Under each core, optional buffer
// tracks draw the bytes of UB / L1 / L0A / L0B / L0C live over time (capacity dashed). Bars narrower than a pixel that fall
// on the same pixel are drawn once, so 100,000 tasks stay interactive.
var PyptoSwimlane = (function () {
  "use strict";
  var PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#86bcb6", "#d37295", "#8cd17d", "#499894", "#f1ce63", "#a0cbe8", "#ffbe7d"];
  var SPAN_COLOURS = {launch: "#bab0ac", stitch: "#8c8c6c", submit: "#6c7c8c", dispatch: "#a5a5a5",
    complete: "#c7c7c7", "wait device": "#e0a0a0"};
  var VARIANT_COLOURS = ["#4e79a7", "#59a14f", "#e15759"];
  var GUTTER = 150, RULER = 24, HEADER = 18, BUF_H = 16, FONT = "11px sans-serif";
  var MAX_AUTO_BUFFER_LANES = 16;  // buffer tracks start shown when at most this many cores have them
  var TYPES = {"<f8": Float64Array, "<f4": Float32Array, "<i4": Int32Array, "<u4": Uint32Array,
    "<i2": Int16Array, "<u2": Uint16Array, "|i1": Int8Array, "|u1": Uint8Array};

  function columns(meta, buffer) {
    var out = {};
    meta.layout.forEach(function (c) {
      var T = TYPES[c[1]];
      out[c[0]] = new T(buffer, c[2], c[3]);
    });
    return out;
  }

  function fmtUs(us) {
    var a = Math.abs(us);
    if (a >= 1000) return (us / 1000).toFixed(a >= 10000 ? 1 : 2) + " ms";
    if (a >= 10) return us.toFixed(1) + " µs";
    if (a >= 0.1) return us.toFixed(2) + " µs";
    return (us * 1000).toFixed(0) + " ns";
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }

  function h(tag, style, text) {
    var e = document.createElement(tag);
    if (style) e.style.cssText = style;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  function hueColour(i) {  // many distinct values (loop iterations, device tasks): walk the hue circle
    var hue = (i * 137.508) % 360;
    return "hsl(" + hue.toFixed(0) + ",55%," + (i % 2 ? 52 : 62) + "%)";
  }

  function Chart(el, meta, buffer, host) {
    this.el = el; this.host = host || null;
    this.colourBy = "leaf"; this.showCritical = false;
    this.collapsed = {};
    this.build();
    this.load(meta, buffer);
    el.pyptoChart = this;  // for tests and the console
  }

  // canvas position [x, y] of the middle of bar i (its lane's row, or its collapsed group's)
  Chart.prototype.pointOf = function (i) {
    var rows = this.rows(), c = this.col;
    return [(this.xOf(c.start[i]) + this.xOf(c.start[i] + c.dur[i])) / 2, this.barY(i, RULER - this.scrollY, rows)];
  };

  // (re)load a timeline into the same DOM (a Tune change): keeps the colour mode and listeners
  Chart.prototype.load = function (meta, buffer) {
    this.meta = meta;
    this.col = columns(meta, buffer);
    this.n = meta.n;
    this.selected = -1; this.scrollY = 0;
    var end = meta.x_max || meta.makespan || 1;
    this.full = [0, end * 1.01];
    this.view = this.full.slice();
    this.index();
    this.titleEl.textContent = meta.title || "";
    this.critLabel.textContent = " critical path (" + meta.critical + " tasks)";
    this.details.innerHTML = "";
    var B = meta.buffers, withTracks = 0;
    if (B) B.lanes.forEach(function (m) { if (m.length) withTracks++; });
    if (!B) this.showBuffers = false;
    else if (this.showBuffers === undefined) this.showBuffers = withTracks <= MAX_AUTO_BUFFER_LANES;
    this.bufLabel.style.display = B ? "" : "none";
    this.bufBox.checked = !!this.showBuffers;
    if (this.dlButton) this.dlButton.style.display = meta.no_download || !meta.n ? "none" : "";
    this.legend();
    this.draw();
  };

  Chart.prototype.index = function () {
    // bars arrive sorted by lane then start: each lane is one contiguous range
    var lanes = this.meta.lanes, c = this.col, n = this.n;
    this.laneFirst = new Int32Array(lanes.length + 1);
    this.laneMaxDur = new Float64Array(lanes.length);
    var l = 0;
    for (var i = 0; i < n; i++) {
      var li = c.lane[i];
      while (l < li) this.laneFirst[++l] = i;
      if (c.dur[i] > this.laneMaxDur[li]) this.laneMaxDur[li] = c.dur[i];
    }
    while (l < lanes.length) this.laneFirst[++l] = n;
    // dependency lists per bar (CSR) in both directions
    var e = this.meta.edges;
    this.succ = csr(c.src, c.dst, n, e);
    this.pred = csr(c.dst, c.src, n, e);
    this.groups = [];
    var kinds = {};
    for (var k = 0; k < lanes.length; k++) {
      var kind = lanes[k].kind;
      if (!(kind in kinds)) { kinds[kind] = this.groups.length; this.groups.push({kind: kind, lanes: []}); }
      this.groups[kinds[kind]].lanes.push(k);
    }
    // big groups start collapsed when there are many lanes in all, so the chart fits a screen
    // the biggest groups start collapsed until about 40 lanes are left, so the chart fits a screen
    var shown = lanes.length, self = this;
    this.groups.slice().sort(function (a, b) { return b.lanes.length - a.lanes.length; }).forEach(function (g) {
      if (g.kind in self.collapsed) { if (self.collapsed[g.kind]) shown -= g.lanes.length; return; }
      self.collapsed[g.kind] = false;  // every lane shown; the wheel scrolls to them
      if (self.collapsed[g.kind]) shown -= g.lanes.length;
    });
  };

  function csr(from, to, n, e) {
    var ptr = new Int32Array(n + 1), list = new Int32Array(e);
    for (var i = 0; i < e; i++) ptr[from[i] + 1]++;
    for (var j = 0; j < n; j++) ptr[j + 1] += ptr[j];
    var fill = ptr.slice(0, n);
    for (var k = 0; k < e; k++) list[fill[from[k]]++] = to[k];
    return {ptr: ptr, list: list};
  }

  Chart.prototype.build = function () {
    var self = this;
    var el = this.el;
    el.innerHTML = "";
    el.classList.add("pypto-swimlane");
    el.style.cssText += ";width:100%;font:12px sans-serif;position:relative;box-sizing:border-box";
    var bar = h("div", "display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:2px 0 4px 0");
    this.titleEl = h("b", "margin-right:6px");
    bar.appendChild(this.titleEl);
    var sel = h("select", "font-size:12px");
    sel.className = "pypto-timeline-colour";
    [["leaf", "colour by leaf"], ["loop", "by loop index"], ["device", "by device task"],
      ["variant", "by main/tail variant"]].forEach(function (o) {
      var opt = h("option", "", o[1]); opt.value = o[0]; sel.appendChild(opt);
    });
    sel.onchange = function () { self.colourBy = sel.value; self.legend(); self.draw(); };
    bar.appendChild(sel);
    var crit = h("label", "cursor:pointer");
    var box = h("input"); box.type = "checkbox"; box.className = "pypto-timeline-critical";
    box.onchange = function () { self.showCritical = box.checked; self.draw(); };
    this.critLabel = h("span");
    crit.appendChild(box); crit.appendChild(this.critLabel);
    bar.appendChild(crit);
    var bufs = this.bufLabel = h("label", "cursor:pointer");
    var bbox = this.bufBox = h("input"); bbox.type = "checkbox"; bbox.className = "pypto-timeline-buffers";
    bbox.onchange = function () { self.showBuffers = bbox.checked; self.legend(); self.draw(); };
    bufs.appendChild(bbox); bufs.appendChild(h("span", "", " buffer tracks"));
    bufs.title = "under each core: bytes of UB / L1 / L0A / L0B / L0C live over time, the capacity dashed";
    bar.appendChild(bufs);
    var reset = h("button", "font-size:12px", "reset zoom");
    reset.onclick = function () { self.view = self.full.slice(); self.scrollY = 0; self.draw(); };
    bar.appendChild(reset);
    if (this.host && this.host.download) {
      var dl = this.dlButton = h("button", "font-size:12px", "download Chrome trace");
      dl.className = "pypto-timeline-download";
      dl.title = "built on click; open it in ui.perfetto.dev or chrome://tracing";
      dl.onclick = function () { self.host.download(); };
      bar.appendChild(dl);
    }
    bar.appendChild(h("span", "color:#777", "wheel: scroll lanes · ctrl/⌘+wheel: zoom · drag or shift+wheel: pan · double-click: reset · click a bar: details, why it started then"));
    el.appendChild(bar);
    this.legendBox = h("div", "display:flex;flex-wrap:wrap;gap:4px 12px;margin:0 0 4px 0;font-size:11px");
    el.appendChild(this.legendBox);
    this.canvas = h("canvas", "display:block;width:100%;cursor:crosshair;border:1px solid #e4e4e4");
    this.canvas.className = "pypto-timeline-canvas";
    el.appendChild(this.canvas);
    this.tip = h("div", "position:absolute;display:none;pointer-events:none;background:rgba(255,255,255,.96);" +
      "border:1px solid #bbb;border-radius:3px;padding:4px 6px;font:11px sans-serif;z-index:10;max-width:420px;" +
      "box-shadow:0 1px 4px rgba(0,0,0,.15)");
    el.appendChild(this.tip);
    this.details = h("div", "margin-top:6px");
    this.details.className = "pypto-timeline-details";
    el.appendChild(this.details);
    this.events();
    var ro = typeof ResizeObserver !== "undefined" ? new ResizeObserver(function () { if (self.meta) self.draw(); }) : null;
    if (ro) ro.observe(el);
  };

  Chart.prototype.colourOf = function (i) {
    var c = this.col;
    if (c.aicpu[i]) return SPAN_COLOURS[this.meta.spans[c.group[i]]] || "#999";
    switch (this.colourBy) {
      case "loop": return c.loop[i] < 0 ? "#999" : hueColour(c.loop[i]);
      case "device": return c.device[i] < 0 ? "#999" : hueColour(c.device[i]);
      case "variant": return VARIANT_COLOURS[c.variant[i]];
      default: return PALETTE[c.group[i] % PALETTE.length];
    }
  };

  Chart.prototype.legend = function () {
    var box = this.legendBox, meta = this.meta;
    box.innerHTML = "";
    var items = [];
    if (this.colourBy === "leaf") items = meta.leaves.map(function (n, i) { return [PALETTE[i % PALETTE.length], n]; });
    else if (this.colourBy === "variant") items = [[VARIANT_COLOURS[0], "no variants"], [VARIANT_COLOURS[1], "main"], [VARIANT_COLOURS[2], "tail"]];
    else if (this.colourBy === "loop") items = [[hueColour(0), meta.loops.length + " loop iterations (root instances), one hue each"]];
    else items = [[hueColour(0), "one hue per device task"]];
    (meta.spans_used || []).forEach(function (k) { var s = meta.spans[k]; items.push([SPAN_COLOURS[s] || "#999", "AICPU " + s]); });
    if (this.showBuffers && meta.buffers) items.push(["#4e79a7", "bytes live (buffer tracks; dashed red: capacity)"]);
    items.forEach(function (it) {
      var span = h("span", "white-space:nowrap");
      span.appendChild(h("span", "display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px;background:" + it[0]));
      span.appendChild(document.createTextNode(it[1]));
      box.appendChild(span);
    });
    if (this.showBuffers && meta.buffers) meta.buffers.flags.forEach(function (f) {
      var over = f.indexOf("over its capacity") >= 0;
      var flag = h("span", "white-space:nowrap;color:" + (over ? "#cf222e" : "#9a6700"), (over ? "⚠ " : "○ idle: ") + f);
      flag.className = over ? "pypto-buffer-flag pypto-buffer-over" : "pypto-buffer-flag pypto-buffer-idle";
      box.appendChild(flag);
    });
  };

  // rows: group headers and the lanes of expanded groups, top to bottom
  Chart.prototype.rows = function () {
    var rows = [], lh = this.laneHeight();
    var y = 0, self = this;
    this.laneRow = new Int32Array(this.meta.lanes.length).fill(-1);
    this.groups.forEach(function (g) {
      var collapsed = !!self.collapsed[g.kind];
      rows.push({header: g, y: y, h: HEADER});
      var headerRow = rows.length - 1;
      y += HEADER;
      g.lanes.forEach(function (l) {
        if (collapsed) { self.laneRow[l] = headerRow; return; }
        self.laneRow[l] = rows.length;
        rows.push({lane: l, y: y, h: lh});
        y += lh;
        var B = self.meta.buffers;
        if (self.showBuffers && B && B.lanes[l]) B.lanes[l].forEach(function (m) {
          rows.push({lane: l, buffer: m, y: y, h: BUF_H});
          y += BUF_H;
        });
      });
    });
    this.contentHeight = y;
    return rows;
  };

  Chart.prototype.laneHeight = function () {
    var shown = 0, self = this;
    this.groups.forEach(function (g) { if (!self.collapsed[g.kind]) shown += g.lanes.length; });
    return shown > 60 ? 12 : shown > 30 ? 15 : 20;
  };

  Chart.prototype.size = function () {
    var w = Math.max(this.el.clientWidth || 800, 300);
    var rows = this.rows();
    var hgt = this.meta.height || Math.min(RULER + this.contentHeight + 4, 640);
    hgt = Math.max(hgt, RULER + 60);
    var dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(w * dpr) || this.canvas.height !== Math.round(hgt * dpr)) {
      this.canvas.width = Math.round(w * dpr); this.canvas.height = Math.round(hgt * dpr);
      this.canvas.style.height = hgt + "px";
    }
    this.W = w; this.H = hgt; this.dpr = dpr;
    this.maxScroll = Math.max(0, this.contentHeight - (hgt - RULER));
    this.scrollY = Math.min(Math.max(this.scrollY, 0), this.maxScroll);
    return rows;
  };

  Chart.prototype.xOf = function (t) { return GUTTER + (t - this.view[0]) / (this.view[1] - this.view[0]) * (this.W - GUTTER - 8); };
  Chart.prototype.tOf = function (x) { return this.view[0] + (x - GUTTER) / (this.W - GUTTER - 8) * (this.view[1] - this.view[0]); };

  Chart.prototype.draw = function () {
    var self = this;
    if (this.pending) return;
    this.pending = true;
    var raf = window.requestAnimationFrame || function (f) { return setTimeout(f, 0); };
    raf(function () { self.pending = false; self.paint(); });
  };

  Chart.prototype.paint = function () {
    var t0 = performance.now();
    var rows = this.size(), ctx = this.canvas.getContext("2d"), c = this.col, meta = this.meta;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, this.W, this.H);
    ctx.font = FONT;
    var top = RULER - this.scrollY, self = this;
    var dim = this.showCritical;
    // lanes
    ctx.save();
    ctx.beginPath(); ctx.rect(0, RULER, this.W, this.H - RULER); ctx.clip();
    rows.forEach(function (r, ri) {
      var y = top + r.y;
      if (y + r.h < RULER || y > self.H) return;
      if (r.header) {
        ctx.fillStyle = "#f1f3f5"; ctx.fillRect(0, y, self.W, r.h);
        ctx.fillStyle = "#333";
        var g = r.header, collapsed = !!self.collapsed[g.kind];
        var busy = 0; g.lanes.forEach(function (l) { busy += meta.lanes[l].busy; });
        var cores = (meta.cores || {})[g.kind];
        ctx.fillText((collapsed ? "▸ " : "▾ ") + g.kind + " (" + g.lanes.length + (cores && cores !== g.lanes.length ? " of " + cores : "") + ")  " +
          (g.lanes.length ? (100 * busy / g.lanes.length).toFixed(0) + "% busy" : ""), 4, y + 13);
        if (collapsed) g.lanes.forEach(function (l) { self.paintLane(ctx, l, y + 3, r.h - 5, dim, true); });
        return;
      }
      if (r.buffer) { self.paintBufferRow(ctx, r, y); return; }
      if (ri % 2) { ctx.fillStyle = "#fafafa"; ctx.fillRect(GUTTER, y, self.W - GUTTER, r.h); }
      var lane = meta.lanes[r.lane];
      ctx.fillStyle = "#333";
      ctx.fillText(lane.name, 14, y + r.h / 2 + 4);
      ctx.fillStyle = "#888";
      var pct = (100 * lane.busy).toFixed(0) + "%";
      ctx.fillText(pct, GUTTER - 6 - ctx.measureText(pct).width, y + r.h / 2 + 4);
      self.paintLane(ctx, r.lane, y + 1, r.h - 2, dim, false);
    });
    ctx.restore();
    ctx.save();  // arrows and outlines stay inside the visible lanes, right of the labels
    ctx.beginPath(); ctx.rect(GUTTER, RULER, this.W - GUTTER, this.H - RULER); ctx.clip();
    this.paintLinks(ctx, rows, top);
    ctx.restore();
    // gutter line and the ruler on top, which stays while the lanes scroll
    ctx.strokeStyle = "#ddd"; ctx.beginPath(); ctx.moveTo(GUTTER - 0.5, RULER); ctx.lineTo(GUTTER - 0.5, this.H); ctx.stroke();
    this.paintRuler(ctx);
    this.lastPaintMs = performance.now() - t0;
    this.el.setAttribute("data-paint-ms", this.lastPaintMs.toFixed(1));
    if (this.maxScroll > 0) {  // a scroll indicator
      var trackH = this.H - RULER, thumb = Math.max(20, trackH * trackH / this.contentHeight);
      var ty = RULER + (trackH - thumb) * (this.scrollY / this.maxScroll);
      ctx.fillStyle = "rgba(0,0,0,.25)"; ctx.fillRect(this.W - 5, ty, 4, thumb);
    }
  };

  Chart.prototype.paintLane = function (ctx, l, y, hgt, dim, merged) {
    var c = this.col, lo = this.laneFirst[l], hi = this.laneFirst[l + 1];
    var v0 = this.view[0] - this.laneMaxDur[l], v1 = this.view[1];
    // first bar that may be visible: binary search on the start column
    var a = lo, b = hi;
    while (a < b) { var m = (a + b) >> 1; if (c.start[m] < v0) a = m + 1; else b = m; }
    var lastPx = -1, lastColour = "", labelled = !merged && hgt >= 11;
    var scale = (this.W - GUTTER - 8) / (this.view[1] - this.view[0]);
    for (var i = a; i < hi; i++) {
      var s = c.start[i];
      if (s > v1) break;
      var x0 = GUTTER + (s - this.view[0]) * scale, x1 = x0 + c.dur[i] * scale;
      if (x1 < GUTTER) continue;
      if (x0 < GUTTER) x0 = GUTTER;
      var w = x1 - x0;
      if (w < 1) {  // sub-pixel bars: one per pixel column (the first), so the cost stays per pixel
        var px = x0 | 0;
        if (px === lastPx) continue;
        lastPx = px; w = 1;
      } else { lastPx = x1 | 0; }
      var colour = this.colourOf(i);
      ctx.globalAlpha = dim && !c.critical[i] ? 0.18 : 1;
      if (colour !== lastColour) { ctx.fillStyle = colour; lastColour = colour; }
      ctx.fillRect(x0, y, w, hgt);
      if (labelled && w > 36) {
        var name = c.aicpu[i] ? this.meta.spans[c.group[i]] : this.meta.leaves[c.group[i]];
        ctx.globalAlpha = 1; ctx.fillStyle = "#fff";
        ctx.save(); ctx.beginPath(); ctx.rect(x0, y, w, hgt); ctx.clip();
        ctx.fillText(name, x0 + 3, y + hgt / 2 + 4);
        ctx.restore(); ctx.fillStyle = colour;
      }
    }
    ctx.globalAlpha = 1;
  };

  function kb(n) { return (n / 1024).toLocaleString(undefined, {maximumFractionDigits: 1}) + " KB"; }

  // one buffer track: the bytes of memory r.buffer.mem live on lane r.lane, each task's leaf
  // profile drawn inside its bar (ops equally long), scaled to the capacity (or the peak, if over)
  Chart.prototype.paintBufferRow = function (ctx, r, y) {
    var B = this.meta.buffers, m = r.buffer, cap = B.capacity[m.mem] || 1, c = this.col;
    var over = m.plan > cap, ymax = Math.max(cap, m.peak, 1);
    ctx.fillStyle = "#f5f8fc"; ctx.fillRect(GUTTER, y, this.W - GUTTER, r.h);
    ctx.fillStyle = over ? "#cf222e" : "#57606a";
    ctx.fillText((over ? "⚠ " : "") + m.mem, 24, y + r.h / 2 + 4);
    var pct = (100 * m.peak / cap).toFixed(0) + "%";
    ctx.fillText(pct, GUTTER - 6 - ctx.measureText(pct).width, y + r.h / 2 + 4);
    var l = r.lane, lo = this.laneFirst[l], hi = this.laneFirst[l + 1];
    var v0 = this.view[0] - this.laneMaxDur[l], v1 = this.view[1];
    var a = lo, b = hi;
    while (a < b) { var mid = (a + b) >> 1; if (c.start[mid] < v0) a = mid + 1; else b = mid; }
    var scale = (this.W - GUTTER - 8) / (this.view[1] - this.view[0]), hgt = r.h - 2, base = y + r.h - 1;
    ctx.fillStyle = over ? "rgba(225,87,89,.85)" : "rgba(78,121,167,.8)";
    var lastPx = -1, lastVal = -1;
    for (var i = a; i < hi; i++) {
      var s = c.start[i];
      if (s > v1) break;
      if (c.aicpu[i]) continue;
      var prof = B.profiles[c.group[i]], live = prof && prof.live[m.mem];
      if (!live) continue;
      var x0 = GUTTER + (s - this.view[0]) * scale, x1 = x0 + c.dur[i] * scale, n = live.length;
      if (x1 < GUTTER) continue;
      if (x1 - x0 < 2 * n) {  // too narrow for its ops: one step at the task's peak, once per pixel
        var pk = 0;
        for (var k = 0; k < n; k++) if (live[k] > pk) pk = live[k];
        var px = Math.max(x0, GUTTER) | 0;
        if (px === lastPx && pk <= lastVal) continue;
        lastPx = px; lastVal = pk;
        var hh = pk > 0 ? Math.max(2, hgt * pk / ymax) : 0;  // a few bytes still show
        ctx.fillRect(Math.max(x0, GUTTER), base - hh, Math.max(x1 - Math.max(x0, GUTTER), 1), hh);
        continue;
      }
      lastPx = -1;
      for (var q = 0; q < n; q++) {
        var xa = Math.max(x0 + (x1 - x0) * q / n, GUTTER), xb = x0 + (x1 - x0) * (q + 1) / n;
        if (xb <= xa || !live[q]) continue;
        var hq = Math.max(2, hgt * live[q] / ymax);
        ctx.fillRect(xa, base - hq, xb - xa, hq);
      }
    }
    var cy = Math.round(base - hgt * cap / ymax) + 0.5;
    ctx.strokeStyle = "#cf222e"; ctx.setLineDash([4, 3]);
    ctx.beginPath(); ctx.moveTo(GUTTER, cy); ctx.lineTo(this.W, cy); ctx.stroke();
    ctx.setLineDash([]);
  };

  // the buffer-track tooltip of bar i at time t: bytes live in mem during the op running then,
  // its buffers, the op and its kernel line
  Chart.prototype.describeBuffer = function (i, mem, t) {
    var c = this.col, B = this.meta.buffers, prof = B && B.profiles[c.group[i]];
    if (!prof || !prof.live[mem]) return "";
    var live = prof.live[mem], n = live.length;
    var k = Math.min(n - 1, Math.max(0, Math.floor((t - c.start[i]) / (c.dur[i] || 1) * n)));
    var cap = B.capacity[mem], names = prof.names[mem][k] || [], plan = prof.footprint[mem];
    return "<b>" + esc(mem) + "</b>: " + kb(live[k]) + " live of " + kb(cap) + " (" + (100 * live[k] / cap).toFixed(0) + "%)" +
      " during op " + k + " " + esc(prof.ops[k] || "") + (names.length ? " · buffers " + esc(names.join(", ")) : "") +
      (prof.lines[k] ? "<br>kernel line " + esc(prof.lines[k]) : "") +
      "<br>leaf plan: " + kb(plan) + (plan > cap ? ' <b style="color:#cf222e">over capacity</b>' : "");
  };

  Chart.prototype.barY = function (i, top, rows) {
    var r = rows[this.laneRow[this.col.lane[i]]];
    return top + r.y + r.h / 2;
  };

  Chart.prototype.arrow = function (ctx, x0, y0, x1, y1) {
    ctx.beginPath(); ctx.moveTo(x0, y0);
    var mx = (x0 + x1) / 2;
    ctx.bezierCurveTo(mx, y0, mx, y1, x1, y1); ctx.stroke();
    ctx.beginPath(); ctx.moveTo(x1, y1); ctx.lineTo(x1 - 6, y1 - 3); ctx.lineTo(x1 - 6, y1 + 3); ctx.closePath(); ctx.fill();
  };

  Chart.prototype.paintLinks = function (ctx, rows, top) {
    var c = this.col, self = this;
    var chains = [];
    if (this.showCritical) {  // the chain, bar to bar, in start order
      var chain = [];
      for (var i = 0; i < this.n; i++) if (c.critical[i]) chain.push(i);
      chain.sort(function (a, b) { return c.start[a] - c.start[b]; });
      chains.push([chain, "#d62728"]);
    }
    if (this.lateChain) chains.push([this.lateChain, "#7b3fb5"]);
    for (var q0 = 0; q0 < chains.length; q0++) {
      chain = chains[q0][0];
      ctx.strokeStyle = chains[q0][1]; ctx.fillStyle = chains[q0][1]; ctx.lineWidth = 1.5;
      for (var k = 0; k < chain.length; k++) {
        var j = chain[k], y = this.barY(j, top, rows);
        ctx.strokeRect(this.xOf(c.start[j]), y - 5, Math.max(this.xOf(c.start[j] + c.dur[j]) - this.xOf(c.start[j]), 1), 10);
        if (k) { var p = chain[k - 1]; this.arrow(ctx, this.xOf(c.start[p] + c.dur[p]), this.barY(p, top, rows), this.xOf(c.start[j]), y); }
      }
      ctx.lineWidth = 1;
    }
    var s = this.selected;
    if (s < 0) return;
    var ys = this.barY(s, top, rows), xs0 = this.xOf(c.start[s]), xs1 = this.xOf(c.start[s] + c.dur[s]);
    ctx.strokeStyle = "#000"; ctx.lineWidth = 2;
    ctx.strokeRect(xs0 - 1, ys - 7, Math.max(xs1 - xs0, 1) + 2, 14);
    ctx.lineWidth = 1.2;
    ctx.strokeStyle = ctx.fillStyle = "#1f5fbf";
    for (var a = this.pred.ptr[s]; a < this.pred.ptr[s + 1]; a++) {
      var p2 = this.pred.list[a];
      this.arrow(ctx, self.xOf(c.start[p2] + c.dur[p2]), self.barY(p2, top, rows), xs0, ys);
    }
    ctx.strokeStyle = ctx.fillStyle = "#e07b00";
    for (var b = this.succ.ptr[s]; b < this.succ.ptr[s + 1]; b++) {
      var q = this.succ.list[b];
      this.arrow(ctx, xs1, ys, self.xOf(c.start[q]), self.barY(q, top, rows));
    }
    ctx.lineWidth = 1;
  };

  Chart.prototype.paintRuler = function (ctx) {
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, this.W, RULER);
    var meta = this.meta, labelEnd = -1;
    if (meta.first_task > 0 && this.xOf(meta.first_task) > GUTTER) {  // the launch before the first task
      var x0 = Math.max(this.xOf(0), GUTTER), x1 = this.xOf(meta.first_task);
      ctx.fillStyle = "#efe9e2"; ctx.fillRect(x0, 0, x1 - x0, RULER - 1);
      var label = "launch " + fmtUs(meta.first_task), lw = ctx.measureText(label).width;
      if (x1 - x0 > lw + 6) { ctx.fillStyle = "#6b5d4f"; ctx.fillText(label, x0 + 3, 10); labelEnd = x0 + lw + 8; }
    }
    var span = this.view[1] - this.view[0];
    var step = niceStep(span / Math.max((this.W - GUTTER) / 90, 1));
    ctx.fillStyle = "#333"; ctx.strokeStyle = "#999";
    var first = Math.ceil(this.view[0] / step) * step;
    ctx.beginPath();
    for (var t = first; t <= this.view[1]; t += step) {
      var x = Math.round(this.xOf(t)) + 0.5;
      ctx.moveTo(x, RULER - 6); ctx.lineTo(x, RULER);
      var tick = fmtUs(t);
      if (x + 2 >= labelEnd) ctx.fillText(tick, x + 2, RULER - 8);  // clear of the launch label
    }
    ctx.moveTo(GUTTER, RULER - 0.5); ctx.lineTo(this.W, RULER - 0.5);
    ctx.stroke();
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, GUTTER - 1, RULER);
    ctx.fillStyle = "#555";
    ctx.fillText("time (µs) ", 4, 15);
  };

  // hit test: the bar under (x, y), or -1; a collapsed group row searches its lanes
  Chart.prototype.hit = function (x, y) {
    if (y < RULER || x < GUTTER) return -1;
    var rows = this.rows(), yy = y - RULER + this.scrollY, row = null;
    for (var r = 0; r < rows.length; r++) if (yy >= rows[r].y && yy < rows[r].y + rows[r].h) { row = rows[r]; break; }
    if (!row) return -1;
    var lanes = row.header ? (this.collapsed[row.header.kind] ? row.header.lanes : []) : [row.lane];
    var t = this.tOf(x), slack = 3 * (this.view[1] - this.view[0]) / (this.W - GUTTER), best = -1, bestD = Infinity;
    var c = this.col;
    for (var k = 0; k < lanes.length; k++) {
      var l = lanes[k], lo = this.laneFirst[l], hi = this.laneFirst[l + 1];
      var a = lo, b = hi;
      while (a < b) { var m = (a + b) >> 1; if (c.start[m] < t - this.laneMaxDur[l] - slack) a = m + 1; else b = m; }
      for (var i = a; i < hi && c.start[i] <= t + slack; i++) {
        var d = t < c.start[i] ? c.start[i] - t : t > c.start[i] + c.dur[i] ? t - c.start[i] - c.dur[i] : 0;
        if (d <= slack && d < bestD) { best = i; bestD = d; }
      }
    }
    return best;
  };

  Chart.prototype.rowAt = function (y) {
    var rows = this.rows(), yy = y - RULER + this.scrollY;
    for (var r = 0; r < rows.length; r++) if (yy >= rows[r].y && yy < rows[r].y + rows[r].h) return rows[r];
    return null;
  };

  Chart.prototype.describe = function (i) {
    var c = this.col, meta = this.meta, lane = meta.lanes[c.lane[i]].name;
    var lines = [];
    if (c.aicpu[i]) {
      var span = meta.spans[c.group[i]], what = "";
      if (c.task[i] >= 0) {
        what = span === "dispatch" ? " (dispatched task " + c.task[i] + (c.count && c.count[i] > 1 ? " and " + (c.count[i] - 1) + " more" : "") + ")"
          : " (task " + c.task[i] + ")";
      }
      lines.push("<b>" + esc(span) + "</b> on AICPU " + esc(lane) + what);
    } else {
      lines.push("<b>" + esc(meta.leaves[c.group[i]]) + "</b>" + (c.variant[i] ? " (" + ["", "main", "tail"][c.variant[i]] + ")" : "") +
        (c.task[i] >= 0 ? " · task " + c.task[i] : "") + " on " + esc(lane));
      if (c.loop[i] >= 0 && meta.loops[c.loop[i]] !== undefined) lines.push("loop " + esc(meta.loops[c.loop[i]]));
      if (c.device[i] >= 0) lines.push("device task " + c.device[i]);
    }
    var cyc = meta.cycles_per_us ? " (" + Math.round(c.dur[i] * meta.cycles_per_us).toLocaleString() + " cycles)" : "";
    lines.push(fmtUs(c.dur[i]) + cyc + " from " + fmtUs(c.start[i]));
    if (c.cost[i] >= 0 && meta.costs[c.cost[i]]) {
      var pipes = meta.costs[c.cost[i]];
      lines.push("pipes: " + Object.keys(pipes).map(function (p) { return esc(p) + " " + pipes[p].toLocaleString(); }).join(", "));
    }
    var why = this.reasonText(i);
    if (why) lines.push("started: " + why);
    var np = this.pred.ptr[i + 1] - this.pred.ptr[i], ns = this.succ.ptr[i + 1] - this.succ.ptr[i];
    if (np || ns) lines.push(np + " predecessor(s), " + ns + " successor(s)" + (c.critical[i] ? " · on the critical path" : ""));
    return lines.join("<br>");
  };

  // why bar i started when it did, from the payload's reason and cause columns ("" if unknown)
  Chart.prototype.reasonText = function (i) {
    var c = this.col, meta = this.meta;
    if (c.aicpu[i] || !c.reason || c.reason[i] < 0 || !meta.reasons) return "";
    var kind = meta.reasons[c.reason[i]], j = c.cause[i];
    var who = j >= 0 ? "task " + c.task[j] + " (" + esc(meta.leaves[c.group[j]]) + " on " + esc(meta.lanes[c.lane[j]].name) +
      ", ended " + fmtUs(c.start[j] + c.dur[j]) + ")" : "";
    var wait = j >= 0 ? " · waited " + fmtUs(c.start[i] - c.start[j] - c.dur[j]) : "";
    switch (kind) {
      case "core busy": return "core busy with " + who;
      case "dependency": return "waiting for " + who + wait;
      case "scheduler queue": return "scheduler queue after " + who + wait;
      case "device task": return "its device task opened after " + who + " and the sync" + wait;
      default: return "launch and stitching (first tasks of a device task)";
    }
  };

  // the chain of causes from bar i back to the launch ("why is this late"), latest first
  Chart.prototype.causeChain = function (i) {
    var out = [], c = this.col, seen = 0;
    while (i >= 0 && seen++ <= this.n) { out.push(i); i = c.cause ? c.cause[i] : -1; }
    return out.reverse();
  };

  Chart.prototype.select = function (i) {
    this.selected = i;
    this.lateChain = null;
    this.draw();
    if (i < 0) { this.details.innerHTML = ""; return; }
    this.details.innerHTML = '<div style="border:1px solid #ddd;padding:6px;background:#fcfcfc">' + this.describe(i) +
      '<div class="pypto-timeline-late"></div><div class="pypto-timeline-details-more"></div></div>';
    var c = this.col, self = this;
    if (!c.aicpu[i] && c.cause && c.cause[i] >= 0) {
      var btn = h("button", "font-size:12px;margin:4px 0", "why is this late? (follow the causes back)");
      btn.className = "pypto-timeline-why-late";
      btn.onclick = function () {
        var chain = self.causeChain(i), list = self.details.querySelector(".pypto-timeline-late");
        self.lateChain = chain; self.draw();
        var rows = chain.slice().reverse().map(function (b) {
          return "<li>" + esc(self.meta.leaves[c.group[b]]) + " · task " + c.task[b] + " on " + esc(self.meta.lanes[c.lane[b]].name) +
            " from " + fmtUs(c.start[b]) + ": " + (self.reasonText(b) || "") + "</li>";
        });
        list.innerHTML = '<div style="margin:4px 0"><b>why is this late</b> (' + chain.length + " tasks back to the launch, purple arrows)</div>" +
          '<ol style="margin:0;padding-left:20px;max-height:220px;overflow:auto">' + rows.join("") + "</ol>";
      };
      this.details.querySelector(".pypto-timeline-late").appendChild(btn);
    }
    if (this.host && this.host.details && !c.aicpu[i] && c.task[i] >= 0) this.host.details(c.task[i]);
  };

  Chart.prototype.showDetails = function (task, html) {
    var s = this.selected;
    if (s < 0 || this.col.task[s] !== task) return;
    var more = this.details.querySelector(".pypto-timeline-details-more");
    if (more) more.innerHTML = html;
  };

  Chart.prototype.events = function () {
    var self = this, cv = this.canvas, drag = null;
    function pos(ev) { var r = cv.getBoundingClientRect(); return [ev.clientX - r.left, ev.clientY - r.top]; }
    cv.addEventListener("wheel", function (ev) {
      var p = pos(ev);
      if (!(ev.ctrlKey || ev.metaKey)) {
        if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {  // pan in time
          ev.preventDefault();
          var d = ev.shiftKey ? (ev.deltaY || ev.deltaX) : ev.deltaX, span = self.view[1] - self.view[0];
          var shift = d * span / Math.max(self.W - GUTTER, 1);
          self.view = [self.view[0] + shift, self.view[1] + shift];
          self.draw(); return;
        }
        // scroll the lanes; at their top or bottom the page scrolls on (the event is not taken)
        var next = Math.min(Math.max(self.scrollY + ev.deltaY, 0), self.maxScroll || 0);
        if (next === self.scrollY) return;
        ev.preventDefault();
        self.scrollY = next; self.draw(); return;
      }
      ev.preventDefault();
      var t = self.tOf(Math.max(p[0], GUTTER)), k = Math.exp((ev.deltaY || 0) * 0.0015);
      var a = t - (t - self.view[0]) * k, b = t + (self.view[1] - t) * k;
      var minSpan = (self.full[1] - self.full[0]) * 1e-6;
      if (b - a < minSpan) return;
      self.view = [Math.max(a, self.full[0] - (b - a) * 0.5), Math.min(b, self.full[1] + (b - a) * 0.5)];
      if (self.view[1] - self.view[0] > self.full[1] - self.full[0]) self.view = self.full.slice();
      self.draw();
    }, {passive: false});
    cv.addEventListener("mousedown", function (ev) {
      var p = pos(ev);
      drag = {x: p[0], y: p[1], view: self.view.slice(), scroll: self.scrollY, moved: false};
    });
    window.addEventListener("mouseup", function (ev) {
      if (!drag) return;
      var d = drag; drag = null;
      if (d.moved) return;
      var p = pos(ev);
      var row = self.rowAt(p[1]);
      if (row && row.header && p[0] < GUTTER) {  // a click on a group header toggles it
        self.collapsed[row.header.kind] = !self.collapsed[row.header.kind];
        self.draw(); return;
      }
      if (p[0] >= 0 && p[1] >= 0 && p[0] <= self.W && p[1] <= self.H) self.select(self.hit(p[0], p[1]));
    });
    window.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      var p = pos(ev), dx = p[0] - drag.x, dy = p[1] - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (!drag.moved) return;
      var per = (drag.view[1] - drag.view[0]) / (self.W - GUTTER - 8);
      self.view = [drag.view[0] - dx * per, drag.view[1] - dx * per];
      self.scrollY = drag.scroll - dy;
      self.draw();
    });
    cv.addEventListener("mousemove", function (ev) {
      if (drag && drag.moved) { self.tip.style.display = "none"; return; }
      var p = pos(ev), i = self.hit(p[0], p[1]);
      var row = i < 0 ? self.rowAt(p[1]) : null;
      cv.style.cursor = i >= 0 || (row && row.header && p[0] < GUTTER) ? "pointer" : "crosshair";
      if (i < 0) { self.tip.style.display = "none"; return; }
      var brow = self.rowAt(p[1]);
      self.tip.innerHTML = (brow && brow.buffer ? self.describeBuffer(i, brow.buffer.mem, self.tOf(p[0])) + "<hr style='margin:3px 0'>" : "") +
        self.describe(i);
      self.tip.style.display = "block";
      var left = p[0] + 14, tw = self.tip.offsetWidth;
      if (left + tw > self.W) left = Math.max(0, p[0] - tw - 10);
      self.tip.style.left = left + "px";
      self.tip.style.top = (cv.offsetTop + p[1] + 14) + "px";
    });
    cv.addEventListener("mouseleave", function () { self.tip.style.display = "none"; });
    cv.addEventListener("dblclick", function () { self.view = self.full.slice(); self.scrollY = 0; self.draw(); });
  };

  function decodeBase64(text) {
    var bin = atob(text), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }

  function mountStatic(el, meta, base64) {
    return new Chart(el, meta, decodeBase64(base64), null);
  }

  // anywidget: traits "meta" (dict) and "data" (bytes, one binary frame); custom messages
  // {kind: "details", task} and {kind: "trace"} are answered by the kernel.
  function renderWidget(ctx) {
    var model = ctx.model, el = ctx.el, chart = null;
    var host = {
      details: function (task) { model.send({kind: "details", task: task}); },
      download: function () { model.send({kind: "trace"}); }
    };
    function mount() {
      var dv = model.get("data"), meta = model.get("meta");
      var bytes = dv ? (dv.buffer ? new Uint8Array(dv.buffer, dv.byteOffset, dv.byteLength) : new Uint8Array(dv)) : new Uint8Array(0);
      var copy = new Uint8Array(bytes.length); copy.set(bytes);  // aligned, owned by the chart
      if (chart) chart.load(meta, copy.buffer); else chart = new Chart(el, meta, copy.buffer, host);
      el.setAttribute("data-bars", String(meta.n));
    }
    function onMessage(msg, buffers) {
      if (!chart || !msg) return;
      if (msg.kind === "details") chart.showDetails(msg.task, msg.html);
      else if (msg.kind === "trace" && buffers && buffers.length) {
        var b = buffers[0], blob = new Blob([b.buffer ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : b], {type: "application/json"});
        var a = document.createElement("a");
        a.href = URL.createObjectURL(blob); a.download = msg.filename || "pypto_timeline.json";
        document.body.appendChild(a); a.click();
        setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
      }
    }
    mount();
    model.on("change:data", mount);
    model.on("msg:custom", onMessage);
    return function () { model.off("change:data", mount); model.off("msg:custom", onMessage); };
  }

  return {Chart: Chart, mountStatic: mountStatic, renderWidget: renderWidget, columns: columns};
})();
