// The New item page: a Markdown file chosen in the import form is read here, into the text
// area and the name field, and posted as a form like the rest (the server reads no upload).
"use strict";
(function () {
  const file = document.getElementById("markdown-file");
  const text = document.getElementById("markdown-text");
  const name = document.getElementById("markdown-name");
  if (!file || !text || !name) {
    return;
  }
  file.addEventListener("change", function () {
    const chosen = file.files && file.files[0];
    if (!chosen) {
      return;
    }
    chosen.text().then(function (content) {
      text.value = content;
      name.value = chosen.name;
    });
  });
})();
