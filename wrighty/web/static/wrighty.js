// wrighty serve: the console's own script (no inline script: the CSP allows 'self' only).
// A live part of a page (the board, the Operations page's sections) follows the server's
// events (server-sent) and fetches its HTML again when what it shows changed; the board keeps
// the tab title's count of the items waiting for a person, and tells of a new one by a
// browser notification when the person asked for that; an item's log follows its end while
// the reader is there; an action's button asks first; "Since you last looked" keeps the time of
// the last "Mark as seen" in this browser. Plain EventSource and fetch: no library.
"use strict";

(function () {
  // Every button that asks first, present or fetched later (a live part is drawn again).
  function confirmActions() {
    document.addEventListener("click", function (event) {
      var button = event.target.closest && event.target.closest("button[data-confirm]");
      if (button && !window.confirm(button.getAttribute("data-confirm"))) {
        event.preventDefault();
      }
    });
  }

  // A live part: data-live (its HTML, fetched with the page's query), data-events (the
  // stream) and data-event (the event that says it changed). ``drawn`` runs after each draw.
  function followPart(part, drawn) {
    if (!part || !window.EventSource) {
      return;
    }
    var fragment = part.getAttribute("data-live") + window.location.search;
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
          // A filter the board refuses is drawn too (400): it says why.
          if (!response.ok && response.status !== 400) {
            throw new Error(fragment + ": " + response.status);
          }
          return response.text();
        })
        .then(function (html) {
          // The server's own template, every outside value escaped there.
          part.innerHTML = html;
          part.setAttribute("data-updated", String(Date.now()));
          drawn();
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

    var events = new EventSource(part.getAttribute("data-events"));
    events.addEventListener(part.getAttribute("data-event"), refresh);
  }

  // The opt-in notification: asked for only on a click of its button, kept in this browser.
  var NOTIFY_KEY = "wrighty.notify";

  function notifying() {
    return (
      "Notification" in window &&
      Notification.permission === "granted" &&
      window.localStorage.getItem(NOTIFY_KEY) === "on"
    );
  }

  function notifyControl() {
    var button = document.getElementById("notify-me");
    var note = document.getElementById("notify-note");
    if (!button || !("Notification" in window)) {
      return;
    }
    function show() {
      button.hidden = false;
      button.textContent = notifying() ? "Notifications on (turn off)" : "Notify me";
      button.setAttribute("aria-pressed", notifying() ? "true" : "false");
    }
    button.addEventListener("click", function () {
      if (notifying()) {
        window.localStorage.removeItem(NOTIFY_KEY);
        show();
        return;
      }
      Notification.requestPermission().then(function (answer) {
        if (answer === "granted") {
          window.localStorage.setItem(NOTIFY_KEY, "on");
          note.textContent =
            "This browser tells you when an item starts to wait for you, while this page is open.";
        } else {
          note.textContent = "The browser refused notifications (its site settings allow them).";
        }
        note.hidden = false;
        show();
      });
    });
    show();
  }

  // The board: the tab title counts the items waiting for a person; one that was not
  // waiting before is told of when the person asked for notifications.
  function followBoard() {
    var board = document.getElementById("board");
    if (!board) {
      return;
    }
    var title = document.title.replace(/^\(\d+\) /, "");
    var seen = waiting();

    function waiting() {
      var summary = document.getElementById("board-summary");
      var ids = summary ? summary.getAttribute("data-for-a-person") : "";
      return ids ? ids.split(" ") : [];
    }

    function tell(id) {
      var link = board.querySelector('table.board a[href="/items/' + id + '"]');
      var shown = new Notification("wrighty: item " + id + " waits for you", {
        body: link ? link.textContent : "",
        tag: "wrighty-item-" + id,
      });
      shown.addEventListener("click", function () {
        window.focus();
        window.location.assign("/items/" + id);
      });
    }

    followPart(board, function () {
      var now = waiting();
      document.title = (now.length ? "(" + now.length + ") " : "") + title;
      if (notifying()) {
        now.filter(function (id) { return seen.indexOf(id) < 0; }).forEach(tell);
      }
      seen = now;
    });
  }

  // A log pane follows its end while the reader is at it (or has not scrolled): scrolled up,
  // it stays where the reader is and offers "jump to the end".
  var AT_END_PX = 16;

  function followTail(pane) {
    var jump = document.createElement("button");
    jump.type = "button";
    jump.className = "log-jump";
    jump.textContent = "jump to the end";
    jump.hidden = true;
    pane.insertAdjacentElement("afterend", jump);
    var following = true;

    function atEnd() {
      return pane.scrollHeight - pane.scrollTop - pane.clientHeight <= AT_END_PX;
    }
    function mark() {
      pane.setAttribute("data-following", following ? "yes" : "no");
      jump.hidden = following;
    }
    function toEnd() {
      pane.scrollTop = pane.scrollHeight;
    }
    pane.addEventListener("scroll", function () {
      following = atEnd();
      mark();
    });
    jump.addEventListener("click", function () {
      following = true;
      toEnd();
      mark();
    });
    mark();
    return function grown() {
      if (following) {
        toEnd();
      }
    };
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
    var grown = {
      stdout: followTail(panes.stdout),
      stderr: followTail(panes.stderr),
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
        grown[out.stream]();
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

  // Since you last looked: the time of this browser's last "Mark as seen" is kept here, in
  // this browser alone (the server writes nothing). Opened without ?since=, the page asks for
  // itself since that time; "Mark as seen" keeps the server's time of the page (data-now:
  // not this device's clock, which may be wrong) and shows the page since then. A kept time
  // the server refuses (a year old, say) is forgotten: the page falls back to its last 24 h.
  var SEEN_KEY = "wrighty.seen";

  // Storage turned off or full: nothing is kept, and the page shows its last 24 h.
  function seenTime() {
    try {
      return window.localStorage.getItem(SEEN_KEY);
    } catch (blocked) {
      return null;
    }
  }

  function keepSeen(value) {
    try {
      if (value) {
        window.localStorage.setItem(SEEN_KEY, value);
      } else {
        window.localStorage.removeItem(SEEN_KEY);
      }
    } catch (blocked) {}
  }

  function sinceLastLooked() {
    var page = document.getElementById("since-page");
    if (!page) {
      return;
    }
    var asked = new URLSearchParams(window.location.search).get("since");
    var seen = seenTime();
    function show(since) {
      window.location.assign("/since?since=" + encodeURIComponent(since));
    }
    if (page.hasAttribute("data-refused")) {
      if (seen && asked === seen) {
        keepSeen(null);
      }
      return;
    }
    if (asked === null && seen) {
      window.location.replace("/since?since=" + encodeURIComponent(seen));
      return;
    }
    var note = document.getElementById("since-kept");
    if (note && seen && asked === seen) {
      note.hidden = false;
    }
    var button = document.getElementById("mark-seen");
    if (!button) {
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      var now = button.getAttribute("data-now");
      keepSeen(now);
      show(now);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    sinceLastLooked();
    confirmActions();
    notifyControl();
    followBoard();
    followPart(document.getElementById("operations"), function () {});
    followLog();
  });
})();
