// Copy buttons for secrets shown once. The page works without this file: the secret is text.
"use strict";
document.addEventListener("click", (e) => {
  const button = e.target.closest("button[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(
    () => { button.textContent = "Copied"; },
    () => { button.textContent = "Copy failed: select the text"; },
  );
});

// A page that answers a form posted to another address (a new endpoint's page answers the
// form that added it) names its own address: shown in the address bar, a reload shows that
// page instead of posting the form again.
const here = document.querySelector("[data-page-url]");
if (here && window.location.pathname !== here.dataset.pageUrl) {
  history.replaceState(null, "", here.dataset.pageUrl);
}

// The credentials form shows the fields of the authentication chosen. Without this file every
// field shows, and the server reads only the chosen kind's.
const authType = document.getElementById("auth_type");
if (authType) {
  const show = () => {
    for (const set of document.querySelectorAll("fieldset[data-auth]")) {
      set.hidden = set.dataset.auth !== authType.value;
    }
  };
  authType.addEventListener("change", show);
  show();
}
