/* roscope report: the thread timeline (report/timeline.py gives its data).
   One row per process (click to open or fold; folded, it shows the runs of all its
   threads), one row per thread under it; runs coloured by callback, executor states
   as a strip under them; a time axis at the top and at the bottom; drag across the
   plot to zoom into a range, the buttons zoom in, out and back to the window.
   Draws SVG from data only; fetches nothing. */
var RoscopeTimeline = (function () {
  "use strict";
  var LABEL_W = 330, PROC_H = 22, THREAD_H = 18, AXIS_H = 26, NS = "http://www.w3.org/2000/svg";

  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function cut(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function fmt(v) { return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3); }

  function niceStep(span, px) {
    var raw = span / Math.max(2, Math.floor(px / 90)), p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  function Timeline(root, d) {
    this.root = root; this.d = d; this.x0 = 0; this.x1 = d.span;
    this.build();
    this.render();
  }

  Timeline.prototype.build = function () {
    var self = this, r = this.root;
    r.innerHTML =
      '<div class="tl-bar"><button data-a="in">zoom in</button><button data-a="out">zoom out</button>' +
      '<button data-a="reset">whole window</button><button data-a="open">open all</button>' +
      '<button data-a="fold">fold all</button><span class="tl-range"></span></div>' +
      '<svg class="tl-axis tl-top"></svg><div class="tl-body"><svg class="tl-rows"></svg></div>' +
      '<svg class="tl-axis tl-bottom"></svg><div class="tl-legend"></div>';
    this.top = r.querySelector(".tl-top"); this.bottom = r.querySelector(".tl-bottom");
    this.body = r.querySelector(".tl-body"); this.rows = r.querySelector(".tl-rows");
    r.querySelector(".tl-bar").addEventListener("click", function (e) {
      var a = e.target.getAttribute("data-a");
      if (!a) return;
      var mid = (self.x0 + self.x1) / 2, half = (self.x1 - self.x0) / 2;
      if (a === "in") self.zoom(mid - half / 2, mid + half / 2);
      else if (a === "out") self.zoom(mid - half * 2, mid + half * 2);
      else if (a === "reset") self.zoom(0, self.d.span);
      else { self.d.procs.forEach(function (p) { p.open = a === "open"; }); self.render(); }
    });
    this.rows.addEventListener("click", function (e) {
      var g = e.target.closest("[data-proc]");
      if (!g || self.dragged) return;
      var p = self.d.procs[+g.getAttribute("data-proc")];
      p.open = !p.open; self.render();
    });
    [this.rows, this.top, this.bottom].forEach(function (el) {
      el.addEventListener("dblclick", function () { self.zoom(0, self.d.span); });
    });
    this.rows.addEventListener("mousedown", function (e) { self.dragStart(e); });
    var legend = this.d.callbacks.slice(0, 20).map(function (c) {
      return '<span class="tl-key" title="' + esc(c.label) + '"><i style="background:' + c.colour + '"></i>' +
        esc(cut(c.label, 60)) + "</span>";
    }).join("");
    var states = this.d.procs.some(function (p) { return p.threads.some(function (t) { return t.st.length; }); });
    if (states) legend += this.d.states.map(function (s) {
      return '<span class="tl-key"><i class="st" style="background:' + s.colour + '"></i>executor ' + s.name + "</span>";
    }).join("");
    r.querySelector(".tl-legend").innerHTML = legend;
    window.addEventListener("resize", function () { self.render(); });
  };

  Timeline.prototype.width = function () { return Math.max(200, this.root.clientWidth - LABEL_W - 12); };
  Timeline.prototype.px = function (t) { return LABEL_W + (t - this.x0) / (this.x1 - this.x0) * this.width(); };

  Timeline.prototype.zoom = function (a, b) {
    var span = this.d.span, min = span / 1e5;
    if (b - a < min) { var m = (a + b) / 2; a = m - min / 2; b = m + min / 2; }
    if (b - a > span) { a = 0; b = span; }
    if (a < 0) { b -= a; a = 0; }
    if (b > span) { a -= b - span; b = span; }
    this.x0 = Math.max(0, a); this.x1 = b; this.render();
  };

  Timeline.prototype.dragStart = function (e) {
    var self = this, box = this.rows.getBoundingClientRect(), sx = e.clientX - box.left;
    if (sx < LABEL_W) return;
    this.dragged = false;
    var sel = document.createElementNS(NS, "rect");
    sel.setAttribute("class", "tl-sel"); sel.setAttribute("y", 0); sel.setAttribute("height", this.rows.getAttribute("height"));
    this.rows.appendChild(sel);
    function move(ev) {
      var x = Math.max(LABEL_W, Math.min(ev.clientX - box.left, LABEL_W + self.width()));
      if (Math.abs(x - sx) > 3) self.dragged = true;
      sel.setAttribute("x", Math.min(x, sx)); sel.setAttribute("width", Math.abs(x - sx));
    }
    function up(ev) {
      document.removeEventListener("mousemove", move); document.removeEventListener("mouseup", up);
      var x = Math.max(LABEL_W, Math.min(ev.clientX - box.left, LABEL_W + self.width()));
      if (self.dragged) {
        var k = (self.x1 - self.x0) / self.width();
        self.zoom(self.x0 + (Math.min(x, sx) - LABEL_W) * k, self.x0 + (Math.max(x, sx) - LABEL_W) * k);
        setTimeout(function () { self.dragged = false; }, 0);
      } else if (sel.parentNode) sel.parentNode.removeChild(sel);
    }
    document.addEventListener("mousemove", move); document.addEventListener("mouseup", up);
    e.preventDefault();
  };

  Timeline.prototype.axis = function (svg, bottom) {
    var w = this.width(), step = niceStep(this.x1 - this.x0, w), out = [];
    var first = Math.ceil(this.x0 / step) * step, y = bottom ? 1 : AXIS_H - 1, ty = bottom ? 16 : AXIS_H - 8;
    out.push('<line x1="' + LABEL_W + '" x2="' + (LABEL_W + w) + '" y1="' + y + '" y2="' + y + '" class="tl-line"/>');
    for (var t = first; t <= this.x1 + 1e-9; t += step) {
      var x = this.px(t).toFixed(1);
      out.push('<line x1="' + x + '" x2="' + x + '" y1="' + (bottom ? 1 : AXIS_H - 6) + '" y2="' + (bottom ? 6 : AXIS_H - 1) +
               '" class="tl-line"/><text x="' + x + '" y="' + ty + '" text-anchor="middle">' + fmt(t) + "</text>");
    }
    out.push('<text x="4" y="' + ty + '" class="tl-unit">ms from the window\'s start</text>');
    svg.setAttribute("width", LABEL_W + w + 4); svg.setAttribute("height", AXIS_H);
    svg.innerHTML = out.join("");
  };

  Timeline.prototype.bars = function (threads, y, h, out) {
    var self = this, cbs = this.d.callbacks, w = this.width();
    threads.forEach(function (th) {
      for (var i = 0; i < th.t.length; i++) {
        var a = th.t[i], b = a + th.d[i];
        if (b < self.x0 || a > self.x1) continue;
        var x = Math.max(LABEL_W, self.px(a)), x2 = Math.min(LABEL_W + w, self.px(b)), c = cbs[th.c[i]];
        out.push('<rect x="' + x.toFixed(1) + '" y="' + (y + 2) + '" width="' + Math.max(1, x2 - x).toFixed(1) + '" height="' +
                 (h - 7) + '" fill="' + c.colour + '"><title>' + esc(c.label) + ": " + fmt(th.d[i]) + " ms at " + fmt(a) +
                 " ms</title></rect>");
      }
      for (var j = 0; j < th.st.length; j++) {
        var s0 = th.st[j], s1 = s0 + th.sd[j];
        if (s1 < self.x0 || s0 > self.x1) continue;
        var sx = Math.max(LABEL_W, self.px(s0)), sx2 = Math.min(LABEL_W + w, self.px(s1)), st = self.d.states[th.ss[j]];
        out.push('<rect class="tl-state" x="' + sx.toFixed(1) + '" y="' + (y + h - 4) + '" width="' +
                 Math.max(1, sx2 - sx).toFixed(1) + '" height="3" fill="' + st.colour + '"><title>executor ' + st.name + ": " +
                 fmt(th.sd[j]) + " ms</title></rect>");
      }
    });
  };

  Timeline.prototype.render = function () {
    var self = this, out = [], y = 0, w = this.width();
    this.d.procs.forEach(function (p, pi) {
      var label = (p.open ? "\u25be " : "\u25b8 ") + p.name + " [" + p.pid + "] \u00b7 " + p.threads.length + " thread" +
        (p.threads.length === 1 ? "" : "s") + " \u00b7 " + fmt(p.busy) + " ms of runs";
      out.push('<g class="tl-proc" data-proc="' + pi + '"><rect class="tl-prow" x="0" y="' + y + '" width="' + (LABEL_W + w) +
               '" height="' + PROC_H + '"/><text class="tl-plabel" x="4" y="' + (y + 15) + '"><title>' +
               esc(p.name + " [" + p.pid + "] on " + p.host) + "</title>" + esc(cut(label, 52)) + "</text>");
      if (!p.open) self.bars(p.threads, y, PROC_H, out);  // folded: the runs of all its threads, on its row
      out.push("</g>");
      y += PROC_H;
      if (!p.open) return;
      p.threads.forEach(function (th) {
        var tl = "  " + th.tid + (th.nodes ? " (" + th.nodes + ")" : "");
        out.push('<text class="tl-tlabel" x="18" y="' + (y + 13) + '"><title>' + esc("thread " + th.tid + " of " + p.name +
                 (th.nodes ? ": " + th.nodes : "")) + "</title>" + esc(cut(tl, 50)) + "</text>" +
                 '<line class="tl-grid" x1="' + LABEL_W + '" x2="' + (LABEL_W + w) + '" y1="' + (y + THREAD_H) + '" y2="' +
                 (y + THREAD_H) + '"/>');
        self.bars([th], y, THREAD_H, out);
        y += THREAD_H;
      });
    });
    this.rows.setAttribute("width", LABEL_W + w + 4); this.rows.setAttribute("height", y + 2);
    this.rows.innerHTML = out.join("");
    this.axis(this.top, false); this.axis(this.bottom, true);
    this.root.querySelector(".tl-range").textContent = fmt(this.x0) + " ms to " + fmt(this.x1) + " ms of " + fmt(this.d.span) + " ms";
    this.root.setAttribute("data-rendered", "1");
  };

  return { draw: function (root, d) { return new Timeline(root, d); } };
})();
