// EchoMQ dashboard: live counts by polling the page's JSON (data-poll on
// <body>) and "select all" for the bulk forms. No library, no inline
// script (the Content-Security-Policy allows only this file).
(function () {
  "use strict";
  var body = document.body;
  var url = body.getAttribute("data-poll");
  var every = parseInt(body.getAttribute("data-poll-ms"), 10) || 2000;

  function rowsFor(name) {
    var out = [];
    document.querySelectorAll("[data-queue]").forEach(function (el) {
      if (el.getAttribute("data-queue") === name) out.push(el);
    });
    return out;
  }

  function apply(q) {
    rowsFor(q.name).forEach(function (row) {
      row.querySelectorAll("[data-field]").forEach(function (cell) {
        var f = cell.getAttribute("data-field");
        var v = f === "paused" ? (q.paused ? "paused" : "running") : q[f];
        if (v !== undefined && cell.textContent !== String(v)) cell.textContent = String(v);
      });
    });
  }

  function poll() {
    if (!url) return;
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) return;
        (data.queues || []).forEach(apply);
        var u = document.getElementById("updated");
        if (u) u.textContent = "updated " + new Date().toLocaleTimeString();
      })
      .catch(function () {})
      .then(function () { setTimeout(poll, every); });
  }

  function charts() {
    document.querySelectorAll("img[data-chart]").forEach(function (img) {
      var src = img.getAttribute("src").split("?")[0];
      img.setAttribute("src", src + "?t=" + Date.now());
    });
    setTimeout(charts, Math.max(every * 3, 5000));
  }

  document.querySelectorAll("input[data-select-all]").forEach(function (all) {
    all.addEventListener("change", function () {
      document.querySelectorAll("input[type=checkbox][name=id]").forEach(function (c) { c.checked = all.checked; });
    });
  });

  setTimeout(poll, every);
  setTimeout(charts, Math.max(every * 3, 5000));
})();
