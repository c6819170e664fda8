/* The gdpconfig change form's what-if: posts the form being edited (its token in the body) to the what-if view and
   shows the answer under it, so that nothing typed is lost. Without script the button opens the answer in a new
   tab, which leaves the form as it is too. */
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var button = document.getElementById("what-if-run");
    var result = document.getElementById("what-if-result");
    if (!button || !result || !window.fetch) return;
    button.addEventListener("click", function (event) {
      event.preventDefault();
      var form = button.form;
      var body = new FormData(form);
      result.textContent = "Replaying…";
      button.disabled = true;
      fetch(button.formAction, {
        method: "POST",
        body: body,
        credentials: "same-origin",
        headers: { "X-Requested-With": "fetch" },
      })
        .then(function (response) {
          if (!response.ok) throw new Error("the server answered " + response.status);
          return response.text();
        })
        .then(function (html) {
          result.innerHTML = html;
        })
        .catch(function (error) {
          result.textContent = "The what-if failed: " + error.message;
        })
        .finally(function () {
          button.disabled = false;
        });
    });
  });
})();
