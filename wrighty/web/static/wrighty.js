// wrighty serve: the console's own script (no inline script: the CSP allows 'self' only).
// The board follows the server's events (GET /events, server-sent) and fetches its table
// again (GET /board, with the page's filters) when the board changed; an action's button
// asks first. Plain EventSource and fetch: no library.
"use strict";

(function () {
  function confirmActions() {
    document.querySelectorAll("button[data-confirm]").forEach(function (button) {
      button.addEventListener("click", function (event) {
        if (!window.confirm(button.getAttribute("data-confirm"))) {
          event.preventDefault();
        }
      });
    });
  }

  function followBoard() {
    var board = document.getElementById("board");
    if (!board || !window.EventSource) {
      return;
    }
    var fragment = board.getAttribute("data-live") + window.location.search;
    var fetching = false;
    var again = false;

    function refresh() {
      if (fetching) {
        again = true;
        return;
      }
      fetching = true;
      fetch(fragment, { credentials: "same-origin", cache: "no-store" })
        .then(function (response) {
          if (!response.ok) {
            throw new Error("board: " + response.status);
          }
          return response.text();
        })
        .then(function (html) {
          // The server's own template, every outside value escaped there.
          board.innerHTML = html;
          board.setAttribute("data-updated", String(Date.now()));
        })
        .catch(function () {})
        .finally(function () {
          fetching = false;
          if (again) {
            again = false;
            refresh();
          }
        });
    }

    var events = new EventSource("/events");
    events.addEventListener("board", refresh);
  }

  // An item's page: its last run's output, followed (GET /items/ID/log, server-sent). The
  // text goes in as text (a text node), never as HTML; a page that reconnects starts over.
  function followLog() {
    var log = document.getElementById("log");
    if (!log || !window.EventSource) {
      return;
    }
    var panes = {
      stdout: document.getElementById("log-stdout"),
      stderr: document.getElementById("log-stderr"),
    };
    var note = document.getElementById("log-note");
    var events = new EventSource(log.getAttribute("data-stream"));
    events.addEventListener("start", function (event) {
      var start = JSON.parse(event.data);
      panes.stdout.textContent = "";
      panes.stderr.textContent = "";
      var skipped = start.skipped.stdout + start.skipped.stderr;
      note.textContent = skipped
        ? "the earlier " + skipped + " bytes are not shown (wrighty logs prints them); following"
        : "following";
      log.setAttribute("data-state", "following");
    });
    events.addEventListener("out", function (event) {
      var out = JSON.parse(event.data);
      var pane = panes[out.stream];
      if (pane) {
        pane.appendChild(document.createTextNode(out.text));
        log.setAttribute("data-updated", String(Date.now()));
      }
    });
    events.addEventListener("end", function (event) {
      var end = JSON.parse(event.data);
      note.textContent = "the run has ended (" + end.outcome + ")";
      log.setAttribute("data-state", "ended");
      events.close();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    confirmActions();
    followBoard();
    followLog();
  });
})();
