// The ringleader run viewer: a space-time diagram of one run, drawn in SVG from the trace
// records embedded in the page (element #run-data), with step/play controls, each node's
// state at the current step and the properties' status at that step.
//
// Time flows downwards; one row per simulator step (every record of a step shares the row),
// one column (lifeline) per node. Rows outside the scrolled view are not drawn once a run is
// large (see FULL_ROWS), so ten thousand events stay responsive.
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var ROW_H = 22, TOP = 14, LEFT = 96, HEAD_H = 52, FULL_ROWS = 2500, FULL_NODES = 64;
  // Message-kind colours: distinct, and none of them the red of losses and violations; kinds
  // past the palette get hues spread by the golden angle (still distinct).
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#8c6d31", "#7b4173", "#3182bd", "#e6550d",
    "#31a354", "#756bb1", "#636363", "#a55194", "#6b6ecf"];
  function kindColour(j) {
    return j < PALETTE.length ? PALETTE[j] : "hsl(" + Math.round((j * 137.508) % 360) + ",60%," + (j % 2 ? 35 : 48) + "%)";
  }

  var data = JSON.parse(document.getElementById("run-data").textContent);
  // The records come column by column (crates/viz/src/columns.rs says how); this makes them
  // one object per record again, with the fields the trace file has.
  function decodeRecords(c) {
    if (!c || Array.isArray(c)) return c || [];
    var out = new Array(c.n), step = 0, time = 0, uidOfNode = !c.uid;
    for (var i = 0; i < c.n; i++) {
      step += c.step[i];
      time += c.time[i];
      var r = { step: step, time_ns: time, kind: c.kinds[c.kind[i]] };
      if (c.node[i] >= 0) { r.node = c.node[i]; if (uidOfNode && data.uids && data.uids[r.node] != null) r.uid = data.uids[r.node]; }
      out[i] = r;
    }
    function sparse(name, word) {
      var col = c[name];
      if (!col) return;
      for (var k = 0, at = 0; k < col.at.length; k++) {
        at += col.at[k];
        out[at][name] = word ? c.dict[col.v[k]] : col.v[k];
      }
    }
    ["uid", "peer", "msg_id", "msg_kind", "msg", "timer", "request", "event", "property", "detail", "lamport", "vector"]
      .forEach(function (name) { sparse(name, ["msg_kind", "msg", "timer", "request", "event", "property", "detail"].indexOf(name) >= 0); });
    return out;
  }
  var recs = decodeRecords(data.records);
  var report = data.report || {};

  // ---- nodes --------------------------------------------------------------------------
  var n = (data.uids || []).length;
  recs.forEach(function (r) {
    if (r.node != null && r.node + 1 > n) n = r.node + 1;
    if (r.peer != null && r.peer + 1 > n) n = r.peer + 1;
  });
  var uids = [];
  for (var i = 0; i < n; i++) uids.push(data.uids && data.uids[i] != null ? data.uids[i] : i + 1);
  var colOfUid = {};
  uids.forEach(function (u, i) { colOfUid[u] = i; });

  // ---- rows: one per step ---------------------------------------------------------------
  // A cut: where the driver left records out of a long run (it keeps the beginning, every fault
  // and violation, and the end). A row starts at each cut, and the cut is drawn as a break.
  var cutAt = {};
  (data.gaps || []).forEach(function (g) { cutAt[g.at] = g.left_out; });
  var rows = [], rowOf = new Array(recs.length);
  var t0 = recs.length ? recs[0].time_ns : 0;
  recs.forEach(function (r, k) {
    var last = rows[rows.length - 1];
    if (!last || last.step !== r.step || cutAt[k] != null) {
      last = { step: r.step, time: r.time_ns, first: k, last: k, cut: cutAt[k] };
      rows.push(last);
    } else {
      last.last = k;
    }
    rowOf[k] = rows.length - 1;
  });
  if (!rows.length) rows.push({ step: 0, time: t0, first: 0, last: -1 });

  // ---- messages, marks and labels -------------------------------------------------------
  var sends = {}, msgs = [], marks = [], labels = [], bars = [], pauses = [], bands = [], timers = [];
  // The legend lists the kinds that occur in the trace, not every kind the algorithm has.
  var kinds = {}, kindList = [];
  var openCs = {}, openFencing = {}, openPause = {}, openCut = {};
  function evName(e) { return e && (e.event || Object.keys(e)[0]); }
  recs.forEach(function (r, k) {
    var row = rowOf[k];
    if (r.msg_kind) kinds[r.msg_kind] = true;
    switch (r.kind) {
      case "send":
        if (r.msg_id != null) sends[r.msg_id] = k;
        break;
      case "deliver":
      case "drop": {
        var s = r.msg_id != null ? sends[r.msg_id] : undefined;
        var sr = s !== undefined ? recs[s] : null;
        msgs.push({
          from: r.peer != null ? r.peer : r.node, to: r.node, r0: s !== undefined ? rowOf[s] : row, r1: row,
          send: sr, recv: r, kind: r.msg_kind || "message", dropped: r.kind === "drop", reason: r.kind === "drop" ? r.detail || "lost" : null, sk: s, rk: k,
        });
        break;
      }
      case "crash": marks.push({ type: "crash", node: r.node, row: row, k: k }); break;
      case "recover": marks.push({ type: "recover", node: r.node, row: row, k: k }); break;
      case "pause": openPause[r.node] = row; break;
      case "resume":
        pauses.push({ node: r.node, r0: openPause[r.node] != null ? openPause[r.node] : row, r1: row });
        delete openPause[r.node];
        break;
      case "partition": openCut[r.detail || ""] = { row: row, detail: r.detail || "" }; break;
      case "heal": {
        var c = openCut[r.detail || ""];
        bands.push({ r0: c ? c.row : 0, r1: row, detail: r.detail || "" });
        delete openCut[r.detail || ""];
        break;
      }
      case "timer": timers.push({ node: r.node, row: row, rec: r, k: k }); break;
      case "request": {
        var q = r.request && (r.request.request || evName(r.request));
        if (q) labels.push({ node: r.node, row: row, text: "asks " + String(q).replace(/_/g, " "), cls: "label-other", k: k });
        break;
      }
      case "emit": {
        var e = r.event || {}, name = evName(e), text = null, cls = "label-other";
        if (name === "entered") { openCs[r.node] = row; openFencing[r.node] = e.fencing; }
        else if (name === "exited") {
          bars.push({ node: r.node, r0: openCs[r.node] != null ? openCs[r.node] : row, r1: row, fencing: openFencing[r.node] });
          delete openCs[r.node];
        }
        else if (name === "leader") {
          text = e.leader === r.uid ? "elected (leader " + e.leader + ")" : "leader = " + e.leader;
          if (e.term) text += " term " + e.term;
          cls = "label-leader";
        }
        else if (name === "leader_lost") { text = "leader unknown"; cls = "label-leader"; }
        else if (name === "election_started") { text = "starts election"; }
        else if (name === "super_peer") { text = "super-peer"; cls = "label-leader"; }
        else if (name === "suspect") { text = "suspects P" + e.node; cls = "label-suspect"; }
        else if (name === "trust") { text = "trusts P" + e.node; cls = "label-suspect"; }
        else if (name === "deadlock_detected") { text = "deadlock " + JSON.stringify(e.cycle); cls = "label-suspect"; }
        else if (name === "token_regenerated") { text = "regenerates token"; }
        else if (name === "clock_adjusted") { text = "clock " + (e.delta >= 0 ? "+" : "") + (e.delta / 1e6).toFixed(3) + " ms"; }
        else if (name === "aborted" || name === "gave_up" || name === "restarted" || name === "granted" || name === "queued") {
          text = name + (e.node != null ? " P" + e.node : "");
        }
        if (text) labels.push({ node: r.node, row: row, text: text, cls: cls, k: k });
        break;
      }
    }
  });
  var lastRow = rows.length - 1;
  Object.keys(openCs).forEach(function (nd) { bars.push({ node: +nd, r0: openCs[nd], r1: lastRow, open: true, fencing: openFencing[nd] }); });
  Object.keys(openPause).forEach(function (nd) { pauses.push({ node: +nd, r0: openPause[nd], r1: lastRow }); });
  Object.keys(openCut).forEach(function (d) { bands.push({ r0: openCut[d].row, r1: lastRow, detail: openCut[d].detail }); });
  // Several labels of one node at one step share one line.
  var merged = {};
  labels = labels.filter(function (lb) {
    var key = lb.node + ":" + lb.row, first = merged[key];
    if (!first) { merged[key] = lb; return true; }
    first.text += "; " + lb.text;
    if (lb.cls !== "label-other") first.cls = lb.cls;
    return false;
  });
  kindList = Object.keys(kinds).sort();
  var colour = {};
  kindList.forEach(function (k, j) { colour[k] = kindColour(j); });

  // Partition bands cover the first side's lifelines ("1,2|3,4,5@10ms..20ms": uids 1 and 2), the
  // side the playground writes first for the lifelines dragged over, whatever its size.
  bands.forEach(function (b) {
    var cut = b.detail.split("@")[0], sides = cut.split(/[|>]/);
    var side = function (t) { return (t || "").split(",").map(function (x) { return colOfUid[+x]; }).filter(function (c) { return c != null; }); };
    b.cols = side(sides[0]).sort(function (a, c) { return a - c; });
  });

  // The first violation: its window of steps, or the first violation record.
  var violation = null, vrec = null;
  recs.forEach(function (r, k) { if (!vrec && r.kind === "violation") vrec = { rec: r, k: k }; });
  var vw = data.violation;
  if (vw || vrec || (report.violations && report.violations.length)) {
    var start = vw ? vw[0] : vrec ? vrec.rec.step : report.violations[0].step;
    var end = vw && vw[1] != null ? vw[1] : start;
    var ra = rows.findIndex(function (x) { return x.step >= start; });
    if (ra < 0) ra = lastRow;
    var rb = ra;
    rows.forEach(function (x, j) { if (x.step <= end && j >= ra) rb = j; });
    var what = vrec ? vrec.rec : (report.violations || [])[0] || {};
    violation = { r0: ra, r1: rb, property: what.property || "violation", detail: what.detail || "" };
  }

  // ---- rows to jump to ---------------------------------------------------------------------
  var jumps = { fault: [], violation: [], leader: [], entry: [] };
  var FAULTS = { crash: 1, recover: 1, pause: 1, resume: 1, partition: 1, heal: 1 };
  recs.forEach(function (r, k) {
    var row = rowOf[k], name = r.kind === "emit" ? evName(r.event || {}) : null;
    if (FAULTS[r.kind]) jumps.fault.push(row);
    else if (r.kind === "violation") jumps.violation.push(row);
    else if (name === "leader" || name === "leader_lost" || name === "super_peer") jumps.leader.push(row);
    else if (name === "entered") jumps.entry.push(row);
  });
  if (violation) jumps.violation.push(violation.r0);
  Object.keys(jumps).forEach(function (k) {
    jumps[k] = jumps[k].sort(function (a, b) { return a - b; }).filter(function (r, i, l) { return i === 0 || l[i - 1] !== r; });
  });
  // ---- the filter ---------------------------------------------------------------------------
  // "P2" matches the records of node 2 (or with node 2 at the other end); any other text
  // matches the records whose JSON holds it, case aside.
  var filterText = "", textOf = [], matchCache = null;
  function matches(k) {
    if (k == null || k < 0) return false;
    var r = recs[k], m = /^p(\d+)$/.exec(filterText);
    if (m) return r.node === +m[1] || r.peer === +m[1];
    if (textOf[k] === undefined) textOf[k] = typed(JSON.stringify(r)).toLowerCase();
    return textOf[k].indexOf(filterText) >= 0;
  }
  function matchRows() {
    if (!filterText) return [];
    if (matchCache) return matchCache;
    matchCache = [];
    rows.forEach(function (rw, i) { for (var k = rw.first; k <= rw.last; k++) if (matches(k)) { matchCache.push(i); break; } });
    return matchCache;
  }

  // ---- state at a row -----------------------------------------------------------------
  function initialState() {
    var st = [];
    for (var i = 0; i < n; i++) {
      st.push({ status: "up", leader: null, holding: false, waiting: false, participant: false,
        superPeer: false, lamport: null, vector: null, suspects: {}, adjust: 0, fencing: null });
    }
    return st;
  }
  var cache = { row: -1, upTo: -1, st: initialState(), violated: {} };
  function stateAt(row) {
    if (row < cache.row) cache = { row: -1, upTo: -1, st: initialState(), violated: {} };
    var st = cache.st, upTo = rows[row].last;
    for (var k = cache.upTo + 1; k <= upTo; k++) {
      var r = recs[k];
      if (r.kind === "violation" && r.property && cache.violated[r.property] == null) cache.violated[r.property] = r.step;
      if (r.node == null || !st[r.node]) continue;
      var s = st[r.node];
      if (r.lamport != null) s.lamport = r.lamport;
      if (r.vector) s.vector = r.vector;
      switch (r.kind) {
        case "crash": s.status = "crashed"; s.holding = false; s.waiting = false; break;
        case "recover": s.status = "up"; s.leader = null; s.participant = false; break;
        case "pause": s.status = "paused"; break;
        case "resume": s.status = "up"; break;
        case "request": {
          var q = r.request && r.request.request;
          if (q === "acquire") s.waiting = true;
          if (q === "start_election") s.participant = true;
          break;
        }
        case "emit": {
          var e = r.event || {}, name = evName(e);
          if (name === "entered") { s.holding = true; s.waiting = false; s.fencing = e.fencing; }
          else if (name === "exited") s.holding = false;
          else if (name === "leader") { s.leader = e.leader; s.participant = false; }
          else if (name === "leader_lost") s.leader = null;
          else if (name === "election_started") s.participant = true;
          else if (name === "super_peer") s.superPeer = true;
          else if (name === "super_peer_lost") s.superPeer = false;
          else if (name === "suspect") s.suspects[e.node] = true;
          else if (name === "trust") delete s.suspects[e.node];
          else if (name === "clock_adjusted") s.adjust += e.delta || 0;
          break;
        }
      }
    }
    cache.row = row; cache.upTo = upTo;
    return cache;
  }
  function role(s, i) {
    if (s.status === "crashed") return "crashed";
    if (s.status === "paused") return "paused";
    if (s.holding) return "in critical section";
    if (s.waiting) return "waiting";
    if (s.superPeer) return "super-peer";
    if (s.leader != null && s.leader === uids[i]) return "leader";
    if (s.participant) return "participant";
    if (s.leader != null) return "follower";
    return "idle";
  }

  // ---- page ---------------------------------------------------------------------------
  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (a) { e.setAttribute(a, attrs[a]); });
    if (text != null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function sv(tag, attrs, parent, text) {
    var e = document.createElementNS(SVGNS, tag);
    if (attrs) Object.keys(attrs).forEach(function (a) { e.setAttribute(a, attrs[a]); });
    if (text != null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  // Time as the driver counts it: virtual or wall-clock milliseconds for the simulator and real
  // nodes; the model checker has no time, only steps (its records are stamped 1 ms per step).
  var STEPS_ONLY = data.source === "check";
  function ms(ns) {
    if (STEPS_ONLY) return "step " + Math.round(ns / 1e6);
    return ((ns - t0) / 1e6).toFixed(3) + " ms";
  }
  // Fencing tokens in the form each algorithm packs them: a Lamport stamp (ts · 2^20 + rank of
  // the uid) for the permission-based algorithms, an epoch in the high 32 bits above a counter
  // for the coordinator and the token ring.
  var STAMPED = { "lamport": 1, "ricart-agrawala": 1, "roucairol-carvalho": 1, "maekawa": 1 };
  var EPOCHED = { "central": 1, "central-timeout": 1, "token-ring": 1 };
  function fencingText(f) {
    if (typeof f !== "number") return String(f);
    if (STAMPED[report.algorithm]) return "(ts " + Math.floor(f / 1048576) + ", rank " + (f % 1048576) + ")";
    if (EPOCHED[report.algorithm]) return "(epoch " + Math.floor(f / 4294967296) + ", counter " + (f % 4294967296) + ")";
    return String(f);
  }
  // JSON text with every fencing token written in its typed form.
  function typed(json) {
    return json.replace(/("fencing":|fencing: )(\d+)/g, function (_, key, f) {
      return key[0] === '"' ? key + '"' + fencingText(+f) + '"' : key + fencingText(+f);
    });
  }

  var app = document.getElementById("app");
  var head = el("header", { id: "summary" }, app);
  el("h1", null, head, data.title || report.algorithm || "run");
  var facts = el("div", { class: "facts" }, head);
  if (report.algorithm) el("span", null, facts, "algorithm " + report.algorithm + (report.family ? " (" + report.family + ")" : ""));
  el("span", null, facts, n + " nodes");
  if (report.seed != null) el("span", null, facts, "seed " + report.seed);
  el("span", null, facts, data.total_records > recs.length
    ? recs.length + " of " + data.total_records + " records, " + rows.length + " steps drawn"
    : rows.length + " steps, " + recs.length + " records");
  var m = report.messages;
  if (m) el("span", { id: "counts" }, facts, "messages " + m.sent + " sent, " + m.delivered + " delivered, " + m.dropped +
    " dropped (" + Object.keys(m.by_kind || {}).map(function (k) { return k + " " + m.by_kind[k]; }).join(", ") + ")");
  var props = el("div", { id: "props-summary" }, head);
  (report.properties || []).forEach(function (p) {
    var name = typeof p === "string" ? p : p.name;
    var holds = typeof p === "string" ? true : p.holds;
    el("span", { class: "prop " + (holds ? "holds" : "violated") + (p.expected_violation ? " expected" : "") }, props, name);
  });
  var vline = el("div", null, head);
  el("span", { class: "verdict " + (data.ok ? "ok" : "bad"), id: "verdict" }, vline, data.verdict || "");
  if (report.repro) { var rp = el("div", null, head, "repro "); el("code", { id: "repro" }, rp, report.repro); }
  // A model checker's path can be explored by hand from its end in `ringleader ui`.
  if (report.explore) {
    var xp = el("div", null, head, "explore by hand from here: run ringleader ui, then open ");
    el("a", { id: "explore-link", href: report.explore, target: "_blank", rel: "noopener" }, xp, "its explore page at this path");
  }

  var controls = el("div", { id: "controls" }, app);
  var bFirst = el("button", { id: "first", title: "first step (Home)" }, controls, "|◀");
  var bPrev = el("button", { id: "prev", title: "previous step (←)" }, controls, "◀");
  var bPlay = el("button", { id: "play", title: "play / pause (space)" }, controls, "▶ play");
  var bNext = el("button", { id: "next", title: "next step (→)" }, controls, "▶");
  var bLast = el("button", { id: "last", title: "last step (End)" }, controls, "▶|");
  var slider = el("input", { id: "slider", type: "range", min: "0", max: String(lastRow), value: "0", "aria-label": "time" }, controls);
  var stepInfo = el("span", { id: "stepinfo" }, controls);
  var speed = el("select", { id: "speed", title: "play speed (+ and −): ×1 moves the cursor 80 px a second" }, controls);
  [0.25, 0.5, 1, 2, 4, 8, 16, 64].forEach(function (f) { var o = el("option", { value: String(f) }, speed, "×" + f); if (f === 1) o.selected = true; });
  var jumpSel = el("select", { id: "jump-kind", title: "jump to the previous or next of these" }, controls);
  [["fault", "fault"], ["violation", "violation"], ["leader", "leader change"], ["entry", "entry"], ["match", "filter match"]].forEach(function (o) {
    var count = o[0] === "match" ? "" : " (" + jumps[o[0]].length + ")";
    el("option", { value: o[0] }, jumpSel, o[1] + count);
  });
  var bJumpPrev = el("button", { id: "jump-prev", title: "previous (shift + F, V, L, E or N)" }, controls, "◀ jump");
  var bJumpNext = el("button", { id: "jump-next", title: "next (F fault, V violation, L leader change, E entry, N filter match)" }, controls, "jump ▶");
  var filterBox = el("input", { id: "filter", type: "search", placeholder: "filter: P2, grant, fencing… (/)", title: "keeps what matches (a node as P2, a message kind, any text of a record) and dims the rest; N jumps to the next match" }, controls);
  var wholeLabel = el("label", { title: "show the whole run, not only up to the cursor (W)" }, controls);
  var wholeBox = el("input", { id: "whole", type: "checkbox" }, wholeLabel);
  wholeLabel.appendChild(document.createTextNode(" whole run"));
  var bShowAll = el("button", { id: "show-all", title: "show every lifeline again, in node order" }, controls, "show all");
  bShowAll.style.display = "none";
  var groupBox = null;
  if (n > FULL_NODES) {
    var groupLabel = el("label", { title: "draw neighbouring nodes as one lifeline (about 48 groups); ⊞ on a group's head opens it" }, controls);
    groupBox = el("input", { id: "group", type: "checkbox" }, groupLabel);
    groupLabel.appendChild(document.createTextNode(" group lifelines"));
  }
  var axisSel = null;
  if (!STEPS_ONLY) {
    axisSel = el("select", { id: "axis", title: "time axis: rows placed by virtual time (long idle gaps compressed) or one per step" }, controls);
    el("option", { value: "time" }, axisSel, "time axis");
    el("option", { value: "step" }, axisSel, "step axis");
    axisSel.value = /axis=step/.test(location.hash) ? "step" : "time";
  }

  var legend = el("div", { id: "legend" }, app);
  kindList.forEach(function (k) {
    var key = el("span", { class: "key", "data-kind": k }, legend);
    el("span", { class: "swatch", style: "background:" + colour[k] }, key);
    el("span", null, key, k);
  });
  // Marks, only those the run has.
  var has = function (t) { return marks.some(function (mk) { return mk.type === t; }); };
  [["✗", "lost message", "#c81e1e", msgs.some(function (mg) { return mg.dropped; })],
    ["▮", "critical section", "#12b76a", bars.length > 0], ["▮", "paused", "#f5b400", pauses.length > 0],
    ["▭", "partition", "#7a5af8", bands.length > 0], ["✕", "crash", "#c81e1e", has("crash")],
    ["●", "recovery", "#137333", has("recover")], ["▭", "first violation", "#c80000", !!violation]]
    .forEach(function (x) {
      if (!x[3]) return;
      var key = el("span", { class: "key" }, legend);
      el("span", { style: "color:" + x[2] + ";margin-right:3px" }, key, x[0]);
      el("span", null, key, x[1]);
    });

  var notice = el("div", { id: "notice" }, app);
  var left = [];
  var cuts = data.gaps || [];
  if (cuts.length) {
    var headLen = cuts[0].at, tailLen = recs.length - cuts[cuts.length - 1].at, middle = recs.length - headLen - tailLen;
    left.push("the page holds " + recs.length + " of the run's " + data.total_records + " records: the first " + headLen +
      (middle ? ", " + middle + " faults and violations from the middle" : "") + " and the last " + tailLen +
      "; each break marked \u22ef says how many it left out");
  } else if (data.total_records > recs.length) left.push("the page holds the first " + recs.length + " of " + data.total_records + " records; the rest were left out");
  var full = rows.length <= FULL_ROWS && n <= FULL_NODES;
  if (!full) left.push("only the rows and lifelines scrolled into view are drawn (" + rows.length + " steps, " + n + " nodes)");
  if (left.length) { notice.textContent = left.join("; ") + "."; notice.className = "shown"; }

  var main = el("div", { id: "main" }, app);
  var wrap = el("div", { id: "diagram-wrap" }, main);
  var headsDiv = el("div", { id: "heads" }, wrap);
  var heads = sv("svg", { id: "heads-svg", height: HEAD_H }, headsDiv);
  var scroller = el("div", { id: "scroller" }, wrap);
  var spacer = el("div", { id: "spacer" }, scroller);
  var svg = sv("svg", { id: "diagram" }, spacer);
  var defs = sv("defs", null, svg);
  kindList.concat(["message"]).forEach(function (k, j) {
    var mk = sv("marker", { id: "arrow-" + j, viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, defs);
    sv("path", { d: "M0,0 L10,5 L0,10 z", fill: colour[k] || "#333" }, mk);
    colour[k] = colour[k] || "#333";
    colour["marker:" + k] = "url(#arrow-" + j + ")";
  });
  var layer = sv("g", { id: "layer" }, svg);
  var ovWrap = el("div", { id: "overview" }, main);
  var zoomBar = el("div", { class: "zoom" }, ovWrap);
  var bZoomOut = el("button", { id: "zoom-out", title: "zoom out: more of the run on the screen ([ or ctrl + wheel)" }, zoomBar, "−");
  var bZoomIn = el("button", { id: "zoom-in", title: "zoom in: the rows spread apart (] or ctrl + wheel)" }, zoomBar, "+");
  var ovCanvas = el("canvas", { id: "overview-canvas", width: "56", height: "300" }, ovWrap);
  var side = el("aside", { id: "side" }, main);
  el("h2", null, side, "State at this step");
  var stateDiv = el("div", { id: "state" }, side);
  el("h2", null, side, "Properties at this step");
  var propsDiv = el("div", { id: "props" }, side);
  el("h2", null, side, "Selected message or event");
  var detail = el("div", { id: "detail" }, side, "Click a message arrow, a cross or a row.");

  var COL_W = Math.max(90, Math.min(180, Math.floor(((window.innerWidth || 1200) - 340 - 64 - LEFT - 40) / Math.max(1, n))));
  // Columns in the order drawn, left to right: each holds one node, or a group of neighbouring
  // nodes drawn as one lifeline (the aggregate view of runs of hundreds of nodes and more: a
  // group's messages are drawn between groups, so where they crowd is where traffic is).
  // `posOf[node]` is the column a node is drawn in, or -1 while it is hidden; `order` holds
  // each column's first node. The head's ◂ and ▸ move a column, × hides it (and the messages
  // to and from it), ⊞ opens a group into its nodes and ⊟ closes it again; "show all" brings
  // back the first layout.
  var GROUPS = 48, cols = [], order = [], posOf = new Array(n);
  function setCols(c) {
    cols = c;
    order = c.map(function (col) { return col.nodes[0]; });
    for (var i = 0; i < n; i++) posOf[i] = -1;
    c.forEach(function (col, p) { col.nodes.forEach(function (nd) { posOf[nd] = p; }); });
  }
  // Every node a column of its own, or (grouped) about GROUPS groups of neighbours.
  function firstCols(grouped) {
    var out = [], k = grouped ? Math.ceil(n / GROUPS) : 1;
    for (var a = 0; a < n; a += k) {
      var m = [];
      for (var i = a; i < Math.min(n, a + k); i++) m.push(i);
      out.push({ nodes: m, group: m.length > 1 });
    }
    return out;
  }
  var grouped = n > 200;
  setCols(firstCols(grouped));
  function x(node) { return LEFT + posOf[node] * COL_W + COL_W / 2; }
  // True when `node`'s lifeline is shown and among the view's places.
  function shown(node, v) { var p = posOf[node]; return p >= 0 && p >= v.c0 && p <= v.c1; }
  function msgShown(mg, v) {
    var pa = posOf[mg.from], pb = posOf[mg.to];
    return pa >= 0 && pb >= 0 && Math.max(pa, pb) >= v.c0 && Math.min(pa, pb) <= v.c1;
  }
  // ---- the time axis ----------------------------------------------------------------------
  // By default a row's height is its virtual time: rows of one instant share a y, so equal
  // latencies draw equal slopes. The scale gives the shorter of the usual gaps (the 25th
  // percentile of the gaps between instants) one row's height per step of an instant, a gap never shrinks below
  // MIN_GAP, and a gap longer than MAX_GAP (nothing happens for a while: a timeout running) is
  // compressed to GAP_H and marked with its length. The step axis (one row per step, as the
  // model checker's pages always are) is an option.
  var MIN_GAP = 8, MAX_GAP = 12 * ROW_H, GAP_H = 2.5 * ROW_H;
  var hashAxis = /axis=step/.test(location.hash);
  var axis = STEPS_ONLY || hashAxis ? "step" : "time";
  // Zoom (the overview's − and +) scales the space between rows; a gap still gets at least
  // MIN_GAP times the zoom, so zooming out packs the run tighter.
  var ZOOMS = [0.125, 0.25, 0.5, 1, 2, 4, 8], zoomAt = 3;
  var yOf = new Float64Array(rows.length), gapMarks = [], cutMarks = [];
  function layout() {
    gapMarks = [];
    cutMarks = [];
    var zoom = ZOOMS[zoomAt];
    if (axis === "step") {
      var extra = 0, rowH = ROW_H * zoom;
      for (var r = 0; r < rows.length; r++) {
        if (r > 0 && rows[r].cut != null) { cutMarks.push({ y: TOP + (r - 0.5) * rowH + ROW_H / 2 + extra + GAP_H / 2, left: rows[r].cut, row: r }); extra += GAP_H; }
        yOf[r] = TOP + r * rowH + ROW_H / 2 + extra;
      }
      return;
    }
    var dts = [];
    for (var k = 1; k < rows.length; k++) if (rows[k].time > rows[k - 1].time) dts.push(rows[k].time - rows[k - 1].time);
    dts.sort(function (a, b) { return a - b; });
    // Many steps at each instant (a broadcast, its deliveries one latency later): the usual
    // gap gets as many rows as an instant has steps on average (at most 12), so that the
    // arrows between instants spread out.
    var perInstant = Math.max(1, Math.min(12, rows.length / (dts.length + 1)));
    var unit = dts.length ? dts[Math.floor(dts.length / 4)] : 1e6, scale = ROW_H * perInstant / unit * zoom;
    var minGap = MIN_GAP * Math.min(1, zoom);
    var at = TOP + ROW_H / 2;
    yOf[0] = at;
    for (var q = 1; q < rows.length; q++) {
      var dt = rows[q].time - rows[q - 1].time;
      if (rows[q].cut != null) {
        cutMarks.push({ y: at + GAP_H / 2, left: rows[q].cut, row: q, ns: dt });
        at += GAP_H;
      } else if (dt > 0) {
        var gap = Math.max(minGap, dt * scale);
        if (gap > MAX_GAP) { gapMarks.push({ y: at + GAP_H / 2, ns: dt, row: q }); gap = GAP_H; }
        at += gap;
      }
      yOf[q] = at;
    }
  }
  layout();
  function y(row) { return yOf[row]; }
  // The last row at or above drawing coordinate yy (0 above the first).
  function rowAt(yy) {
    var lo = 0, hi = rows.length - 1;
    if (yy < yOf[0]) return 0;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (yOf[mid] <= yy) lo = mid; else hi = mid - 1; }
    return lo;
  }
  var W = LEFT + cols.length * COL_W + 20, H;
  function widen() { W = LEFT + cols.length * COL_W + 20; spacer.style.width = W + "px"; heads.setAttribute("width", W); }
  function size() { H = yOf[rows.length - 1] + ROW_H + 20; spacer.style.height = H + "px"; }
  spacer.style.width = W + "px";
  size();
  heads.setAttribute("width", W);

  // ---- the overview strip ------------------------------------------------------------------
  // The whole run at a glance, beside the diagram and at the diagram's scale: grey bars for how
  // many records each stretch holds (log scale), ticks for faults (orange), violations (red) and
  // cuts of a long run (grey, dashed), the cursor (blue) and a frame around the part scrolled
  // into view. Click or drag on it to scroll there; double-click moves the cursor there.
  var ovBins = null, ovTicks = [];
  function overviewData() {
    var hgt = ovCanvas.height, bins = new Float64Array(hgt);
    for (var k = 0; k < recs.length; k++) bins[Math.min(hgt - 1, Math.floor(yOf[rowOf[k]] / H * hgt))]++;
    ovBins = bins;
    ovTicks = [];
    recs.forEach(function (r, k) {
      if (r.kind === "violation") ovTicks.push({ y: yOf[rowOf[k]], cls: "violation" });
      else if (["crash", "recover", "pause", "resume", "partition", "heal"].indexOf(r.kind) >= 0) ovTicks.push({ y: yOf[rowOf[k]], cls: "fault" });
    });
    cutMarks.forEach(function (cm) { ovTicks.push({ y: cm.y, cls: "cut" }); });
    ovCanvas.setAttribute("data-faults", String(ovTicks.filter(function (t) { return t.cls === "fault"; }).length));
    ovCanvas.setAttribute("data-violations", String(ovTicks.filter(function (t) { return t.cls === "violation"; }).length));
    ovCanvas.setAttribute("data-cuts", String(cutMarks.length));
  }
  var TICK = { fault: "#f79009", violation: "#c80000", cut: "#667085" };
  function drawOverview() {
    var want = Math.max(120, Math.floor(ovWrap.clientHeight - zoomBar.offsetHeight - 8));
    if (want && ovCanvas.height !== want) { ovCanvas.height = want; ovBins = null; }
    if (!ovBins) overviewData();
    var g = ovCanvas.getContext("2d"), wd = ovCanvas.width, hgt = ovCanvas.height;
    g.clearRect(0, 0, wd, hgt);
    var most = 1;
    for (var b = 0; b < hgt; b++) if (ovBins[b] > most) most = ovBins[b];
    g.fillStyle = "#98a2b3";
    for (var c = 0; c < hgt; c++) if (ovBins[c]) g.fillRect(0, c, Math.max(1, (wd - 14) * Math.log(1 + ovBins[c]) / Math.log(1 + most)), 1);
    ovTicks.forEach(function (t) {
      var ty = Math.floor(t.y / H * hgt);
      g.fillStyle = TICK[t.cls];
      if (t.cls === "cut") { for (var xx = 0; xx < wd; xx += 6) g.fillRect(xx, ty, 3, 2); }
      else g.fillRect(wd - 12, ty - 1, 12, 3);
    });
    var sy = scroller.scrollTop / H * hgt, sh = Math.max(4, (scroller.clientHeight || 600) / H * hgt);
    g.strokeStyle = "#1d2330";
    g.lineWidth = 1;
    g.strokeRect(0.5, Math.floor(sy) + 0.5, wd - 1, Math.min(hgt - 1, Math.ceil(sh)));
    g.fillStyle = "#1570ef";
    g.fillRect(0, Math.floor(cursorY() / H * hgt) - 1, wd, 2);
  }
  // Scrolls the diagram so that overview pixel `py` is in the middle of the view.
  function overviewScroll(py) {
    var h = scroller.clientHeight || 600;
    scroller.scrollTop = Math.max(0, py / ovCanvas.height * H - h / 2);
  }
  var ovDragging = false;
  // The pointer's place on the strip, in the canvas's pixels (its box may be drawn scaled).
  function ovY(e) { var b = ovCanvas.getBoundingClientRect(); return (e.clientY - b.top) / (b.height || 1) * ovCanvas.height; }
  ovCanvas.addEventListener("mousedown", function (e) { ovDragging = true; overviewScroll(ovY(e)); e.preventDefault(); });
  window.addEventListener("mousemove", function (e) { if (ovDragging) overviewScroll(ovY(e)); });
  window.addEventListener("mouseup", function () { ovDragging = false; });
  ovCanvas.addEventListener("dblclick", function (e) { stop(); go(rowAt(ovY(e) / ovCanvas.height * H)); });
  // Zooming keeps the cursor's row where it was on the screen.
  function zoomTo(at) {
    at = Math.max(0, Math.min(ZOOMS.length - 1, at));
    if (at === zoomAt) return;
    var onScreen = y(current) - scroller.scrollTop;
    zoomAt = at;
    layout(); size(); ovBins = null; draw();
    scroller.scrollTop = Math.max(0, y(current) - onScreen);
    playY = y(current);
    reveal();
    document.body.setAttribute("data-zoom", String(ZOOMS[zoomAt]));
  }
  bZoomOut.addEventListener("click", function () { zoomTo(zoomAt - 1); });
  bZoomIn.addEventListener("click", function () { zoomTo(zoomAt + 1); });

  // ---- drawing --------------------------------------------------------------------------
  var current = 0, selected = null;
  function visible() {
    if (full) return { c0: 0, c1: cols.length - 1, r0: 0, r1: lastRow, x0: 0, y0: 0, w: W, h: H };
    var sx = scroller.scrollLeft, sy = scroller.scrollTop, w = scroller.clientWidth || 800, h = scroller.clientHeight || 600;
    var pad = 200;
    return {
      c0: Math.max(0, Math.floor((sx - LEFT - pad) / COL_W)), c1: Math.min(cols.length - 1, Math.ceil((sx + w - LEFT + pad) / COL_W)),
      r0: rowAt(sy - pad), r1: Math.min(lastRow, rowAt(sy + h + pad) + 1),
      x0: Math.max(0, sx - pad), y0: Math.max(0, sy - pad), w: w + 2 * pad, h: h + 2 * pad,
    };
  }
  function crosses(a, b, lo, hi) { return Math.max(a, b) >= lo && Math.min(a, b) <= hi; }
  function dropReason(reason) {
    if (reason === "lost") return "lost on the link";
    if (reason === "receiver crashed") return "the receiver had crashed";
    if (reason === "partition") return "the link was cut by a partition";
    return reason;
  }
  function msgInfo(mg) {
    var s = mg.send, r = mg.recv, lines = [];
    lines.push(mg.kind + (mg.dropped ? " — LOST (" + dropReason(mg.reason) + ")" : ""));
    lines.push("P" + mg.from + " (id " + uids[mg.from] + ") → P" + mg.to + " (id " + uids[mg.to] + ")");
    var content = (s && s.msg) || r.msg;
    if (content !== undefined) lines.push("content   " + typed(JSON.stringify(content)));
    if (s) lines.push("sent      step " + s.step + ", " + ms(s.time_ns) + ", Lamport " + s.lamport + (s.vector ? ", vector [" + s.vector.join(",") + "]" : ""));
    lines.push((mg.dropped ? "dropped   " : "received  ") + "step " + r.step + ", " + ms(r.time_ns) +
      (mg.dropped ? "" : ", Lamport " + r.lamport + (r.vector ? ", vector [" + r.vector.join(",") + "]" : "")));
    return lines.join("\n");
  }
  // Where a dropped message was lost: on the link (`lost`: the network dropped it as it was
  // sent) a short stub from the sender; at a crashed receiver, on the receiver's lifeline at the
  // drop; at a partition, at the drop's time just before the receiver's lifeline (the cut link).
  function dropPoint(mg) {
    var x1 = x(mg.from), y1 = y(mg.r0), x2 = x(mg.to), y2 = y(mg.r1);
    var dir = x2 >= x1 ? 1 : -1;
    if (mg.reason === "receiver crashed") return { x: x2, y: y2 };
    if (mg.reason === "partition" || mg.r1 > mg.r0) {
      var back = Math.min(18, Math.abs(x2 - x1) / 2);
      return { x: x2 - dir * back, y: y2 };
    }
    var stub = Math.min(22, Math.abs(x2 - x1) / 2) || 14;
    return { x: x1 + dir * stub, y: y1 + Math.min(8, ROW_H / 3) };
  }
  // ---- labels that avoid each other and the arrows --------------------------------------------
  var measure = document.createElement("canvas").getContext("2d");
  var FONT = getComputedStyle(document.body).fontFamily || "sans-serif";
  function textWidth(text, font) { measure.font = font + " " + FONT; return measure.measureText(text).width; }
  function fitText(text, room, font) {
    if (textWidth(text, font) <= room) return text;
    var lo = 0, hi = text.length;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (textWidth(text.slice(0, mid) + "…", font) <= room) lo = mid; else hi = mid - 1; }
    return text.slice(0, lo) + "…";
  }
  // Segment (ax,ay)-(bx,by) against a box (Liang-Barsky clipping).
  function segmentHits(ax, ay, bx, by, b) {
    var t0 = 0, t1 = 1, dx = bx - ax, dy = by - ay;
    var p = [-dx, dx, -dy, dy], q = [ax - b.x0, b.x1 - ax, ay - b.y0, b.y1 - ay];
    for (var i = 0; i < 4; i++) {
      if (p[i] === 0) { if (q[i] < 0) return false; continue; }
      var t = q[i] / p[i];
      if (p[i] < 0) { if (t > t1) return false; if (t > t0) t0 = t; }
      else { if (t < t0) return false; if (t < t1) t1 = t; }
    }
    return true;
  }
  // Places the labels of one drawing: each tries right above its event, left above, right
  // below, left below; it takes the first place inside the drawing that overlaps no placed label
  // and no arrow. A label with no such place becomes a small ring on its lifeline that shows the
  // text on hover (and in the panel when clicked).
  function labelPlacer(v) {
    var BUCKET = 32, boxes = {}, segs = {};
    function buckets(y0, y1, f) { for (var b = Math.floor(y0 / BUCKET); b <= Math.floor(y1 / BUCKET); b++) f(b); }
    msgs.forEach(function (mg) {
      if (!crosses(mg.r0, mg.r1, v.r0, v.r1) || !msgShown(mg, v)) return;
      var a = { x: x(mg.from), y: y(mg.r0) }, b = mg.dropped ? dropPoint(mg) : { x: x(mg.to), y: y(mg.r1) };
      var sg = [a.x, a.y, b.x, b.y];
      buckets(Math.min(a.y, b.y), Math.max(a.y, b.y), function (k) { (segs[k] = segs[k] || []).push(sg); });
    });
    function free(bx) {
      if (bx.x0 < LEFT - 8 || bx.x1 > W - 2) return false;
      var ok = true;
      buckets(bx.y0, bx.y1, function (k) {
        if (!ok) return;
        (boxes[k] || []).forEach(function (o) { if (ok && o.x0 < bx.x1 && bx.x0 < o.x1 && o.y0 < bx.y1 && bx.y0 < o.y1) ok = false; });
        (segs[k] || []).forEach(function (sg) { if (ok && segmentHits(sg[0], sg[1], sg[2], sg[3], bx)) ok = false; });
      });
      return ok;
    }
    function take(bx) { buckets(bx.y0, bx.y1, function (k) { (boxes[k] = boxes[k] || []).push(bx); }); }
    function place(lb) {
      var font = (lb.cls === "label-leader" ? "600 " : "") + "10px", w = textWidth(lb.text, font) + 2;
      var cx = x(lb.node), cy = y(lb.row);
      var spots = [[cx + 7, cy - 4, "start"], [cx - 7, cy - 4, "end"], [cx + 7, cy + 13, "start"], [cx - 7, cy + 13, "end"]];
      for (var i = 0; i < spots.length; i++) {
        var sx = spots[i][0], sy = spots[i][1], end = spots[i][2] === "end";
        var bx = { x0: end ? sx - w : sx, x1: end ? sx : sx + w, y0: sy - 10, y1: sy + 3 };
        if (free(bx)) {
          take(bx);
          var t = sv("text", { class: "label-event " + lb.cls, x: sx, y: sy, "text-anchor": spots[i][2], "data-node": lb.node, "data-row": lb.row, "data-a": lb.row, "data-k": lb.k }, layer, lb.text);
          return t;
        }
      }
      var ring = sv("circle", { class: "label-more " + lb.cls, cx: cx + 6, cy: cy - 6, r: 3.5, "data-node": lb.node, "data-row": lb.row, "data-label": lb.text, "data-a": lb.row, "data-k": lb.k }, layer);
      sv("title", null, ring, "P" + lb.node + ": " + lb.text);
      return ring;
    }
    // Fixed captions (partition bands) are placed first.
    layer.querySelectorAll(".partition-label").forEach(function (t) {
      var bb = t.getBBox();
      take({ x0: bb.x, y0: bb.y, x1: bb.x + bb.width, y1: bb.y + bb.height });
    });
    return { place: place, take: take };
  }
  function draw() {
    var v = visible();
    while (layer.firstChild) layer.removeChild(layer.firstChild);
    svg.setAttribute("width", v.w);
    svg.setAttribute("height", v.h);
    svg.style.left = v.x0 + "px";
    svg.style.top = v.y0 + "px";
    layer.setAttribute("transform", "translate(" + (-v.x0) + "," + (-v.y0) + ")");
    var yTop = y(v.r0) - ROW_H, yBot = y(v.r1) + ROW_H;
    // Time labels on the left: a row whose time differs from the row above, at least a line
    // below the last label.
    var lastLabel = -1e9, times = [];
    for (var rr = v.r0; rr <= v.r1; rr++) {
      if ((rr === 0 || rows[rr].time !== rows[rr - 1].time) && y(rr) - lastLabel >= 12) {
        times.push([y(rr) + 3, ms(rows[rr].time)]);
        lastLabel = y(rr);
      }
    }
    // Compressed idle gaps: a break across the drawing and the time left out.
    gapMarks.forEach(function (gm) {
      if (gm.row < v.r0 || gm.row > v.r1 + 1) return;
      var g = sv("g", { class: "gap-break", "data-ns": gm.ns }, layer);
      sv("path", { class: "gap-zigzag", d: "M" + (LEFT - 6) + "," + gm.y + "l4,-4l4,8l4,-8l4,8l4,-4L" + (W - 10) + "," + gm.y }, g);
      sv("text", { class: "gap-text", x: 4, y: gm.y + 4 }, g, "≈ " + (gm.ns / 1e6).toFixed(3) + " ms");
      sv("title", null, g, "nothing happened for " + (gm.ns / 1e6).toFixed(3) + " ms: the gap is drawn shorter");
    });
    // Cuts: records of a long run the page left out.
    cutMarks.forEach(function (cm) {
      if (cm.row < v.r0 || cm.row > v.r1 + 1) return;
      var g = sv("g", { class: "cut-break", "data-left": cm.left }, layer);
      sv("rect", { class: "cut-band", x: 0, y: cm.y - GAP_H / 2 + 4, width: W, height: GAP_H - 8 }, g);
      sv("text", { class: "cut-text", x: LEFT, y: cm.y + 4 }, g,
        "\u22ef " + cm.left.toLocaleString("en") + (cm.left === 1 ? " record" : " records") + " left out" + (cm.ns ? " (" + ms(cm.ns) + " of the run)" : ""));
      sv("title", null, g, "this page keeps the run's beginning, its faults and violations and its end; " + cm.left + " records between here were left out (the trace file, sim --trace, has them all)");
    });
    // Partition bands, pauses, critical sections under everything else.
    bands.forEach(function (b) {
      // The band covers the places of the side's shown lifelines, in runs of neighbours.
      var places = b.cols.map(function (c) { return posOf[c]; }).filter(function (q) { return q >= 0; }).sort(function (q, r) { return q - r; });
      if (!crosses(b.r0, b.r1, v.r0, v.r1) || !places.length) return;
      var g = sv("g", { class: "partition", "data-a": b.r0 }, layer);
      var runs = [], a = places[0], p = a;
      places.slice(1).concat([null]).forEach(function (c) { if (c === p + 1) { p = c; } else { runs.push([a, p]); a = p = c; } });
      runs.forEach(function (run) {
        sv("rect", { class: "partition-band", x: LEFT + run[0] * COL_W + 4, y: y(b.r0), width: (run[1] - run[0] + 1) * COL_W - 8, height: Math.max(4, y(b.r1) - y(b.r0)), "data-a": b.r0, "data-b": b.r1 }, g);
      });
      var px = LEFT + places[0] * COL_W + 8, ptext = "partition " + b.detail, pfit = fitText(ptext, W - px - 4, "10px");
      var pl = sv("text", { class: "partition-label", x: px, y: y(b.r0) + 11 }, g, pfit);
      sv("title", null, pl, ptext);
    });
    pauses.forEach(function (p) {
      if (!crosses(p.r0, p.r1, v.r0, v.r1) || !shown(p.node, v)) return;
      sv("rect", { class: "mark-pause", x: x(p.node) - 7, y: y(p.r0), width: 14, height: Math.max(4, y(p.r1) - y(p.r0)), "data-a": p.r0, "data-b": p.r1 }, layer);
    });
    // Lifelines: solid while up, dashed while crashed.
    for (var pc = v.c0; pc <= v.c1; pc++) {
      if (cols[pc].group) {
        sv("rect", { class: "lifeline-group", x: LEFT + pc * COL_W + COL_W / 2 - 5, y: Math.max(0, yTop), width: 10, height: Math.max(0, Math.min(H, yBot) - Math.max(0, yTop)) }, layer);
        continue;
      }
      var c = order[pc], down = [], from = null;
      marks.forEach(function (mk) {
        if (mk.node !== c) return;
        if (mk.type === "crash" && from == null) from = mk.row;
        if (mk.type === "recover" && from != null) { down.push([from, mk.row]); from = null; }
      });
      if (from != null) down.push([from, lastRow + 1]);
      var segs = [], at = 0;
      down.forEach(function (d) { segs.push([at, d[0], false]); segs.push([d[0], d[1], true]); at = d[1]; });
      segs.push([at, lastRow + 1, false]);
      segs.forEach(function (sg) {
        var ya = Math.max(sg[0] === 0 ? 0 : y(sg[0]), yTop), yb = Math.min(sg[1] > lastRow ? H : y(sg[1]), yBot);
        if (yb > ya) sv("line", { class: sg[2] ? "lifeline-down" : "lifeline", x1: x(c), x2: x(c), y1: ya, y2: yb }, layer);
      });
    }
    // A group's message density: its lifeline shaded, 10 px at a time, by how many messages its
    // nodes received there (darkest where the view's busiest stretch is).
    if (cols.some(function (col) { return col.group; })) {
      var dens = {}, most = 0;
      msgs.forEach(function (mg) {
        if (mg.dropped || mg.r1 < v.r0 || mg.r1 > v.r1) return;
        var pc = posOf[mg.to];
        if (pc < v.c0 || pc > v.c1 || !cols[pc].group) return;
        var key = pc + ":" + Math.floor(y(mg.r1) / 10);
        dens[key] = (dens[key] || 0) + 1;
        if (dens[key] > most) most = dens[key];
      });
      Object.keys(dens).forEach(function (key) {
        var kk = key.split(":"), pc = +kk[0], yy = +kk[1] * 10;
        sv("rect", { class: "density", x: LEFT + pc * COL_W + COL_W / 2 - 5, y: yy, width: 10, height: 10, "fill-opacity": (0.15 + 0.85 * dens[key] / most).toFixed(2), "data-count": dens[key] }, layer);
      });
    }
    bars.forEach(function (b) {
      if (!crosses(b.r0, b.r1, v.r0, v.r1) || !shown(b.node, v)) return;
      var bar = sv("rect", { class: "cs-bar", x: x(b.node) - 4, y: y(b.r0), width: 8, height: Math.max(4, y(b.r1) - y(b.r0)), "data-a": b.r0, "data-b": b.r1 }, layer);
      sv("title", null, bar, "P" + b.node + " in the critical section" + (b.fencing != null ? ", fencing " + fencingText(b.fencing) : "") + (b.open ? " (still at the end)" : ""));
    });
    timers.forEach(function (t) {
      if (t.row < v.r0 || t.row > v.r1 || !shown(t.node, v)) return;
      var d = sv("circle", { class: "timer-dot", cx: x(t.node), cy: y(t.row), r: 3, "data-a": t.row, "data-k": t.k }, layer);
      sv("title", null, d, "timer " + typed(t.rec.timer || ""));
    });
    // Messages.
    msgs.forEach(function (mg, j) {
      if (!crosses(mg.r0, mg.r1, v.r0, v.r1)) return;
      if (!msgShown(mg, v)) return;
      var x1 = x(mg.from), y1 = y(mg.r0), x2 = x(mg.to), y2 = y(mg.r1);
      if (mg.from === mg.to) { x2 += 0.01; }
      var node;
      if (!mg.dropped) {
        node = sv("line", { class: "msg-arrow", "data-msg": j, "data-kind": mg.kind, x1: x1, y1: y1, x2: x2, y2: y2, stroke: colour[mg.kind], "marker-end": colour["marker:" + mg.kind], "data-a": mg.r1 }, layer);
      } else {
        var e = dropPoint(mg), ex = e.x, ey = e.y;
        node = sv("g", { class: "msg-drop", "data-msg": j, "data-kind": mg.kind, "data-reason": mg.reason, "data-cx": ex, "data-cy": ey, "data-a": mg.r1 }, layer);
        sv("line", { class: "path", x1: x1, y1: y1, x2: ex, y2: ey, stroke: colour[mg.kind] }, node);
        sv("path", { class: "cross", d: "M" + (ex - 5) + "," + (ey - 5) + "L" + (ex + 5) + "," + (ey + 5) + "M" + (ex - 5) + "," + (ey + 5) + "L" + (ex + 5) + "," + (ey - 5) }, node);
        sv("line", { class: "hit", x1: x1, y1: y1, x2: ex, y2: ey }, node);
      }
      if (selected === j) node.classList.add("selected");
      sv("title", null, node, msgInfo(mg));
    });
    marks.forEach(function (mk) {
      if (mk.row < v.r0 || mk.row > v.r1 || !shown(mk.node, v)) return;
      var cx = x(mk.node), cy = y(mk.row);
      if (mk.type === "crash") {
        var g = sv("g", { class: "mark-crash", "data-a": mk.row, "data-k": mk.k }, layer);
        sv("path", { d: "M" + (cx - 8) + "," + (cy - 8) + "L" + (cx + 8) + "," + (cy + 8) + "M" + (cx - 8) + "," + (cy + 8) + "L" + (cx + 8) + "," + (cy - 8) }, g);
        sv("title", null, g, "P" + mk.node + " crashes");
      } else {
        var d = sv("circle", { class: "mark-recover", cx: cx, cy: cy, r: 6, "data-a": mk.row, "data-k": mk.k }, layer);
        sv("title", null, d, "P" + mk.node + " recovers");
      }
    });
    var placer = labelPlacer(v);
    if (violation && crosses(violation.r0, violation.r1, v.r0, v.r1)) {
      var vy = y(violation.r0) - ROW_H / 2, vh = y(violation.r1) - y(violation.r0) + ROW_H;
      var vr = sv("rect", { id: "violation", class: "violation-rect", x: LEFT - 6, y: vy, width: n * COL_W + 12, height: vh, "data-a": violation.r0 }, layer);
      var vtext = "violation: " + violation.property + " — " + violation.detail;
      sv("title", null, vr, vtext);
      // The caption is cut to the drawing's width (the whole of it on hover and in the panel).
      var room = W - LEFT - 4, fit = fitText(vtext, room, "700 11px");
      var vl = sv("text", { class: "violation-label", x: LEFT, y: vy - 3, "data-a": violation.r0 }, layer, fit);
      if (fit !== vtext) sv("title", null, vl, vtext);
      placer.take({ x0: LEFT, y0: vy - 14, x1: LEFT + textWidth(fit, "700 11px"), y1: vy });
    }
    labels.forEach(function (lb) {
      if (lb.row < v.r0 || lb.row > v.r1 || !shown(lb.node, v)) return;
      placer.place(lb);
    });
    // The time column stays at the left edge of the view when it scrolls sideways (see
    // stickTimes), over a pale background so that it reads above what passes under it.
    timeCol = sv("g", { id: "time-col" }, layer);
    sv("rect", { class: "time-col-bg", x: 0, y: Math.max(0, yTop), width: LEFT - 10, height: Math.max(0, Math.min(H, yBot) - Math.max(0, yTop)) }, timeCol);
    times.forEach(function (t) { sv("text", { class: "row-time", x: 4, y: t[0] }, timeCol, t[1]); });
    stickTimes();
    flights = sv("g", { id: "flights" }, layer);
    sv("line", { id: "now", class: "now-line", x1: LEFT - 90, x2: W, y1: cursorY(), y2: cursorY() }, layer);
    reveal();
    applyDim();
    drawHeads();
  }
  var timeCol = null;
  function stickTimes() { if (timeCol) timeCol.setAttribute("transform", "translate(" + scroller.scrollLeft + ",0)"); }
  function drawHeads() {
    while (heads.firstChild) heads.removeChild(heads.firstChild);
    var v = visible(), st = stateAt(current).st;
    for (var pc = v.c0; pc <= v.c1; pc++) {
      var c = order[pc], col = cols[pc], ctls;
      if (col.group) {
        var last = col.nodes[col.nodes.length - 1], down = col.nodes.filter(function (nd) { return st[nd].status === "crashed"; }).length;
        sv("text", { class: "head-label head-group", x: x(c), y: 15, "text-anchor": "middle", "data-group": pc }, heads, "P" + c + "–P" + last);
        sv("text", { class: "head-role", x: x(c), y: 31, "text-anchor": "middle" }, heads, col.nodes.length + " nodes" + (down ? ", " + down + " down" : ""));
        ctls = [["◂", "left", -24, "move this group left"], ["⊞", "open", -8, "open the group into its " + col.nodes.length + " nodes"],
          ["×", "hide", 8, "hide the group and its messages"], ["▸", "right", 24, "move this group right"]];
      } else {
        sv("text", { class: "head-label", x: x(c), y: 15, "text-anchor": "middle" }, heads, "P" + c + " · id " + uids[c]);
        sv("text", { class: "head-role", x: x(c), y: 31, "text-anchor": "middle", "data-node": c }, heads, role(st[c], c));
        ctls = [["◂", "left", -16, "move P" + c + " left"], ["×", "hide", 0, "hide P" + c + " and its messages"], ["▸", "right", 16, "move P" + c + " right"]];
        if (col.of) ctls.push(["⊟", "close", 32, "close P" + col.of.nodes[0] + "–P" + col.of.nodes[col.of.nodes.length - 1] + " into one group again"]);
      }
      ctls.forEach(function (b) {
        var t = sv("text", { class: "head-ctl", x: x(c) + b[2], y: 47, "text-anchor": "middle", "data-node": c, "data-do": b[1] }, heads, b[0]);
        sv("title", null, t, b[3]);
      });
    }
    headsDiv.scrollLeft = scroller.scrollLeft;
  }
  var hasViolationRecord = recs.some(function (r) { return r.kind === "violation"; });
  function showState() {
    var s = stateAt(current), st = s.st, row = rows[current];
    stepInfo.textContent = "step " + row.step + (STEPS_ONLY ? "" : " · " + ms(row.time)) + " · row " + (current + 1) + "/" + rows.length;
    slider.value = String(current);
    var table = document.createElement("table");
    var hr = el("tr", null, el("thead", null, table));
    ["node", "role", "leader", "holding", "clock"].forEach(function (h) { el("th", null, hr, h); });
    var tb = el("tbody", null, table);
    // Many nodes: the lifelines in view (at most 200), whose state one is looking at.
    var listed = [];
    if (n <= FULL_NODES) listed = order.slice();
    else {
      var v = visible();
      for (var pc = v.c0; pc <= v.c1 && listed.length < 200; pc++) cols[pc].nodes.forEach(function (nd) { if (listed.length < 200) listed.push(nd); });
    }
    listed.forEach(function (i) {
      var x0 = st[i], tr = el("tr", { "data-node": i, class: x0.status + (x0.holding ? " holding" : "") }, tb);
      el("td", null, tr, "P" + i + " (id " + uids[i] + ")");
      el("td", { class: "role" }, tr, role(x0, i) + (Object.keys(x0.suspects).length ? "; suspects " + Object.keys(x0.suspects).map(function (k) { return "P" + k; }).join(",") : ""));
      el("td", null, tr, x0.leader != null ? String(x0.leader) : "—");
      el("td", null, tr, x0.holding ? "yes (fencing " + fencingText(x0.fencing) + ")" : "no");
      el("td", null, tr, (x0.lamport != null ? "L " + x0.lamport : "—") + (x0.vector && n <= 16 ? " [" + x0.vector.join(",") + "]" : "") + (x0.adjust ? " adj " + (x0.adjust / 1e6).toFixed(3) + "ms" : ""));
    });
    if (n > listed.length) el("tr", null, tb).appendChild(el("td", { colspan: "5" }, null, "the " + listed.length + " lifelines in view of " + n + " (scroll sideways for the others)"));
    stateDiv.replaceChildren(table);
    var ul = document.createElement("ul");
    (report.properties || []).forEach(function (p) {
      var name = typeof p === "string" ? p : p.name, at = s.violated[name];
      if (at == null && !hasViolationRecord) {
        (report.violations || []).forEach(function (vv) { if (vv.property === name && vv.step <= row.step) at = vv.step; });
      }
      el("li", { class: "prop " + (at != null ? "violated" : "holds"), "data-property": name }, ul,
        name + (at != null ? " — violated at step " + at : " — holds so far"));
    });
    propsDiv.replaceChildren(ul);
    drawHeads();
  }
  // ---- in motion: what the cursor has reached -------------------------------------------------
  // Everything after the cursor is hidden (unless "whole run" is ticked); a critical section,
  // pause or partition that goes on past it is drawn up to it; a message in flight is a line
  // from its send to where it is now, with a dot at its head, moving while the run plays.
  var flights = null, whole = false, playing = false, playY = 0;
  function cursorY() { return playing ? playY : y(current); }
  function reveal() {
    var c = current, py = cursorY();
    Array.prototype.forEach.call(layer.querySelectorAll("[data-a]"), function (e) {
      var a = +e.getAttribute("data-a"), b = e.getAttribute("data-b");
      e.classList.toggle("future", !whole && a > c);
      if (b != null && e.tagName === "rect") {
        var full0 = e.getAttribute("data-h") || e.getAttribute("height");
        e.setAttribute("data-h", full0);
        var y0 = +e.getAttribute("y");
        e.setAttribute("height", !whole && +b > c ? Math.max(2, Math.min(+full0, py - y0)) : full0);
      }
    });
    drawFlights();
  }
  // ---- causality at a click, and the filter ---------------------------------------------------
  // The selected event's happens-before past and future, from the vector stamps the driver
  // wrote: a record r of node j is in the past of e when e's vector counts at least r's own
  // entry (e has heard of r), in the future when r's vector counts at least e's own entry.
  // Records of e's own node are ordered by the trace itself.
  var hbEvent = null;
  function hbClass(k) {
    if (k == null || hbEvent == null) return null;
    if (k === hbEvent) return "self";
    var e = recs[hbEvent], r = recs[k];
    if (r.node == null || e.node == null || !e.vector || !r.vector) return null;
    if (r.node === e.node) return k < hbEvent ? "past" : "future";
    if (r.vector[r.node] <= e.vector[r.node]) return "past";
    if (r.vector[e.node] >= e.vector[e.node]) return "future";
    return null;
  }
  function applyDim() {
    Array.prototype.forEach.call(layer.querySelectorAll("[data-msg],[data-k]"), function (e) {
      var cls = null, keep = true;
      if (e.hasAttribute("data-msg")) {
        var mg = msgs[+e.getAttribute("data-msg")], a = hbClass(mg.sk), b = hbClass(mg.rk);
        cls = b === "self" || a === "self" ? "self" : b === "past" ? "past" : a === "future" ? "future" : null;
        if (filterText) keep = matches(mg.sk) || matches(mg.rk);
      } else {
        var k = +e.getAttribute("data-k");
        cls = hbClass(k);
        if (filterText) keep = matches(k);
      }
      e.classList.toggle("hb-past", cls === "past");
      e.classList.toggle("hb-future", cls === "future");
      e.classList.toggle("hb-self", cls === "self");
      e.classList.toggle("hb-dim", (hbEvent != null && !cls) || !keep);
    });
  }
  // Selects event k (null: none) and says what it knows and what follows it.
  function selectEvent(k) {
    hbEvent = k;
    applyDim();
    if (k == null) return;
    var e = recs[k], past = 0, future = 0;
    if (!e.vector) { detail.textContent = "No vector stamps in this trace (runs keep them up to 64 nodes): no causality to show."; return; }
    recs.forEach(function (r, j) { var c = hbClass(j); if (c === "past") past++; else if (c === "future") future++; });
    detail.textContent = "Event: P" + e.node + " " + e.kind + (e.msg_kind ? " " + e.msg_kind : "") + " at step " + e.step +
      "\nLamport " + e.lamport + ", vector [" + e.vector.join(",") + "]" +
      "\nhappens-before past: " + past + " records (bold); future: " + future + " records (dashed); the rest are concurrent (dimmed)." +
      "\nClick empty space or press Esc to clear.";
    document.body.setAttribute("data-hb", past + "," + future);
  }
  filterBox.addEventListener("input", function () {
    filterText = filterBox.value.trim().toLowerCase();
    matchCache = null;
    applyDim();
  });
  function drawFlights() {
    var py = cursorY();
    var now = document.getElementById("now");
    if (now) { now.setAttribute("y1", py); now.setAttribute("y2", py); }
    if (!flights) return;
    while (flights.firstChild) flights.removeChild(flights.firstChild);
    if (whole) return;
    var v = visible(), c = current;
    msgs.forEach(function (mg, j) {
      if (mg.r0 > c || mg.r1 <= c || !crosses(mg.r0, mg.r1, v.r0, v.r1) || !msgShown(mg, v)) return;
      var x1 = x(mg.from), y1 = y(mg.r0), end = mg.dropped ? dropPoint(mg) : { x: x(mg.to), y: y(mg.r1) };
      if (end.y <= y1) return;
      var f = Math.max(0, Math.min(1, (py - y1) / (end.y - y1))), hx = x1 + (end.x - x1) * f, hy = y1 + (end.y - y1) * f;
      sv("line", { class: "flight", "data-msg": j, x1: x1, y1: y1, x2: hx, y2: hy, stroke: colour[mg.kind] }, flights);
      var dot = sv("circle", { class: "flight-dot", "data-msg": j, cx: hx, cy: hy, r: 4.5, fill: colour[mg.kind] }, flights);
      sv("title", null, dot, msgInfo(mg));
    });
  }
  function follow(yy) {
    var sy = scroller.scrollTop, h = scroller.clientHeight || 600;
    if (yy < sy + 20 || yy > sy + h - 20) scroller.scrollTop = Math.max(0, yy - h / 2);
  }
  // The URL keeps the position (`#step=412`, and `&axis=step` on the step axis), so that a link
  // opens the page there.
  function keepInUrl() {
    var hash = "#step=" + rows[current].step + (axis === "step" && !STEPS_ONLY ? "&axis=step" : "");
    try { if (location.hash !== hash) history.replaceState(null, "", hash); } catch (err) { /* a sandboxed frame */ }
  }
  function go(row) {
    current = Math.max(0, Math.min(lastRow, row));
    playY = y(current);
    follow(y(current));
    showState();
    reveal();
    keepInUrl();
    drawOverview();
  }

  // ---- interaction ----------------------------------------------------------------------
  // Play moves the cursor down the drawing at a steady speed (80 px/s at ×1), so on the time
  // axis it moves at a steady pace of virtual time (compressed gaps pass faster).
  var lastFrame = 0;
  function stop() { if (playing) { playing = false; bPlay.textContent = "▶ play"; reveal(); } }
  function frame(t) {
    if (!playing) return;
    var dt = lastFrame ? Math.min(0.1, (t - lastFrame) / 1000) : 0;
    lastFrame = t;
    playY += dt * 80 * (+speed.value || 1);
    var r = rowAt(playY);
    if (r !== current) { current = r; showState(); reveal(); keepInUrl(); drawOverview(); } else drawFlights();
    follow(playY);
    if (current >= lastRow && playY >= y(lastRow)) { playY = y(lastRow); stop(); return; }
    requestAnimationFrame(frame);
  }
  function play() {
    if (current >= lastRow) go(0);
    playing = true;
    playY = y(current);
    lastFrame = 0;
    bPlay.textContent = "❚❚ pause";
    requestAnimationFrame(frame);
  }
  bFirst.addEventListener("click", function () { stop(); go(0); });
  bPrev.addEventListener("click", function () { stop(); go(current - 1); });
  bNext.addEventListener("click", function () { stop(); go(current + 1); });
  bLast.addEventListener("click", function () { stop(); go(lastRow); });
  bPlay.addEventListener("click", function () { if (playing) stop(); else play(); });
  slider.addEventListener("input", function () { stop(); go(+slider.value); });
  wholeBox.addEventListener("change", function () { whole = wholeBox.checked; reveal(); });
  if (axisSel) axisSel.addEventListener("change", function () {
    axis = axisSel.value; layout(); size(); ovBins = null; draw(); go(current);
  });
  // Jumps: to the next or previous fault, violation, leader change, entry into the critical
  // section, or row with a record that matches the filter.
  function jump(kind, dir) {
    var list = kind === "match" ? matchRows() : jumps[kind] || [], to = null;
    if (dir > 0) { for (var i = 0; i < list.length; i++) if (list[i] > current) { to = list[i]; break; } }
    else { for (var k = list.length - 1; k >= 0; k--) if (list[k] < current) { to = list[k]; break; } }
    if (to != null) { stop(); go(to); }
    return to;
  }
  bJumpPrev.addEventListener("click", function () { jump(jumpSel.value, -1); });
  bJumpNext.addEventListener("click", function () { jump(jumpSel.value, 1); });
  var KEY_JUMPS = { f: "fault", v: "violation", l: "leader", e: "entry", n: "match" };
  document.addEventListener("keydown", function (e) {
    if (e.target && (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") && e.key !== "Escape") return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var k = e.key.toLowerCase();
    if (e.key === "ArrowRight" || e.key === "ArrowDown") { e.preventDefault(); bNext.click(); }
    else if (e.key === "ArrowLeft" || e.key === "ArrowUp") { e.preventDefault(); bPrev.click(); }
    else if (e.key === "Home") bFirst.click();
    else if (e.key === "End") bLast.click();
    else if (e.key === " ") { e.preventDefault(); bPlay.click(); }
    else if (KEY_JUMPS[k]) jump(KEY_JUMPS[k], e.shiftKey ? -1 : 1);
    else if (e.key === "+" || e.key === "=") { speed.selectedIndex = Math.min(speed.options.length - 1, speed.selectedIndex + 1); }
    else if (e.key === "-") { speed.selectedIndex = Math.max(0, speed.selectedIndex - 1); }
    else if (e.key === "[") zoomTo(zoomAt - 1);
    else if (e.key === "]") zoomTo(zoomAt + 1);
    else if (k === "w") { wholeBox.checked = !wholeBox.checked; wholeBox.dispatchEvent(new Event("change")); }
    else if (e.key === "/") { e.preventDefault(); filterBox.focus(); }
    else if (e.key === "Escape") { filterBox.value = ""; filterBox.dispatchEvent(new Event("input")); filterBox.blur(); selectEvent(null); }
  });
  // Moving and hiding lifelines (the heads' ◂ × ▸), and showing them all again.
  var layoutAtStart = order.join(",");
  function reorder(c) {
    setCols(c);
    widen();
    draw();
    var shownNodes = c.reduce(function (k, col) { return k + col.nodes.length; }, 0), hidden = n - shownNodes;
    var changed = order.join(",") !== layoutAtStart;
    bShowAll.style.display = hidden || changed ? "" : "none";
    bShowAll.textContent = hidden ? "show all (" + hidden + " hidden)" : grouped ? "first layout" : "node order";
    document.body.setAttribute("data-order", order.join(","));
    document.body.setAttribute("data-columns", String(cols.length));
  }
  heads.addEventListener("click", function (e) {
    var t = e.target, act = t.getAttribute && t.getAttribute("data-do");
    if (!act) return;
    var nd = +t.getAttribute("data-node"), p = posOf[nd], c = cols.slice();
    if (act === "hide") {
      if (c.length === 1) return;
      c.splice(p, 1);
    } else if (act === "open") {
      var g = c[p];
      c.splice.apply(c, [p, 1].concat(g.nodes.map(function (m) { return { nodes: [m], group: false, of: g }; })));
    } else if (act === "close") {
      var of = c[p].of, a = p, b = p;
      while (a > 0 && c[a - 1].of === of) a--;
      while (b + 1 < c.length && c[b + 1].of === of) b++;
      c.splice(a, b - a + 1, of);
    } else {
      var q = act === "left" ? p - 1 : p + 1;
      if (q < 0 || q >= c.length) return;
      var tmp = c[p];
      c[p] = c[q];
      c[q] = tmp;
    }
    reorder(c);
  });
  bShowAll.addEventListener("click", function () { reorder(firstCols(grouped)); });
  if (groupBox) {
    groupBox.checked = grouped;
    groupBox.addEventListener("change", function () {
      grouped = groupBox.checked;
      layoutAtStart = firstCols(grouped).map(function (col) { return col.nodes[0]; }).join(",");
      reorder(firstCols(grouped));
    });
  }
  // Where a mouse event is on the diagram: drawing coordinates, row and column.
  function cell(e) {
    var box = svg.getBoundingClientRect();
    var yy = e.clientY - box.top + (parseFloat(svg.style.top) || 0);
    var xx = e.clientX - box.left + (parseFloat(svg.style.left) || 0);
    var pos = Math.floor((xx - LEFT) / COL_W);
    // A group's column is no one node's lifeline.
    var one = pos >= 0 && pos < cols.length && !cols[pos].group;
    return { xx: xx, yy: yy, row: yy < yOf[0] - ROW_H ? -1 : rowAt(yy + MIN_GAP / 2), pos: pos, col: one ? order[pos] : -1 };
  }
  function onLifeline(c) { return c.row >= 0 && c.row <= lastRow && c.col >= 0 && Math.abs(c.xx - x(c.col)) <= 12; }
  var inPlayground = window.parent !== window;
  // Inside the playground, pressing on a lifeline and dragging to another lifeline and another
  // row asks for a partition: the lifelines dragged over (those between the two, both included)
  // cut off from the rest, from the earlier row's time to the later one's. The band is drawn
  // while dragging; a press released on its own lifeline is an ordinary click.
  var drag = null, dragged = false;
  function dragSpan(c) {
    var pos = Math.max(0, Math.min(cols.length - 1, c.pos)), row = Math.max(0, Math.min(lastRow, c.row));
    return { c0: Math.min(pos, drag.pos), c1: Math.max(pos, drag.pos), r0: Math.min(row, drag.row), r1: Math.max(row, drag.row) };
  }
  svg.addEventListener("mousedown", function (e) {
    dragged = false;
    if (!inPlayground || e.button !== 0) return;
    var t = e.target, c = cell(e);
    if ((t.closest && t.closest("[data-msg]")) || !onLifeline(c)) return;
    e.preventDefault();
    drag = { pos: c.pos, row: c.row, band: null };
  });
  window.addEventListener("mousemove", function (e) {
    if (!drag) return;
    var sp = dragSpan(cell(e));
    if (sp.c0 === sp.c1) { if (drag.band) { drag.band.remove(); drag.band = null; } return; }
    if (!drag.band) drag.band = sv("rect", { id: "drag-band", class: "partition-band drag-band" }, layer);
    drag.band.setAttribute("x", LEFT + sp.c0 * COL_W + 4);
    drag.band.setAttribute("width", (sp.c1 - sp.c0 + 1) * COL_W - 8);
    drag.band.setAttribute("y", y(sp.r0));
    drag.band.setAttribute("height", Math.max(4, y(sp.r1) - y(sp.r0)));
  });
  window.addEventListener("mouseup", function (e) {
    if (!drag) return;
    var sp = dragSpan(cell(e));
    if (drag.band) drag.band.remove();
    drag = null;
    if (sp.c0 === sp.c1) return;
    dragged = true;
    var cut = [], rest = [];
    for (var i = 0; i < n; i++) (posOf[i] >= sp.c0 && posOf[i] <= sp.c1 ? cut : rest).push(uids[i]);
    if (!rest.length) return;
    var from = rows[sp.r0].time, to = rows[sp.r1].time;
    // Rows of one instant: the cut lasts at least a millisecond.
    if (to <= from) to = from + 1e6;
    window.parent.postMessage({ ringleader: "partition", cut: cut, rest: rest, from_ns: from, to_ns: to }, "*");
  });
  svg.addEventListener("click", function (e) {
    // The click that ends a drag is not a click on a lifeline.
    if (dragged) { dragged = false; return; }
    var t = e.target, hit = t.closest ? t.closest("[data-msg]") : null;
    if (hit) {
      selected = +hit.getAttribute("data-msg");
      Array.prototype.forEach.call(layer.querySelectorAll(".selected"), function (s) { s.classList.remove("selected"); });
      hit.classList.add("selected");
      var mg = msgs[selected];
      // A delivered message: the causality of its delivery; a lost one: of its send.
      selectEvent(mg.dropped || mg.rk == null ? (mg.sk != null ? mg.sk : null) : mg.rk);
      detail.textContent = msgInfo(mg) + (hbEvent != null ? "\n\n" + detail.textContent : "");
      return;
    }
    var ev = t.closest ? t.closest("[data-k]") : null;
    if (ev) { selectEvent(+ev.getAttribute("data-k")); return; }
    var c = cell(e), row = c.row;
    // Inside the playground (`ringleader ui`), a click near a lifeline asks for a fault of that
    // node at that row's time.
    if (inPlayground && onLifeline(c)) {
      window.parent.postMessage({ ringleader: "lifeline", uid: uids[c.col], time_ns: rows[row].time }, "*");
    }
    if (row >= 0 && row <= lastRow) {
      stop();
      go(row);
      var rw = rows[row], lines = ["step " + rw.step + " at " + ms(rw.time)];
      for (var k = rw.first; k <= rw.last; k++) lines.push(typed(JSON.stringify(recs[k])));
      // On a lifeline: that node's last event of the row, with its causality.
      var mine = null;
      if (onLifeline(c)) for (var q = rw.first; q <= rw.last; q++) if (recs[q].node === c.col) mine = q;
      selectEvent(mine);
      detail.textContent = (mine != null ? detail.textContent + "\n\n" : "") + lines.join("\n");
    }
  });
  var pending = false;
  scroller.addEventListener("scroll", function () {
    headsDiv.scrollLeft = scroller.scrollLeft;
    stickTimes();
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; if (!full) draw(); drawOverview(); if (n > FULL_NODES) showState(); });
  });
  scroller.addEventListener("wheel", function (e) {
    if (!e.ctrlKey) return;
    e.preventDefault();
    zoomTo(zoomAt + (e.deltaY < 0 ? 1 : -1));
  }, { passive: false });
  window.addEventListener("resize", function () { if (!full) draw(); drawOverview(); });

  // ---- exploring by hand, without a server (a model checker's page of a small model) ----------
  // The page carries every state of the model (data.explore: the initial records, and for each
  // state its enabled steps — words, target state, records — and what it violates). A path of
  // choices is walked through it; its trace is the steps' records one after another, with
  // message ids matched and Lamport and vector stamps made as the simulator's tracer makes them;
  // it is drawn by this very viewer, in a frame, from a page made of this page's style and script.
  if (data.explore) {
    var G = data.explore, bExplore = el("button", { id: "explore-open", title: "choose each step yourself, from the first state" }, controls, "explore by hand");
    var STYLE = (document.querySelector("head style") || {}).textContent || "";
    var SCRIPT = Array.prototype.filter.call(document.scripts, function (sc) { return !sc.id && !sc.type; }).map(function (sc) { return sc.textContent; }).join("\n");
    var xpath = [], xundone = [], xbox = null;
    function xtrace(path) {
      var out = G.start.map(function (r) { return Object.assign({}, r); }), at = 0, step = 0;
      path.forEach(function (i) {
        var e = G.states[at].steps[i];
        step++;
        e[2].forEach(function (r) { var c = Object.assign({}, r); c.step = step; c.time_ns = step * 1e6; delete c.msg_id; out.push(c); });
        at = e[1];
      });
      // Message ids: a delivery or a loss takes the earliest unmatched send with its ends and
      // content (its kind, for a loss); a duplicating network keeps a delivered message.
      var next = 0, flying = [];
      out.forEach(function (r) {
        if (r.kind === "send") { r.msg_id = next++; flying.push({ from: r.node, to: r.peer, key: JSON.stringify(r.msg), kind: r.msg_kind, id: r.msg_id }); }
        else if (r.kind === "deliver" || r.kind === "drop") {
          var key = JSON.stringify(r.msg), j = flying.findIndex(function (f) { return f.from === r.peer && f.to === r.node && (r.kind === "drop" ? f.kind === r.msg_kind : f.key === key); });
          if (j >= 0) { r.msg_id = flying[j].id; if (!(G.duplicating && r.kind === "deliver")) flying.splice(j, 1); }
        }
      });
      // Stamps: local events tick, a send ticks and travels, a delivery takes the maximum and ticks.
      var nn = uids.length, lam = [], vec = [], sent = {};
      for (var a = 0; a < nn; a++) { lam.push(0); var z = []; for (var b = 0; b < nn; b++) z.push(0); vec.push(z); }
      out.forEach(function (r) {
        if (r.node == null) return;
        var i = r.node, tick = function () { lam[i]++; vec[i][i]++; };
        if (r.kind === "send") { tick(); sent[r.msg_id] = { l: lam[i], v: vec[i].slice() }; }
        else if (r.kind === "deliver") {
          var st = sent[r.msg_id];
          if (st) { lam[i] = Math.max(lam[i], st.l); for (var k = 0; k < nn; k++) vec[i][k] = Math.max(vec[i][k], st.v[k]); }
          tick();
        } else if (r.kind === "timer" || r.kind === "request" || r.kind === "emit") tick();
        r.lamport = lam[i];
        if (nn <= 64) r.vector = vec[i].slice();
      });
      var bad = G.states[at].violated;
      bad.forEach(function (v) { out.push({ step: step, time_ns: step * 1e6, kind: "violation", property: v[0], detail: v[1] }); });
      return { records: out, state: at, steps: step, violated: bad };
    }
    function xpage(t) {
      var d = { title: (report.algorithm || "") + " by hand (" + uids.length + " nodes, " + t.steps + " steps)", source: "check", uids: uids,
        records: t.records, gaps: [], total_records: t.records.length,
        report: { algorithm: report.algorithm, family: report.family, nodes: uids.length, events: t.steps,
          violations: t.violated.map(function (v) { return { property: v[0], step: t.steps, detail: v[1] }; }) },
        verdict: t.violated.length ? t.violated[0][0] + " violated after " + t.steps + " steps: " + t.violated[0][1] : t.steps + " steps chosen by hand; no always-property is violated here",
        ok: !t.violated.length, violation: t.violated.length ? [t.steps, null] : null };
      return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"><style>" + STYLE +
        "</style></head><body><div id=\"app\"></div><script type=\"application/json\" id=\"run-data\">" +
        JSON.stringify(d).replace(/</g, "\\u003c") + "</scr" + "ipt><script>" + SCRIPT + "</scr" + "ipt></body></html>";
    }
    function xshow(playFrom) {
      var t = xtrace(xpath), list = xbox.querySelector("#x-enabled"), st = G.states[t.state];
      list.textContent = "";
      st.steps.forEach(function (e, i) {
        var b = el("button", { type: "button", "data-step": String(i) }, list, e[0]);
        b.addEventListener("click", function () { xpath.push(i); xundone = []; xshow(); });
      });
      xbox.querySelector("#x-status").textContent = t.violated.length
        ? t.violated.map(function (v) { return v[0] + " violated: " + v[1]; }).join("; ")
        : t.steps + " steps; no always-property violated here" + (st.steps.length ? "" : "; nothing more can happen");
      xbox.querySelector("#x-status").className = t.violated.length ? "bad" : "good";
      var frame = document.createElement("iframe");
      frame.title = "the path so far";
      frame.srcdoc = xpage(t);
      if (playFrom != null) frame.addEventListener("load", function () {
        var w = frame.contentWindow;
        if (w.ringleaderViewer) { w.ringleaderViewer.go(playFrom); var p = w.document.getElementById("play"); if (p) p.click(); }
      });
      var holder = xbox.querySelector("#x-frame");
      holder.textContent = "";
      holder.appendChild(frame);
      xbox.querySelector("#x-back").disabled = !xpath.length;
      xbox.querySelector("#x-forward").disabled = !xundone.length;
      document.body.setAttribute("data-explore-steps", String(xpath.length));
      document.body.setAttribute("data-explore-violated", t.violated.map(function (v) { return v[0]; }).join(","));
    }
    // The nearest state that violates an always-property, breadth-first over the page's graph.
    function xfind() {
      var from = xtrace(xpath).state, seen = {}, queue = [[from, []]];
      seen[from] = true;
      while (queue.length) {
        var q = queue.shift();
        if (G.states[q[0]].violated.length) return q[1];
        G.states[q[0]].steps.forEach(function (e, i) { if (!seen[e[1]]) { seen[e[1]] = true; queue.push([e[1], q[1].concat([i])]); } });
      }
      return null;
    }
    bExplore.addEventListener("click", function () {
      if (!xbox) {
        xbox = el("div", { id: "explore" }, document.body);
        var bar = el("div", { class: "x-bar" }, xbox);
        el("strong", null, bar, "You are the scheduler: pick each step (every state of this model is in the page) ");
        var bBack = el("button", { id: "x-back", type: "button" }, bar, "◀ back");
        var bFwd = el("button", { id: "x-forward", type: "button" }, bar, "forward ▶");
        var bFind = el("button", { id: "x-find", type: "button", title: "the nearest violation of an always-property from here, breadth-first" }, bar, "find a violation from here");
        var bClose = el("button", { id: "x-close", type: "button" }, bar, "close");
        el("div", { id: "x-status" }, xbox);
        var body = el("div", { class: "x-body" }, xbox);
        el("div", { id: "x-enabled" }, body);
        el("div", { id: "x-frame" }, body);
        bBack.addEventListener("click", function () { if (xpath.length) { xundone.push(xpath.pop()); xshow(); } });
        bFwd.addEventListener("click", function () { if (xundone.length) { xpath.push(xundone.pop()); xshow(); } });
        bClose.addEventListener("click", function () { xbox.style.display = "none"; });
        bFind.addEventListener("click", function () {
          var more = xfind(), from = xpath.length;
          if (more == null) { xbox.querySelector("#x-status").textContent = "no violation reachable from here: every state reachable was searched"; document.body.setAttribute("data-explore-found", "none"); return; }
          xpath = xpath.concat(more);
          xundone = [];
          xshow(from);
          document.body.setAttribute("data-explore-found", String(more.length));
        });
      }
      xbox.style.display = "";
      xshow();
    });
  }

  // For measurements and tests: redraw the view, go to a row.
  // `point(col, row)`: where a lifeline's row is on screen (client coordinates).
  function point(col, row) {
    var box = svg.getBoundingClientRect();
    return { x: box.left + x(col) - (parseFloat(svg.style.left) || 0), y: box.top + y(row) - (parseFloat(svg.style.top) || 0) };
  }
  function message(j) {
    var mg = msgs[j];
    return { from: mg.from, to: mg.to, r0: mg.r0, r1: mg.r1, kind: mg.kind, reason: mg.reason, sk: mg.sk, rk: mg.rk,
      t0: mg.send ? mg.send.time_ns : null, t1: mg.recv.time_ns };
  }
  window.ringleaderViewer = { draw: draw, go: go, rows: rows.length, point: point, message: message, labels: labels.length,
    current: function () { return current; }, y: y, jump: jump, jumps: jumps, selectEvent: selectEvent, playing: function () { return playing; },
    zoom: function () { return ZOOMS[zoomAt]; }, height: function () { return H; }, records: recs };
  var started = performance.now();
  draw();
  // Where the page opens: the step the URL names, the first violation, or the end (the whole
  // run drawn; play starts over from the first step).
  var asked = /step=(\d+)/.exec(location.hash), start = violation ? violation.r0 : lastRow;
  if (asked) { var at = rows.findIndex(function (rw) { return rw.step >= +asked[1]; }); start = at < 0 ? lastRow : at; }
  go(start);
  if (violation) detail.textContent = "First violation: " + violation.property + " — " + violation.detail;
  document.body.setAttribute("data-ready", "1");
  // Milliseconds: drawing alone, and from the start of navigation to a drawn page (parsing the
  // embedded run included); docs/VISUAL.md reports them.
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now() - started)));
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
  document.body.setAttribute("data-rows", String(rows.length));
  document.body.setAttribute("data-columns", String(cols.length));
  document.body.setAttribute("data-messages", String(msgs.filter(function (mg) { return !mg.dropped; }).length));
  document.body.setAttribute("data-drops", String(msgs.filter(function (mg) { return mg.dropped; }).length));
})();
