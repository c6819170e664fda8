/* Brokerage monitor: draws the charts once the page is laid out, at the width of their box, and again when the
   box changes size (plotly.js is fetched only when a page has a chart); refreshes the parts of a page that change without reloading it, never while a form holds
   input; asks before a task action is sent. No framework, no external asset. */
(function () {
  "use strict";

  var CONFIG = { displaylogo: false, responsive: true };
  var PLOTLY_SRC = document.currentScript ? document.currentScript.dataset.plotly : null;
  var plotlyLoading = null;

  // plotly.js on first need: the overview and the lists without charts never download it
  function withPlotly(then) {
    if (window.Plotly) return then();
    if (!PLOTLY_SRC) return;
    if (!plotlyLoading) {
      plotlyLoading = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = PLOTLY_SRC;
        script.onload = resolve;
        script.onerror = function () { reject(new Error("could not load " + PLOTLY_SRC)); };
        document.head.appendChild(script);
      });
    }
    plotlyLoading.then(then, function (error) { console.error(error.message); });
  }
  var observer = window.ResizeObserver
    ? new ResizeObserver(function (entries) {
        entries.forEach(function (entry) {
          var box = entry.target;
          if (box.dataset.drawn && box.offsetWidth > 0) window.Plotly.Plots.resize(box);
          else if (!box.dataset.drawn && box.offsetWidth > 0) draw(box);
        });
      })
    : null;

  function draw(box) {
    if (!window.Plotly || box.dataset.drawn || box.offsetWidth === 0) return;
    var source = document.getElementById(box.dataset.figure);
    if (!source) return;
    var figure = JSON.parse(source.textContent);
    var layout = Object.assign({}, figure.layout, { autosize: true });
    delete layout.width;
    box.dataset.drawn = "1";
    window.Plotly.newPlot(box, figure.data, layout, CONFIG);
  }

  function drawAll(root) {
    var boxes = root.querySelectorAll(".chart[data-figure]");
    if (!boxes.length) return;
    withPlotly(function () {
      boxes.forEach(function (box) {
        draw(box);
        if (observer) observer.observe(box);
      });
    });
  }

  /* --- live parts --- */
  var paused = false;
  var timer = null;

  function formHasInput() {
    var active = document.activeElement;
    if (active && active.form) return true; // typing, or about to
    var fields = document.querySelectorAll("form input, form select, form textarea");
    return Array.prototype.some.call(fields, function (field) {
      if (field.type === "hidden" || field.type === "submit") return false;
      if (field.type === "checkbox" || field.type === "radio") return field.checked !== field.defaultChecked;
      if (field.tagName === "SELECT" && !field.multiple) {
        // with no option marked selected, the first one is the default
        var initial = Array.prototype.findIndex.call(field.options, function (option) { return option.defaultSelected; });
        return field.selectedIndex !== Math.max(initial, 0);
      }
      if (field.tagName === "SELECT") {
        return Array.prototype.some.call(field.options, function (option) { return option.selected !== option.defaultSelected; });
      }
      return field.value !== field.defaultValue;
    });
  }

  function say(text) {
    var status = document.getElementById("live-status");
    if (status) status.textContent = text;
  }

  function utcTime() {
    return new Date().toISOString().slice(11, 19) + " UTC";
  }

  function keepOpenState(oldPart, newPart) {
    var before = oldPart.querySelectorAll("details");
    var after = newPart.querySelectorAll("details");
    for (var i = 0; i < Math.min(before.length, after.length); i++) after[i].open = before[i].open;
  }

  function refresh() {
    if (paused || document.hidden) return;
    if (formHasInput()) {
      say("not refreshed: a form holds your input");
      return;
    }
    fetch(window.location.href, { headers: { "X-Requested-With": "live-refresh" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        if (formHasInput()) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (part) {
          var replacement = fresh.getElementById(part.id);
          if (!replacement) return;
          keepOpenState(part, replacement);
          var adopted = document.importNode(replacement, true);
          part.querySelectorAll(".chart[data-drawn]").forEach(function (box) {
            if (observer) observer.unobserve(box);
            if (window.Plotly) window.Plotly.purge(box);
          });
          part.replaceWith(adopted);
          titleIdentifiers(adopted);
          drawAll(adopted);
        });
        say("updated " + utcTime());
      })
      .catch(function (error) {
        say("could not refresh (" + error.message + "); trying again");
      });
  }

  function startLive() {
    var seconds = parseInt(document.body.dataset.refresh || "0", 10);
    var button = document.getElementById("live-pause");
    if (!seconds || !button) return;
    say("updated " + utcTime());
    timer = window.setInterval(refresh, seconds * 1000);
    button.hidden = false;
    button.addEventListener("click", function () {
      paused = !paused;
      button.textContent = paused ? "Resume" : "Pause";
      button.setAttribute("aria-pressed", paused ? "true" : "false");
      say(paused ? "paused" : "updated " + utcTime());
      if (!paused) refresh();
    });
  }

  /* --- confirmed actions --- */
  function confirmActions() {
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.dataset.confirm)) event.preventDefault();
      });
    });
  }

  /* --- names cut short by the layout keep the whole name in their title --- */
  function titleIdentifiers(root) {
    root.querySelectorAll('table.grid a[href^="/queues/"], table.grid a[href^="/sites/"]').forEach(function (link) {
      if (!link.title) link.title = link.textContent;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    titleIdentifiers(document);
    drawAll(document);
    startLive();
    confirmActions();
  });
  window.monitorCharts = { drawAll: drawAll, refresh: refresh, timer: function () { return timer; } };
})();
