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
