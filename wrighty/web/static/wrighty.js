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

  document.addEventListener("DOMContentLoaded", function () {
    confirmActions();
    followBoard();
  });
})();
