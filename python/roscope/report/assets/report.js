/* roscope report: draws the figures (Plotly, inlined above), the callback
   duration-over-time selector, and sortable tables. Reads only the JSON block
   #roscope-data of this page; fetches nothing. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("roscope-data").textContent);
  var config = { displaylogo: false, responsive: true };

  function draw(el, fig) {
    return Plotly.react(el, fig.data, fig.layout, config).then(function () {
      el.setAttribute("data-rendered", "1");
    });
  }

  function seriesFig(key) {
    var s = data.series[key], label = data.series_labels[key] || key, traces;
    if (s.binned) {
      traces = [
        { type: "scatter", mode: "lines", x: s.t, y: s.hi, line: { width: 0 }, hoverinfo: "skip", showlegend: false },
        { type: "scatter", mode: "lines", x: s.t, y: s.lo, fill: "tonexty", fillcolor: "rgba(76,120,168,0.25)",
          line: { width: 0 }, name: "min to max in the bin", hoverinfo: "skip" },
        { type: "scatter", mode: "lines", x: s.t, y: s.y, name: "mean in the bin", line: { color: "#4c78a8" } }
      ];
    } else {
      traces = [{ type: "scatter", mode: "lines+markers", x: s.t, y: s.y, name: "run", marker: { size: 4 },
                  line: { color: "#4c78a8", width: 1 } }];
    }
    return { data: traces, layout: {
      title: { text: label.length > 120 ? label.slice(0, 119) + "\u2026" : label, font: { size: 13 }, x: 0, xanchor: "left",
               xref: "paper" },
      height: 380, margin: { l: 60, r: 20, t: 50, b: 50 },
      xaxis: { title: { text: "ms from the trace's start" } },
      yaxis: { title: { text: "duration (ms)" }, rangemode: "tozero" }, plot_bgcolor: "#fbfbfb",
      legend: { orientation: "h", y: -0.2 } } };
  }

  function cellValue(td) {
    var v = td.getAttribute("data-v");
    if (v === null || v === "") return null;
    var n = Number(v);
    return isNaN(n) ? v.toLowerCase() : n;
  }

  function sortBy(th) {
    var table = th.closest("table"), idx = Array.prototype.indexOf.call(th.parentNode.children, th);
    var desc = !th.classList.contains("desc");
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.classList.remove("asc", "desc"); });
    th.classList.add(desc ? "desc" : "asc");
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a.cells[idx]), y = cellValue(b.cells[idx]);
      if (x === y) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      return (x < y ? -1 : 1) * (desc ? -1 : 1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  // A plot inside a folded part is drawn when the part is first opened (drawn folded, it
  // would have no width); the timeline is drawn at once.
  function drawIn(scope) {
    scope.querySelectorAll(".plot[data-fig]").forEach(function (el) {
      if (el.getAttribute("data-drawn") || el.closest("details:not([open])")) return;
      var fig = data.figs[el.getAttribute("data-fig")];
      if (fig) { el.setAttribute("data-drawn", "1"); draw(el, fig); }
    });
  }
  drawIn(document);
  document.querySelectorAll("details").forEach(function (d) {
    d.addEventListener("toggle", function () { if (d.open) drawIn(d); });
  });
  var tl = document.getElementById("timeline");
  if (tl && data.timeline) RoscopeTimeline.draw(tl, data.timeline);
  var sel = document.getElementById("series-select");
  if (sel) {
    var el = document.getElementById("series-plot");
    var show = function () { draw(el, seriesFig(sel.value)); };
    sel.addEventListener("change", show);
    show();
  }
  document.querySelectorAll("table.sortable th").forEach(function (th) {
    th.addEventListener("click", function () { sortBy(th); });
  });
})();
