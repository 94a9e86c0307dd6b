// Our own code, no dependencies; loaded with defer after htmx.
// 1. Keeps aria-invalid in step with the inline error messages that htmx swaps in out of band
//    (templates/components/forms.html): a field is invalid while one of its messages is
//    non-empty.
// 2. A value the browser refuses (batch 0, users 70000, letters or nothing in a number) sends
//    no htmx request, so each sizing form (the fine-tune calculator and Serve) says so itself:
//    the field's message (data-invalid, in the page's language), aria-invalid, and the result
//    marked out of date until the value is fixed (issue 18, 1; issue 30, 3).
// 3. The language links follow the address htmx pushed, so switching keeps the settings (3).
// 4. A message marked data-focus ("Saved", a conflict) takes the focus, which scrolls it into
//    view: a long form's answer is not left at its top while the user is at the bottom (10).
// 5. A change asks for its result at once (a select, a radio, a checkbox) or 150 ms after the
//    last keystroke (a number, a pasted config.json): the form's "recalc" event (issue 30, 7).
// 6. Every error answer reaches the page (issue 30, 2): htmx swaps our 4xx and 5xx fragments
//    like any other (templates/base.html, responseHandling); an answer that is not ours (a
//    proxy's 502, a plain 500, no answer at all) is not swapped but said in the stale note,
//    in the page's language, and the result is marked out of date.
// 7. The phone's verdict bar goes stale with the form: from a change until its fresh result
//    stands, it says so and its "Request a quote" link (which carries the old inputs) is
//    disabled (issue 30, 4); an answer that arrives after a later change leaves it stale.
// 8. The language switch keeps what was typed and is in no address (a pasted config.json, the
//    quote form's entries): kept in this tab's sessionStorage, never sent anywhere, and put
//    back into the same page in the other language, which then recalculates (issue 30, 6).
(function () {
  "use strict";
  var TYPING_DELAY_MS = 150;
  var SIZING_FORMS = { calc: true, serve: true };
  function described(field) {
    return (field.getAttribute("aria-describedby") || "").split(" ").map(function (id) {
      return document.getElementById(id);
    }).filter(Boolean);
  }
  function syncField(field) {
    var invalid = described(field).some(function (m) { return m.textContent.trim() !== ""; });
    if (invalid) field.setAttribute("aria-invalid", "true");
    else field.removeAttribute("aria-invalid");
  }
  function sync(message) {
    if (!message.id || message.id.indexOf("err-") !== 0) return;
    var field = document.querySelector('[aria-describedby~="' + message.id + '"]');
    if (field) syncField(field);
  }
  function syncAll() {
    document.querySelectorAll(".field-error").forEach(sync);
  }
  function staleBar(stale) {
    var bar = document.getElementById("verdict-bar");
    if (!bar) return;
    bar.classList.toggle("stale", stale);
    var note = bar.querySelector(".vb-stale");
    if (note) note.hidden = !stale;
    bar.querySelectorAll("a.button").forEach(function (link) {
      if (stale && link.hasAttribute("href")) {
        link.setAttribute("data-href", link.getAttribute("href"));
        link.removeAttribute("href");
        link.setAttribute("aria-disabled", "true");
      } else if (!stale && link.hasAttribute("data-href")) {
        link.setAttribute("href", link.getAttribute("data-href"));
        link.removeAttribute("data-href");
        link.removeAttribute("aria-disabled");
      }
    });
  }
  function showStale(why, status) {
    var result = document.getElementById("result");
    var note = document.getElementById("stale-note");
    if (result) result.classList.toggle("stale", why !== "");
    if (note) {
      if (why !== "") {
        note.textContent = (note.getAttribute("data-" + why) || "").replace("%s", String(status));
      }
      note.hidden = why === "";
    }
    if (why !== "") staleBar(true);
  }
  function checkForm(form) {
    var bad = false;
    form.querySelectorAll("input[data-invalid]").forEach(function (field) {
      var message = document.getElementById("err-" + field.name);
      if (!field.checkValidity()) {
        bad = true;
        if (message) { message.textContent = field.getAttribute("data-invalid"); message.setAttribute("data-client", ""); }
      } else if (message && message.hasAttribute("data-client")) {
        message.textContent = "";
        message.removeAttribute("data-client");
      }
      syncField(field);
    });
    showStale(bad ? "field" : "", 0);
    return bad;
  }
  function followLocation() {
    var here = window.location.pathname + window.location.search;
    document.querySelectorAll("a[data-lang-switch]").forEach(function (link) {
      link.setAttribute("href", "/lang/" + link.getAttribute("data-lang-switch") +
        "?next=" + encodeURIComponent(here));
    });
  }
  var pending = null;
  function typed(field) {
    return field.tagName === "TEXTAREA" ||
      (field.tagName === "INPUT" && ["number", "text", "search"].indexOf(field.type) >= 0);
  }
  document.addEventListener("input", function (event) {
    var form = event.target.form;
    if (!form || !SIZING_FORMS[form.id]) return;
    staleBar(true);
    if (pending) clearTimeout(pending);
    pending = null;
    if (checkForm(form) || !window.htmx) return;
    if (typed(event.target)) {
      pending = setTimeout(function () { pending = null; window.htmx.trigger(form, "recalc"); },
        TYPING_DELAY_MS);
    } else {
      window.htmx.trigger(form, "recalc");
    }
  });
  function ours(xhr) {
    return (xhr.getResponseHeader("Vary") || "").indexOf("HX-Request") >= 0;
  }
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr || xhr.status < 400 || ours(xhr)) return;
    event.detail.shouldSwap = false;
    showStale("failed", xhr.status);
  });
  function offline() { showStale("offline", 0); }
  document.addEventListener("htmx:sendError", offline);
  document.addEventListener("htmx:timeout", offline);
  document.addEventListener("htmx:afterSwap", function (event) {
    var xhr = event.detail.xhr;
    if (event.detail.target && event.detail.target.id === "result" && xhr && ours(xhr)) {
      var form = document.getElementById("calc") || document.getElementById("serve");
      if (!form || !checkForm(form)) staleBar(false);
    }
  });
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    sync(event.detail.target);
  });
  function refused(form) {
    return Array.prototype.some.call(form.querySelectorAll("input[data-invalid]"),
      function (field) { return !field.checkValidity(); });
  }
  // An answer asked for before the latest change (a refused value, or a keystroke still
  // waiting its 150 ms) brings a fresh verdict bar, out of band, for inputs the form no longer
  // holds: once everything has settled, the bar goes stale again.
  document.addEventListener("htmx:afterSettle", function () {
    var form = document.getElementById("calc") || document.getElementById("serve");
    if (form && (pending || refused(form))) staleBar(true);
  });
  function focusMessage() {
    var message = document.querySelector("[data-focus]");
    if (message && document.activeElement !== message) message.focus();
  }
  document.addEventListener("htmx:afterSettle", syncAll);
  document.addEventListener("htmx:afterSettle", focusMessage);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", focusMessage);
  else focusMessage();
  var KEPT = "sizer-kept-fields";
  var KEPT_FORMS = ["calc", "serve", "quote"];
  function fieldsOf(form) {
    var fields = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name || ["hidden", "submit", "button", "file"].indexOf(el.type) >= 0) return;
      fields[el.name] = el.type === "checkbox" ? (el.checked ? "1" : "") : el.value;
    });
    return fields;
  }
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[data-lang-switch]") : null;
    if (!link) return;
    var forms = {};
    KEPT_FORMS.forEach(function (id) {
      var form = document.getElementById(id);
      if (form) forms[id] = fieldsOf(form);
    });
    try {
      window.sessionStorage.setItem(KEPT, JSON.stringify({ path: window.location.pathname, forms: forms }));
    } catch (e) { /* no storage: the switch still keeps what the address holds */ }
  });
  function restoreKept() {
    var raw = null;
    try {
      raw = window.sessionStorage.getItem(KEPT);
      window.sessionStorage.removeItem(KEPT);
    } catch (e) { return; }
    if (!raw) return;
    var kept = JSON.parse(raw);
    if (!kept || kept.path !== window.location.pathname) return;
    Object.keys(kept.forms || {}).forEach(function (id) {
      var form = document.getElementById(id);
      if (!form) return;
      var changed = false;
      Object.keys(kept.forms[id]).forEach(function (name) {
        var el = form.elements.namedItem(name);
        if (!el || !el.type || el.type === "hidden") return;
        var value = kept.forms[id][name];
        if (el.type === "checkbox") {
          if (el.checked !== (value === "1")) { el.checked = value === "1"; changed = true; }
        } else if (el.value !== value) { el.value = value; changed = true; }
      });
      if (changed && SIZING_FORMS[id] && window.htmx && !checkForm(form)) window.htmx.trigger(form, "recalc");
    });
  }
  // after htmx has set up the page (its own DOMContentLoaded work), so "recalc" is heard
  function restoreLater() { window.setTimeout(restoreKept, 0); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", restoreLater);
  else restoreLater();
  document.addEventListener("htmx:pushedIntoHistory", followLocation);
  document.addEventListener("htmx:replacedInHistory", followLocation);
  window.addEventListener("popstate", followLocation);
})();
