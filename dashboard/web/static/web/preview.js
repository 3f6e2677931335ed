// The link form's social preview: the card (web/_preview_card.html) drawn
// again from the preview's fields as they are typed in, with the image
// chosen to upload, else the one uploaded (unless it is to be removed),
// else the image URL. Without this script the card shows what was saved.
"use strict";

(() => {
  const card = document.getElementById("preview-card");
  if (!card) return;
  const field = (name) => document.getElementById(`id_preview_${name}`);
  const title = field("title");
  const description = field("description");
  const image = field("image_url");
  const file = field("image_file");
  const remove = field("image_remove");
  const shown = {
    title: document.getElementById("preview-card-title"),
    description: document.getElementById("preview-card-description"),
    image: document.getElementById("preview-card-image"),
  };
  let chosen = null; // an object URL of the file chosen, while there is one

  function imageSource() {
    const picked = file?.files?.[0];
    if (picked) {
      chosen = chosen || URL.createObjectURL(picked);
      return chosen;
    }
    if (card.dataset.uploaded && !remove?.checked) return card.dataset.uploaded;
    const url = image.value.trim();
    return /^https:\/\/[^/\s]+/.test(url) ? url : "";
  }

  function draw() {
    const source = imageSource();
    shown.title.textContent = title.value;
    shown.description.textContent = description.value;
    if (source && shown.image.getAttribute("src") !== source) shown.image.src = source;
    shown.image.hidden = !source;
    card.toggleAttribute("data-empty", !title.value && !description.value && !source);
  }

  for (const input of [title, description, image]) input.addEventListener("input", draw);
  remove?.addEventListener("change", draw);
  file?.addEventListener("change", () => {
    if (chosen) URL.revokeObjectURL(chosen);
    chosen = null;
    draw();
  });
  draw();
})();
