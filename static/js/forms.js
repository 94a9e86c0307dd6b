// Keeps aria-invalid in step with the inline error messages that htmx swaps in out of band
// (templates/components/forms.html): a field is invalid exactly while its message is non-empty.
// Our own code, no dependencies; loaded with defer after htmx.
(function () {
  "use strict";
  function sync(message) {
    if (!message.id || message.id.indexOf("err-") !== 0) return;
    var field = document.querySelector('[aria-describedby~="' + message.id + '"]');
    if (!field) return;
    if (message.textContent.trim()) field.setAttribute("aria-invalid", "true");
    else field.removeAttribute("aria-invalid");
  }
  function syncAll() {
    document.querySelectorAll(".field-error").forEach(sync);
  }
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    sync(event.detail.target);
  });
  document.addEventListener("htmx:afterSettle", syncAll);
})();
