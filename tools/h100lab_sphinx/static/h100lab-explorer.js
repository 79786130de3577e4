// H100 Lab: the explorers of a static page (h100lab.widgets.offline), and phone-friendly tables.
//
// Each explorer is a <div class="h100lab-explorer"> holding its controls (disabled until this script
// drives them), its text and figure, and a JSON manifest of the states computed when the book was
// built: "i,j,k" (an index into each control's values) -> [image or -1, text, alt], where an image
// is [file under _static/explorers/, CSS width]. Moving a control shows the computed state with that
// value; when the other controls' values were not computed with it, the closest computed state is
// shown and the controls are moved to it, with a note saying so. Nothing is ever guessed: every
// figure shown is one the model drew.
(function () {
  "use strict";
  var script = document.currentScript;
  var IMAGES = new URL("explorers/", script ? script.src : location.href).href;

  function setup(root) {
    var dataTag = root.querySelector("script.h100lab-explorer-data");
    if (!dataTag || root.dataset.ready) return;
    var m = JSON.parse(dataTag.textContent);
    var img = root.querySelector("img.h100lab-explorer-figure");
    var text = root.querySelector(".h100lab-explorer-text");
    var note = document.createElement("p");
    note.className = "h100lab-explorer-snapped";
    note.setAttribute("aria-live", "polite");
    (img || text).insertAdjacentElement("afterend", note);
    var current = m.base.slice();
    var fields = Array.prototype.slice.call(root.querySelectorAll("[data-control]"));

    function read(field) {
      return field.type === "checkbox" ? (field.checked ? 1 : 0) : parseInt(field.value, 10);
    }
    function write(field, i) {
      var c = m.controls[+field.dataset.control];
      if (field.type === "checkbox") field.checked = c.labels[i] === "on";
      else field.value = String(i);
      var out = field.parentElement.querySelector("output");
      if (out) out.textContent = c.labels[i];
    }
    function show(idx, moved) {
      var st = m.states[idx.join(",")];
      current = idx.slice();
      fields.forEach(function (f) { write(f, current[+f.dataset.control]); });
      text.innerHTML = m.texts[st[1]];
      if (img) {
        if (st[0] >= 0) {
          root.classList.add("is-loading");
          img.onload = img.onerror = function () { root.classList.remove("is-loading"); };
          img.src = IMAGES + m.images[st[0]][0];
          img.width = m.images[st[0]][1];
          img.alt = m.alts[st[2]];
          img.style.visibility = "";
        } else {
          img.style.visibility = "hidden";
          img.alt = "";
        }
      }
      root.dataset.state = idx.join(",");
      note.textContent = moved.length ? "Not computed for this page with the other settings, so " +
        moved.join(", ") + (moved.length > 1 ? " were" : " was") + " moved to the nearest computed state." : "";
    }
    function choose(ci, vi) {
      var want = current.slice();
      want[ci] = vi;
      if (m.states[want.join(",")]) return show(want, []);
      var best = null, bestScore = -1;
      Object.keys(m.states).forEach(function (key) {
        var idx = key.split(",").map(Number);
        if (idx[ci] !== vi) return;
        var score = 0;
        for (var j = 0; j < idx.length; j++) {
          if (j === ci) continue;
          if (idx[j] === want[j]) score += 4;              // keep what the reader set
          else if (idx[j] === m.base[j]) score += 1;       // else fall back to the chapter's setting
        }
        if (score > bestScore) { bestScore = score; best = idx; }
      });
      if (!best) return show(current, []);
      var moved = [];
      best.forEach(function (v, j) {
        if (j !== ci && v !== want[j]) moved.push(m.controls[j].label + " → " + m.controls[j].labels[v]);
      });
      show(best, moved);
    }
    fields.forEach(function (f) {
      var ci = +f.dataset.control;
      f.disabled = false;
      var handler = function () { choose(ci, read(f)); };
      f.addEventListener(f.type === "range" ? "input" : "change", handler);
      if (f.type === "range") f.addEventListener("change", handler);
    });
    root.dataset.ready = "1";
    root.dataset.state = current.join(",");
  }

  // Tables: a column whose values are all short (numbers, verdicts) never wraps (CSS .h100lab-short);
  // a table of three or more columns reads one row at a time on a phone (CSS .h100lab-stacked).
  function stackTables() {
    document.querySelectorAll(".bd-article table").forEach(function (t) {
      var rows = Array.prototype.slice.call(t.querySelectorAll("tr"));
      var width = Math.max.apply(null, rows.map(function (tr) { return tr.children.length; }).concat([0]));
      for (var i = 0; i < width; i++) {
        var cells = rows.map(function (tr) { return tr.children[i]; }).filter(Boolean);
        if (cells.every(function (c) { return c.textContent.trim().length <= 12; })) {
          cells.forEach(function (c) { c.classList.add("h100lab-short"); });
        }
      }
      var heads = Array.prototype.map.call(t.querySelectorAll("thead th"), function (th) {
        return th.innerText.trim();
      });
      if (heads.length < 3) return;
      t.classList.add("h100lab-stacked");
      t.querySelectorAll("tbody tr").forEach(function (tr) {
        Array.prototype.forEach.call(tr.children, function (td, i) {
          if (heads[i]) td.setAttribute("data-label", heads[i]);
        });
      });
    });
  }

  function init() {
    document.querySelectorAll(".h100lab-explorer").forEach(setup);
    stackTables();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
