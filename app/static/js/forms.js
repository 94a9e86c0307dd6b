// Our own code, no dependencies; loaded with defer after htmx.
// 1. Keeps aria-invalid in step with the inline error messages that htmx swaps in out of band
//    (templates/components/forms.html): a field is invalid while one of its messages is
//    non-empty.
// 2. A value the browser refuses (batch 0, letters in a number) sends no htmx request, so the
//    calculator says so itself: the field's message (data-invalid, in the page's language),
//    aria-invalid, and the result marked out of date until the value is fixed (issue 18, 1).
// 3. The language links follow the address htmx pushed, so switching keeps the settings (3).
// 4. A message marked data-focus ("Saved", a conflict) takes the focus, which scrolls it into
//    view: a long form's answer is not left at its top while the user is at the bottom (10).
(function () {
  "use strict";
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
  function checkCalculator(form) {
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
    var result = document.getElementById("result");
    var note = document.getElementById("stale-note");
    if (result) result.classList.toggle("stale", bad);
    if (note) note.hidden = !bad;
    return bad;
  }
  function followLocation() {
    var here = window.location.pathname + window.location.search;
    document.querySelectorAll("a[data-lang-switch]").forEach(function (link) {
      link.setAttribute("href", "/lang/" + link.getAttribute("data-lang-switch") +
        "?next=" + encodeURIComponent(here));
    });
  }
  document.addEventListener("input", function (event) {
    var form = event.target.form;
    if (form && form.id === "calc") checkCalculator(form);
  });
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    sync(event.detail.target);
  });
  function focusMessage() {
    var message = document.querySelector("[data-focus]");
    if (message && document.activeElement !== message) message.focus();
  }
  document.addEventListener("htmx:afterSettle", syncAll);
  document.addEventListener("htmx:afterSettle", focusMessage);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", focusMessage);
  else focusMessage();
  document.addEventListener("htmx:pushedIntoHistory", followLocation);
  document.addEventListener("htmx:replacedInHistory", followLocation);
  window.addEventListener("popstate", followLocation);
})();
