// The link form's social preview: the card (web/_preview_card.html) drawn
// again from the preview's fields as they are typed in. Without this
// script the card shows what was saved.
"use strict";

(() => {
  const card = document.getElementById("preview-card");
  if (!card) return;
  const field = (name) => document.getElementById(`id_preview_${name}`);
  const title = field("title");
  const description = field("description");
  const image = field("image_url");
  const shown = {
    title: document.getElementById("preview-card-title"),
    description: document.getElementById("preview-card-description"),
    image: document.getElementById("preview-card-image"),
  };

  function draw() {
    const url = image.value.trim();
    const imageShown = /^https:\/\/[^/\s]+/.test(url);
    shown.title.textContent = title.value;
    shown.description.textContent = description.value;
    if (imageShown && shown.image.getAttribute("src") !== url) shown.image.src = url;
    shown.image.hidden = !imageShown;
    card.toggleAttribute("data-empty", !title.value && !description.value && !url);
  }

  for (const input of [title, description, image]) input.addEventListener("input", draw);
  draw();
})();
