// workpool dashboard: the page's small script. Everything shows without it; with it,
// times read in the browser's time zone, the live part of a page refreshes itself, and
// cancel and retry ask for confirmation in a dialog instead of a page.
(function () {
  "use strict";

  var TIME_FORMAT = {
    year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false
  };

  // <time datetime="..."> elements: shown in local time, the UTC text kept as a tooltip.
  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (element) {
      var moment = new Date(element.getAttribute("datetime"));
      if (isNaN(moment.getTime())) { return; }
      element.title = element.textContent;
      element.textContent = moment.toLocaleString(undefined, TIME_FORMAT);
    });
  }

  // Short polling of the page's live part (#live), while the tab is visible, until it
  // is final (a finished run). The server renders the fragment, escaped as the page.
  function refreshLive() {
    var region = document.getElementById("live");
    if (!region) { return; }
    var every = parseInt(region.getAttribute("data-refresh"), 10) || 2000;
    var busy = false;
    var pressed = false;

    // Not while someone types in a form of the region, or presses a button in it: the
    // swap would take the field, or the button, from under them.
    function editing() {
      var active = document.activeElement;
      var typing = active && region.contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
      return pressed || typing;
    }
    region.addEventListener("pointerdown", function () { pressed = true; });
    document.addEventListener("pointerup", function () {
      window.setTimeout(function () { pressed = false; }, 0);
    });

    function refresh() {
      if (busy || document.hidden || editing() || region.querySelector("[data-final]")) { return; }
      busy = true;
      fetch(window.location.href, {
        headers: { "X-Workpool-Live": "1" }, credentials: "same-origin", cache: "no-store"
      }).then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      }).then(function (html) {
        if (editing()) { return; }
        region.innerHTML = html;
        localTimes(region);
        document.body.classList.remove("stale");
      }).catch(function () {
        document.body.classList.add("stale");
      }).then(function () { busy = false; });
    }

    window.setInterval(refresh, every);
    document.addEventListener("visibilitychange", refresh);
  }

  // Forms with data-confirm ask first; on yes, they say so (confirmed=1), so the server
  // does not ask again on a page of its own.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute("data-confirm");
    if (!question) { return; }
    if (!window.confirm(question)) { event.preventDefault(); return; }
    var confirmed = form.querySelector("input[name=confirmed]");
    if (confirmed) { confirmed.value = "1"; }
  });

  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    refreshLive();
  });
}());
